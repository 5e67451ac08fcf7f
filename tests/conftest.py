from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

import asyncpg
import pytest
import redis.asyncio as aioredis

from server.domain.identity.tokens import create_token
from server.domain.model import Principal, Role, Verdict
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.store.database import Database, connect, create_pool
from server.store.queries import Queries
from tests import pg


@pytest.fixture(scope="session")
def pg_server() -> str:
    return pg.server_dsn()


@pytest.fixture(scope="session")
async def template_database(pg_server: str) -> AsyncIterator[str]:
    name = await pg.create_template(pg_server)
    yield name
    await pg.drop_database(pg_server, name)


@pytest.fixture(scope="session")
def queries() -> Queries:
    return Queries(pg.QUERIES_DIR)


@dataclass(frozen=True)
class TestDatabase:
    """One cloned database: DSNs for the owner and the application role."""

    __test__ = False

    name: str
    owner_dsn: str
    app_dsn: str


@pytest.fixture
async def test_database(pg_server: str, template_database: str) -> AsyncIterator[TestDatabase]:
    name = await pg.clone_database(pg_server, template_database)
    yield TestDatabase(name, pg.owner_dsn(pg_server, name), pg.app_dsn(pg_server, name))
    await pg.drop_database(pg_server, name)


@asynccontextmanager
async def pooled(dsn: str, queries: Queries, max_size: int) -> AsyncIterator[Database]:
    pool = await create_pool(dsn, min_size=1, max_size=max_size)
    try:
        yield Database(pool, queries)
    finally:
        await pool.close()


@asynccontextmanager
async def closing(opened: Awaitable[asyncpg.Connection]) -> AsyncIterator[asyncpg.Connection]:
    conn = await opened
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def db(test_database: TestDatabase, queries: Queries) -> AsyncIterator[Database]:
    """The database as the service sees it: the application role, through a pool."""
    async with pooled(test_database.app_dsn, queries, max_size=40) as database:
        yield database


@pytest.fixture
async def owner_db(test_database: TestDatabase, queries: Queries) -> AsyncIterator[Database]:
    async with pooled(test_database.owner_dsn, queries, max_size=4) as database:
        yield database


@pytest.fixture
async def owner_conn(test_database: TestDatabase) -> AsyncIterator[asyncpg.Connection]:
    """Raw SQL as the owner: for what the application may not do, like moving a lease back."""
    async with closing(connect(test_database.owner_dsn)) as conn:
        yield conn


@pytest.fixture
async def app_conn(test_database: TestDatabase) -> AsyncIterator[asyncpg.Connection]:
    """Raw SQL as the application role, with no pool or codecs between: for what PostgreSQL
    itself refuses that role."""
    async with closing(asyncpg.connect(test_database.app_dsn)) as conn:
        assert await conn.fetchval("SELECT current_user") == "casework_app"
        yield conn


async def one_row(
    conn: asyncpg.Connection, query: str, *args: object, missing: str
) -> asyncpg.Record:
    """The row `query` finds; fails saying `missing` when there is none."""
    row = await conn.fetchrow(query, *args)
    assert row is not None, missing
    return row


ADMIN = Principal("ada-admin", Role.ADMIN, frozenset())
INTEGRATION = Principal("kyc-provider", Role.INTEGRATION, frozenset())
APPROVER = Principal("ann-approver", Role.APPROVER, frozenset())
MANAGER = Principal("max-manager", Role.MANAGER, frozenset())


class MakeToken(Protocol):
    def __call__(self, user: str, role: Role, *queues: str) -> Awaitable[str]: ...


def token_maker(owner_db: Database) -> MakeToken:
    """`make(user, role, *queues)`: a bearer token, created through the domain as the owner."""

    async def make(user: str, role: Role, *queues: str) -> str:
        return await create_token(owner_db, user=user, role=role, queues=list(queues))

    return make


def reviewer(name: str, *queues: str) -> Principal:
    return Principal(name, Role.REVIEWER, frozenset(queues or ("kyc",)))


@pytest.fixture
async def kyc_queue(db: Database) -> str:
    """Queue `kyc` escalating to `kyc-senior`, with a small reason-code catalogue."""
    return await setup_kyc(db)


async def setup_kyc(db: Database) -> str:
    """What kyc_queue sets up, on any database (a test's private server, say)."""
    for settings in (
        QueueSettings("kyc-senior"),
        QueueSettings("kyc", lease_ttl_seconds=300, max_abandons=3, escalation_queue="kyc-senior"),
    ):
        result = await configure_queue(db, ADMIN, settings)
        assert not hasattr(result, "message"), result
    for queue in ("kyc", "kyc-senior"):
        for code, verdicts in (
            ("documents_ok", [Verdict.APPROVE]),
            ("name_mismatch", [Verdict.REJECT]),
            ("needs_senior", [Verdict.ESCALATE]),
        ):
            defined = await define_reason_code(
                db, ADMIN, queue=queue, code=code, label=code.replace("_", " "), verdicts=verdicts
            )
            assert not hasattr(defined, "message"), defined
    return "kyc"


# The machine's Redis, for the Redis transport's tests (each on a channel of its own).
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
async def redis_channel() -> str:
    """A channel of this test's own, on the machine's Redis (skipped where there is none)."""
    client = aioredis.from_url(REDIS_URL, socket_timeout=2)
    try:
        await client.ping()
    except Exception as error:
        pytest.skip(f"no Redis at {REDIS_URL} ({error}); set TEST_REDIS_URL")
    finally:
        await client.aclose()
    return f"casework-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def lean_path() -> bool:
    """Whether an in-process application takes the lean path for trusted documents (on, as
    deployed); tests/api/conftest.py runs its tests with it off too."""
    return True
