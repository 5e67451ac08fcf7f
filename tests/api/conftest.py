from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.app import create_app
from server.config import Settings
from server.domain.model import Role
from server.store.database import Database
from tests.api.trusted_documents import write_manifest
from tests.conftest import TestDatabase, token_maker

TRUSTED_DOCUMENTS = "CASEWORK_TRUSTED_DOCUMENTS"

GraphQL = Callable[..., Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tokens:
    admin: str
    integration: str
    reviewer: str
    other_reviewer: str
    outsider: str
    approver: str
    manager: str


@pytest.fixture
async def tokens(owner_db: Database) -> Tokens:
    make = token_maker(owner_db)

    return Tokens(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        reviewer=await make("rita", Role.REVIEWER, "kyc", "kyc-senior"),
        other_reviewer=await make("rob", Role.REVIEWER, "kyc"),
        outsider=await make("olga", Role.REVIEWER, "payouts"),
        approver=await make("ann", Role.APPROVER),
        manager=await make("max", Role.MANAGER),
    )


@asynccontextmanager
async def in_process_client(
    test_database: TestDatabase,
    *,
    dev: bool,
    settings: Settings | None = None,
    run_worker: bool = False,
) -> AsyncIterator[httpx.AsyncClient]:
    """The real ASGI app, lifespan included, served in-process (settings from the
    environment unless given; run_worker: with the apply worker, as `casework serve`)."""
    app = create_app(
        test_database.app_dsn,
        dev=dev,
        settings=settings or Settings.from_env(),
        run_worker=run_worker,
    )
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://casework") as c,
    ):
        yield c


@pytest.fixture(scope="session", autouse=True)
def trusted_test_documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The documents the API tests send are trusted by every application they start, in
    this process or as `casework serve` (tests/api/trusted_documents.py)."""
    manifest = write_manifest(tmp_path_factory.mktemp("documents") / "api-tests.json")
    before = os.environ.get(TRUSTED_DOCUMENTS)
    os.environ[TRUSTED_DOCUMENTS] = str(manifest)
    yield manifest
    if before is None:
        del os.environ[TRUSTED_DOCUMENTS]
    else:
        os.environ[TRUSTED_DOCUMENTS] = before


# The API tests on the in-process application run both ways: the lean path on (the
# default), and off (CASEWORK_LEAN_PATH=0, the kill switch). Those that start `casework
# serve` processes, or build an application of their own, run once, lean path on: they are
# the slow half of the suite, and the lean path's behaviours are all reached in-process
# (test_lean_path.py compares the two answers byte for byte). Other folders borrow `client`
# with the lean path on: their documents are not in this folder's manifest, so the lean
# path would not take them, and running them twice would only cost time (the `lean_path`
# fixture, True, is in tests/conftest.py).
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lean_path" in metafunc.fixturenames:
        metafunc.parametrize("lean_path", [True, False], ids=["lean", "general"])


@pytest.fixture
async def client(test_database: TestDatabase, lean_path: bool) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings.from_env()
    settings = replace(settings, documents=replace(settings.documents, lean_path=lean_path))
    async with in_process_client(test_database, dev=False, settings=settings) as c:
        yield c


def graphql_caller(client: httpx.AsyncClient) -> GraphQL:
    """POSTs an operation with a bearer token; returns the JSON body of a 200."""

    async def run(token: str, query: str, **variables: Any) -> dict[str, Any]:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    return run


@pytest.fixture
def gql(client: httpx.AsyncClient) -> GraphQL:
    """POSTs an operation with a bearer token; returns the JSON body of a 200."""
    return graphql_caller(client)


SETUP_QUEUES = """
mutation {
  senior: configureQueue(input: {name: "kyc-senior"}) { __typename }
  kyc: configureQueue(input: {name: "kyc", escalationQueue: "kyc-senior"}) { __typename }
  ok: defineReasonCode(input: {queue: "kyc", code: "documents_ok", label: "Documents match",
                               verdicts: [APPROVE]}) { __typename }
  bad: defineReasonCode(input: {queue: "kyc", code: "name_mismatch", label: "Name mismatch",
                                verdicts: [REJECT]}) { __typename }
  senior_ok: defineReasonCode(input: {queue: "kyc-senior", code: "documents_ok",
                                      label: "Documents match", verdicts: [APPROVE]}) { __typename }
}
"""


@pytest.fixture
async def kyc(gql: GraphQL, tokens: Tokens) -> str:
    body = await gql(tokens.admin, SETUP_QUEUES)
    typenames = {result["__typename"] for result in body["data"].values()}
    assert typenames == {"QueueConfigured", "ReasonCodeDefined"}, body
    return "kyc"
