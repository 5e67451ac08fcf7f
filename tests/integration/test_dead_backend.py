"""A connection whose backend was just terminated, used before asyncpg has seen the end of
its stream: the window behind "InternalClientError: cannot switch to state 12; another
operation (2) is in progress" (server/store/errors.py, refused_on_dead_connection).

PostgreSQL ends a terminated backend with a FATAL ErrorResponse and then closes the socket.
Each test here waits until asyncpg has read that message (a watch on the connection's
transport: the signal, not a nap) and uses the connection at once, before the loop has
delivered the end of the stream. No connection is ever used by two operations here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import pytest

from server.store import sql
from server.store.database import Database
from server.store.errors import is_unavailable, refused_on_dead_connection
from server.store.queries import Queries
from tests.conftest import TestDatabase, closing

WAIT_SECONDS = 10


class _Watch(asyncio.Protocol):
    """Stands between a transport and asyncpg's protocol; says when bytes came."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.received = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)
        self.received.set()

    def eof_received(self) -> bool | None:
        handler = getattr(self.inner, "eof_received", None)
        return handler() if handler is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


@asynccontextmanager
async def fatal_read(conn: asyncpg.Connection, owner: asyncpg.Connection) -> AsyncIterator[None]:
    """Terminates `conn`'s backend; enters once asyncpg has read the FATAL message and while
    the connection still counts as open (asserted: else the test proves nothing). The block
    must start with the statement under test: any other await lets the end of the stream in."""
    raw = getattr(conn, "_con", conn)  # a pool's proxy, or the connection itself
    transport = raw._transport
    watch = _Watch(transport.get_protocol())
    transport.set_protocol(watch)
    # Sent from a task of its own: this task waits on the watch alone, so that it is woken
    # by data_received's callback and runs before the loop reads the end of the stream
    # (asyncio.timeout, not wait_for, whose inner task would add a turn of the loop).
    terminating = asyncio.create_task(
        owner.fetchval("SELECT pg_terminate_backend($1)", raw.get_server_pid())
    )
    async with asyncio.timeout(WAIT_SECONDS):
        await watch.received.wait()
    try:
        assert not raw.is_closed(), "the end of the stream came first: not the window under test"
        yield
    finally:
        assert await terminating is True


@asynccontextmanager
async def one_connection_pool(dsn: str) -> AsyncIterator[asyncpg.Pool]:
    # create_pool's own settings (codecs, reset) except the size: one connection, so the
    # statement under test gets the one whose backend died.
    from server.store.database import create_pool

    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        await pool.fetchval("SELECT 1")
        yield pool
    finally:
        await pool.close()


async def idle_connection(pool: asyncpg.Pool) -> asyncpg.Connection:
    """The pool's one connection, back in the pool (idle) when this returns."""
    async with pool.acquire() as conn:
        held: asyncpg.Connection = conn._con
    return held


async def test_asyncpg_alone_refuses_a_statement_in_the_window(
    test_database: TestDatabase,
) -> None:
    """The cause, without Casework's code: a pooled connection, idle, no second user."""
    async with (
        closing(asyncpg.connect(test_database.owner_dsn)) as owner,
        one_connection_pool(test_database.app_dsn) as pool,
    ):
        async with fatal_read(await idle_connection(pool), owner):
            with pytest.raises(asyncpg.exceptions.InternalClientError) as raised:
                await pool.fetchval("SELECT 1")
        refused = "cannot switch to state 12; another operation (2) is in progress"
        assert str(raised.value) == refused
        assert refused_on_dead_connection(raised.value)
        # An outage, as a client is told (UNAVAILABLE), not the server's fault (INTERNAL).
        assert is_unavailable(raised.value)
        # asyncpg closed the connection; the pool's next one is new and works.
        assert await pool.fetchval("SELECT 2") == 2


async def test_a_pooled_statement_refused_in_the_window_runs_on_a_new_connection(
    test_database: TestDatabase, queries: Queries
) -> None:
    async with (
        closing(asyncpg.connect(test_database.owner_dsn)) as owner,
        one_connection_pool(test_database.app_dsn) as pool,
    ):
        db = Database(pool, queries)
        dead = await idle_connection(pool)
        async with fatal_read(dead, owner):
            assert await db.fetchrow(sql.health.HEALTH_CHECK) is not None
        async with pool.acquire() as conn:
            assert conn._con is not dead


async def test_a_transaction_whose_begin_is_refused_in_the_window_begins_on_a_new_connection(
    test_database: TestDatabase, queries: Queries
) -> None:
    async with (
        closing(asyncpg.connect(test_database.owner_dsn)) as owner,
        one_connection_pool(test_database.app_dsn) as pool,
    ):
        db = Database(pool, queries)
        async with fatal_read(await idle_connection(pool), owner), db.transaction() as tx:
            assert await tx.fetchrow(sql.health.HEALTH_CHECK) is not None
        async with fatal_read(await idle_connection(pool), owner), db.snapshot() as snapshot:
            assert await snapshot.fetchrow(sql.health.HEALTH_CHECK) is not None


async def test_a_transaction_whose_backend_dies_between_statements_is_an_outage(
    test_database: TestDatabase, queries: Queries
) -> None:
    """What ran in it is gone with the backend: nothing to retry here, the client is told
    to try again (UNAVAILABLE), and the pool's next connection works."""
    async with (
        closing(asyncpg.connect(test_database.owner_dsn)) as owner,
        one_connection_pool(test_database.app_dsn) as pool,
    ):
        db = Database(pool, queries)

        async def died_between_statements() -> None:
            async with db.transaction() as tx:
                assert await tx.fetchrow(sql.health.HEALTH_CHECK) is not None
                async with fatal_read(tx._executor, owner):
                    await tx.fetchrow(sql.health.HEALTH_CHECK)

        with pytest.raises(asyncpg.InterfaceError) as raised:
            await died_between_statements()
        assert is_unavailable(raised.value), repr(raised.value)
        assert await db.fetchrow(sql.health.HEALTH_CHECK) is not None
