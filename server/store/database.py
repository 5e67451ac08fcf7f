"""The pool, named-query execution, transactions and error mapping.

Every statement of the service runs here, so this is where each gets its trace span
(named by its query's name; nothing when tracing is off: observability/tracing.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from server.observability.tracing import statement_span
from server.store.errors import IntegrityViolation, refused_on_dead_connection
from server.store.queries import P, Queries, Query, QueryArguments

Row = Mapping[str, Any]

_INTEGRITY_ERRORS: dict[type[Exception], str] = {
    asyncpg.UniqueViolationError: "unique",
    asyncpg.ForeignKeyViolationError: "foreign_key",
    asyncpg.CheckViolationError: "check",
    asyncpg.NotNullViolationError: "not_null",
}


async def _init_connection(conn: asyncpg.Connection) -> None:
    for type_name in ("json", "jsonb"):
        await conn.set_type_codec(
            type_name,
            encoder=lambda value: json.dumps(value, separators=(",", ":")),
            decoder=json.loads,
            schema="pg_catalog",
        )


async def _reset_connection(conn: asyncpg.Connection) -> None:
    # The service keeps no session state on pooled connections (no SET, LISTEN or advisory
    # lock), so asyncpg's default reset query would add a round trip to every query for
    # nothing. An interrupted transaction is the one thing left to clean up.
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


async def create_pool(
    dsn: str,
    *,
    min_size: int = 2,
    max_size: int = 20,
    server_settings: dict[str, str] | None = None,
) -> asyncpg.Pool:
    pool: asyncpg.Pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        reset=_reset_connection,
        server_settings=server_settings,
    )
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    conn: asyncpg.Connection = await asyncpg.connect(dsn)
    await _init_connection(conn)
    return conn


# Sends a write's hint (the `notification` column the write queries return) elsewhere than
# NOTIFY, once the write is committed. See db/migrations/0003_event_hint_routing.sql.
HintPublisher = Callable[[str], Awaitable[None]]


class Database:
    """Runs named queries on a pool, or on one connection inside a transaction."""

    def __init__(
        self,
        executor: asyncpg.Pool | asyncpg.Connection,
        queries: Queries,
        *,
        publish_hints: HintPublisher | None = None,
    ) -> None:
        self._executor = executor
        self.queries = queries
        self._publish_hints = publish_hints
        # Inside a transaction: hints wait here for the commit, and die with a rollback.
        self._held_hints: list[str] | None = None

    async def fetch(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> list[Row]:
        sql, values = self._bind(query, args, kwargs)
        try:
            with statement_span(query.name):
                rows: list[Row] = await self._run(self._executor.fetch, sql, values)
        except tuple(_INTEGRITY_ERRORS) as error:
            raise _integrity_violation(error) from error
        await self._route_hints(rows)
        return rows

    async def fetchrow(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> Row | None:
        sql, values = self._bind(query, args, kwargs)
        try:
            with statement_span(query.name):
                row: Row | None = await self._run(self._executor.fetchrow, sql, values)
        except tuple(_INTEGRITY_ERRORS) as error:
            raise _integrity_violation(error) from error
        if row is not None:
            await self._route_hints([row])
        return row

    async def _run(self, method: Callable[..., Awaitable[Any]], sql: str, values: list[Any]) -> Any:
        # On the pool, a statement that asyncpg refused to start because the connection's
        # backend had just died (store/errors.py) never reached the server: it runs on
        # another connection. Each refusal closes its connection, so at most one per
        # pooled connection; on a held connection the refusal stands (an outage).
        retries = self._executor.get_max_size() if isinstance(self._executor, asyncpg.Pool) else 0
        while True:
            try:
                return await method(sql, *values)
            except asyncpg.exceptions.InternalClientError as error:
                if retries == 0 or not refused_on_dead_connection(error):
                    raise
                retries -= 1

    def _bind(
        self, query: Query[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[str, list[Any]]:
        statement = self.queries.statement(query.name)
        if args:
            # The generated signatures are keyword-only, so mypy already refuses this.
            raise QueryArguments(f"query {query.name!r} takes its parameters by name only")
        return statement.sql, statement.bind(kwargs)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Database]:
        if not isinstance(self._executor, asyncpg.Pool):
            async with self._executor.transaction():
                yield self
            return
        async with _begun(self._executor) as conn:
            inner = Database(conn, self.queries, publish_hints=self._publish_hints)
            inner._held_hints = []
            yield inner
        for hint in dict.fromkeys(inner._held_hints):
            await self._send_hint(hint)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Database]:
        """A read-only REPEATABLE READ transaction: every read inside it sees the database as
        it was at its first statement, whatever commits meanwhile (an audit pack, an export).
        On a connection, the connection must not be in a transaction already."""
        if isinstance(self._executor, asyncpg.Pool):
            async with _begun(self._executor, isolation="repeatable_read", readonly=True) as conn:
                yield Database(conn, self.queries)
            return
        async with self._executor.transaction(isolation="repeatable_read", readonly=True):
            yield self

    async def batches(
        self, query: Query[P], size: int, *args: P.args, **kwargs: P.kwargs
    ) -> AsyncIterator[list[Row]]:
        """The query's rows through a server-side cursor, `size` at a time, so that memory
        holds one batch however many rows there are. Inside a transaction (`snapshot`): a
        cursor lives as long as its transaction."""
        if isinstance(self._executor, asyncpg.Pool):
            raise TypeError("a cursor needs one connection: read through Database.snapshot()")
        sql, values = self._bind(query, args, kwargs)
        with statement_span(query.name):
            cursor = await self._executor.cursor(sql, *values)
        while True:
            with statement_span(query.name):
                rows: list[Row] = await cursor.fetch(size)
            if not rows:
                return
            yield rows

    async def _route_hints(self, rows: list[Row]) -> None:
        if self._publish_hints is None or not rows or "notification" not in rows[0]:
            return
        # A statement sends one hint, repeated on each row it returns.
        for hint in dict.fromkeys(row["notification"] for row in rows if row["notification"]):
            if self._held_hints is not None:
                self._held_hints.append(hint)
            else:
                await self._send_hint(hint)

    async def _send_hint(self, hint: str) -> None:
        assert self._publish_hints is not None
        await self._publish_hints(hint)


@asynccontextmanager
async def _begun(pool: asyncpg.Pool, **options: Any) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection in a transaction, committed at the end (rolled back on an error).
    A BEGIN that asyncpg refused because the connection's backend had just died (see
    store/errors.py) never reached the server: the next connection is tried instead."""
    retries = pool.get_max_size()
    while True:
        async with pool.acquire() as conn:
            transaction = conn.transaction(**options)
            try:
                await transaction.__aenter__()
            except asyncpg.exceptions.InternalClientError as error:
                if retries == 0 or not refused_on_dead_connection(error):
                    raise
                retries -= 1
                continue
            # As `async with transaction:` does, once it has begun.
            try:
                yield conn
            except BaseException as error:
                await transaction.__aexit__(type(error), error, error.__traceback__)
                raise
            await transaction.__aexit__(None, None, None)
            return


def _integrity_violation(error: Exception) -> IntegrityViolation:
    kind = next(name for cls, name in _INTEGRITY_ERRORS.items() if isinstance(error, cls))
    return IntegrityViolation(
        kind, getattr(error, "constraint_name", None), getattr(error, "detail", None) or str(error)
    )
