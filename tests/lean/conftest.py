"""A pair of applications over one seeded database (tests/lean/apps.py), shared by the
folder's modules: each restores what a mutation changed (snapshot.py)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import asyncpg
import pytest
from hypothesis import HealthCheck, Phase, settings

from server.config import Settings
from server.store.queries import Queries
from tests import pg
from tests.conftest import TestDatabase, pooled
from tests.lean.apps import Pair, bearer, call, graphql_body, paired_apps
from tests.lean.snapshot import Snapshot
from tests.lean.state import State, seed

# Bounded for CI; derandomized there (CI=true), so a failure there fails again here with
# CI=true. Generation only: examples are sent afterwards, on the test's event loop.
settings.register_profile(
    "lean-differential",
    deadline=None,
    database=None,
    derandomize=os.environ.get("CI", "").lower() == "true",
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="session")
async def lean_database(pg_server: str, template_database: str) -> AsyncIterator[TestDatabase]:
    name = await pg.clone_database(pg_server, template_database)
    yield TestDatabase(name, pg.owner_dsn(pg_server, name), pg.app_dsn(pg_server, name))
    await pg.drop_database(pg_server, name)


@pytest.fixture(scope="session")
async def pair(lean_database: TestDatabase) -> AsyncIterator[Pair]:
    async with paired_apps(lean_database.app_dsn, Settings.from_env()) as apps:
        yield apps


@pytest.fixture(scope="session")
async def snapshot(lean_database: TestDatabase) -> AsyncIterator[Snapshot]:
    conn = await asyncpg.connect(lean_database.owner_dsn)
    try:
        yield Snapshot(conn)
    finally:
        await conn.close()


async def seeded(database: TestDatabase, pair: Pair) -> State:
    """The seeded state (tests/lean/state.py), every token known to both applications."""
    async with pooled(database.owner_dsn, Queries(pg.QUERIES_DIR), max_size=2) as owner:
        state = await seed(pair.general, owner)
    # A token's first use records its authentication, whose id each application then
    # keeps cached: a snapshot must hold those rows, or a restore would orphan them.
    for app in (pair.lean, pair.general):
        for token in state.tokens.values():
            answer = await call(app, graphql_body("{ me { user } }", None), bearer(token))
            assert answer.status == 200, answer
    return state


@pytest.fixture(scope="session")
async def world(lean_database: TestDatabase, pair: Pair, snapshot: Snapshot) -> State:
    """The seeded state, its snapshot taken."""
    state = await seeded(lean_database, pair)
    await snapshot.take()
    return state


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Which documents answered what, for which variables (without xdist: its workers'
    counts stay in the workers)."""
    from tests.lean.outcomes import COVERAGE

    if not COVERAGE:
        return
    write = terminalreporter.write_line
    write(f"lean differential: {sum(COVERAGE.values())} pairs compared")
    documents = {document for document, _, _ in COVERAGE}
    outcomes = {outcome for _, outcome, _ in COVERAGE}
    classes = {kind for _, _, kind in COVERAGE}
    write(f"  {len(documents)} documents, {len(outcomes)} outcomes, {len(classes)} classes")
    for kind in sorted(classes):
        write(f"  {kind}: {sum(n for (_, _, k), n in COVERAGE.items() if k == kind)}")
    for found in sorted(outcomes):
        write(f"  {found}: {sum(n for (_, o, _), n in COVERAGE.items() if o == found)}")
