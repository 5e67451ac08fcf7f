from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright, expect

from server.config_documents import DocumentMode
from server.store.database import Database
from tests.conftest import TestDatabase, token_maker
from tests.console.helpers import (
    CHROMIUM_ARGS,
    SHOWN_WITHIN_MS,
    ConsoleTokens,
    WorkflowTokens,
    chromium_executable,
    console_tokens,
    trusted_documents_env,
    workflow_tokens,
)
from tests.live.helpers import Casework, serve_casework

# Every expectation waits for what the page shows, up to the same generous bound as the ones
# that name it: Playwright's 5 s default was met by a busy CI machine (the availability tests'
# clusters run beside these), where a subscription's first answer took 6 s.
expect.set_options(timeout=SHOWN_WITHIN_MS)


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One Chromium per worker; every test opens its own contexts (fresh profiles)."""
    executable = chromium_executable()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def tokens(owner_db: Database) -> ConsoleTokens:
    return await console_tokens(token_maker(owner_db))


@pytest.fixture
async def people(owner_db: Database) -> WorkflowTokens:
    """The people of the supplier-onboarding workflow."""
    return await workflow_tokens(token_maker(owner_db))


@pytest.fixture
async def casework(
    request: pytest.FixtureRequest, test_database: TestDatabase, tmp_path: Path
) -> AsyncIterator[Casework]:
    """`casework serve` in production mode (no --dev) on a fresh database. Parametrized
    indirectly with DocumentMode.TRUSTED: in CASEWORK_DOCUMENTS=trusted, with the tests' own
    API calls trusted by a manifest of their own, as an integration's would be."""
    mode = getattr(request, "param", DocumentMode.ANY)
    env = trusted_documents_env(tmp_path) if mode is DocumentMode.TRUSTED else {}
    async with serve_casework(test_database, **env) as served:
        yield served
