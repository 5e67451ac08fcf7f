"""The searches at scale: one database of 1,000,000 items (bench/search_history.py), built
once per session and shared by the tests here, which only read it."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from server.config import REPO_ROOT
from server.store.database import Database, connect, create_pool
from server.store.migrate import apply_migrations
from server.store.queries import Queries
from tests import pg
from tests.conftest import TestDatabase, closing

if str(REPO_ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "bench"))

# Re-exported for the tests of the history itself.
from search_history import RECENT_ITEMS as RECENT_ITEMS
from search_history import STALE_PENDING as STALE_PENDING
from search_history import build_history

# The history the plan tests run on; SEARCH_HISTORY_ITEMS lowers it for a quick local run.
SCALE_ITEMS = int(os.environ.get("SEARCH_HISTORY_ITEMS", "1000000"))


@pytest.fixture(scope="session")
async def scale_database(pg_server: str) -> AsyncIterator[TestDatabase]:
    """The history, built once. Its tests only read it, so they share one database rather
    than a clone each (a clone of a gigabyte costs more than the test)."""
    kept = os.environ.get("SEARCH_HISTORY_DATABASE")
    if kept:
        # A history built before (by this fixture or bench/search_history.py), kept: for
        # trying a change to a statement without waiting for the build again.
        yield TestDatabase(kept, pg.owner_dsn(pg_server, kept), pg.app_dsn(pg_server, kept))
        return
    name = await pg.create_empty_database(pg_server, "casework_search_scale")
    started = time.perf_counter()
    conn = await connect(pg.owner_dsn(pg_server, name))
    try:
        await apply_migrations(conn, pg.MIGRATIONS_DIR)
        await build_history(conn, SCALE_ITEMS)
    finally:
        await conn.close()
    # Shown with -s (or in the captured output of a failure): what the session paid for it.
    print(f"\nsearch history: {SCALE_ITEMS:,} items built in {time.perf_counter() - started:.1f} s")
    yield TestDatabase(name, pg.owner_dsn(pg_server, name), pg.app_dsn(pg_server, name))
    await pg.drop_database(pg_server, name)


class RecordingDatabase(Database):
    """The service's Database, noting each named statement it runs and its arguments: the
    plan tests EXPLAIN exactly what a search ran."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ran: list[tuple[str, dict[str, Any]]] = []

    async def fetch(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.ran.append((query.name, kwargs))
        return await super().fetch(query, *args, **kwargs)

    async def fetchrow(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.ran.append((query.name, kwargs))
        return await super().fetchrow(query, *args, **kwargs)


@pytest.fixture(scope="session")
async def scale_pool(scale_database: TestDatabase) -> AsyncIterator[asyncpg.Pool]:
    """The application role's pool on the history, as the service would read it."""
    pool = await create_pool(scale_database.app_dsn, min_size=1, max_size=2)
    yield pool
    await pool.close()


@pytest.fixture
def scale_db(scale_pool: asyncpg.Pool, queries: Queries) -> RecordingDatabase:
    return RecordingDatabase(scale_pool, queries)


@pytest.fixture
async def scale_owner(scale_database: TestDatabase) -> AsyncIterator[asyncpg.Connection]:
    async with closing(connect(scale_database.owner_dsn)) as conn:
        yield conn
