"""The pool, named-query execution, transactions and error mapping.

Every statement of the service runs here, so this is where each gets its trace span
(named by its query's name; nothing when tracing is off: observability/tracing.py).
"""

from __future__ import annotations

import json
import re
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


# Behind a pooler in transaction mode (CASEWORK_DATABASE_POOLER=transaction) a connection
# is a client of the pooler, and each transaction may run on another server session: a
# named prepared statement made on one is missing on the next (or already there, made by
# another client). Without a statement cache asyncpg prepares only the unnamed statement
# and parses it again with each execution, in the execution's own round trip.
POOLED_STATEMENT_CACHE_SIZE = 0
_DEFAULT_STATEMENT_CACHE_SIZE = 100  # asyncpg's


def _statement_cache_size(transaction_pooler: bool) -> int:
    return POOLED_STATEMENT_CACHE_SIZE if transaction_pooler else _DEFAULT_STATEMENT_CACHE_SIZE


async def create_pool(
    dsn: str,
    *,
    min_size: int = 2,
    max_size: int = 20,
    server_settings: dict[str, str] | None = None,
    connect_timeout: float = 60,
    command_timeout: float | None = None,
    transaction_pooler: bool = False,
) -> asyncpg.Pool:
    """connect_timeout: to connect; command_timeout: a statement's limit (none by default)."""
    pool: asyncpg.Pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        reset=_reset_connection,
        server_settings=server_settings,
        timeout=connect_timeout,
        command_timeout=command_timeout,
        statement_cache_size=_statement_cache_size(transaction_pooler),
    )
    return pool


async def connect(
    dsn: str, *, connect_timeout: float = 60, transaction_pooler: bool = False
) -> asyncpg.Connection:
    conn: asyncpg.Connection = await asyncpg.connect(
        dsn,
        timeout=connect_timeout,
        statement_cache_size=_statement_cache_size(transaction_pooler),
    )
    await _init_connection(conn)
    return conn


# Where a write's hint goes (db/migrations/0003_event_hint_routing.sql): with this setting
# `casework.events = 'app'` a write sends no NOTIFY and the service publishes its hint. On a
# direct connection it is a session setting, given at connect; a pooler in transaction mode
# refuses it at connect and could not keep it on a session, so there it is set for each
# transaction that writes a hint (Database's `hints_setting_per_transaction`).
APP_HINTS_SETTINGS = {"casework.events": "app"}
_APP_HINTS_IN_TRANSACTION = "SELECT set_config('casework.events', 'app', true)"
# A statement that may send a hint calls casework_hint (db/migrations/0007, 0016) or
# casework_notify (0003) itself; no trigger does.
_SENDS_HINT = re.compile(r"\bcasework_(?:hint|notify)\s*\(")


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
        hints_setting_per_transaction: bool = False,
    ) -> None:
        self._executor = executor
        self.queries = queries
        self._publish_hints = publish_hints
        # Behind a transaction pooler with published hints: APP_HINTS_SETTINGS is set in
        # each transaction that may send a hint, as it cannot be set on the session.
        self._hints_per_transaction = hints_setting_per_transaction
        # Inside a transaction: hints wait here for the commit, and die with a rollback.
        self._held_hints: list[str] | None = None

    async def fetch(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> list[Row]:
        sql, values = self._bind(query, args, kwargs)
        try:
            with statement_span(query.name):
                if self._hints_per_transaction and _SENDS_HINT.search(sql):
                    rows: list[Row] = await self._with_app_hints("fetch", sql, values)
                else:
                    rows = await self._run(self._executor.fetch, sql, values)
        except tuple(_INTEGRITY_ERRORS) as error:
            raise _integrity_violation(error) from error
        await self._route_hints(rows)
        return rows

    async def fetchrow(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> Row | None:
        sql, values = self._bind(query, args, kwargs)
        try:
            with statement_span(query.name):
                if self._hints_per_transaction and _SENDS_HINT.search(sql):
                    row: Row | None = await self._with_app_hints("fetchrow", sql, values)
                else:
                    row = await self._run(self._executor.fetchrow, sql, values)
        except tuple(_INTEGRITY_ERRORS) as error:
            raise _integrity_violation(error) from error
        if row is not None:
            await self._route_hints([row])
        return row

    async def _with_app_hints(self, method: str, sql: str, values: list[Any]) -> Any:
        """Runs a statement that may send a hint with APP_HINTS_SETTINGS set for its
        transaction: its own, or the one it is part of (set_config(..., true) lasts until
        that transaction ends, and a pooler keeps a transaction on one server session)."""
        if isinstance(self._executor, asyncpg.Pool):
            async with _begun(self._executor) as conn:
                await conn.execute(_APP_HINTS_IN_TRANSACTION)
                return await getattr(conn, method)(sql, *values)
        return await _run_with_app_hints(self._executor, method, sql, values)

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
            inner = Database(
                conn,
                self.queries,
                publish_hints=self._publish_hints,
                hints_setting_per_transaction=self._hints_per_transaction,
            )
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


async def _run_with_app_hints(
    conn: asyncpg.Connection, method: str, sql: str, values: list[Any]
) -> Any:
    if conn.is_in_transaction():
        await conn.execute(_APP_HINTS_IN_TRANSACTION)
        return await getattr(conn, method)(sql, *values)
    async with conn.transaction():
        await conn.execute(_APP_HINTS_IN_TRANSACTION)
        return await getattr(conn, method)(sql, *values)


async def open_service_database(
    dsn: str,
    queries: Queries,
    *,
    min_size: int,
    max_size: int,
    publish_hints: HintPublisher | None,
    transaction_pooler: bool,
) -> tuple[asyncpg.Pool, Database]:
    """The pool and Database of a serving process or a standalone worker. With published
    hints (the Redis transport) writes return their hint instead of sending a NOTIFY
    (migration 0003): a session setting given at connect, or, behind a transaction pooler,
    one set in each transaction that sends a hint."""
    pool = await create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        server_settings=APP_HINTS_SETTINGS if publish_hints and not transaction_pooler else None,
        transaction_pooler=transaction_pooler,
    )
    database = Database(
        pool,
        queries,
        publish_hints=publish_hints,
        hints_setting_per_transaction=publish_hints is not None and transaction_pooler,
    )
    return pool, database


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
