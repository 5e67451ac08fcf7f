"""Database errors the domain layer can act on, free of driver types."""

from __future__ import annotations

import asyncpg


class IntegrityViolation(Exception):
    """A constraint refused a write; `constraint` names it as in the migrations."""

    def __init__(self, kind: str, constraint: str | None, detail: str) -> None:
        super().__init__(f"{kind} on {constraint}: {detail}")
        self.kind = kind
        self.constraint = constraint
        self.detail = detail


class DatabaseUnavailable(Exception):
    pass


# SQLSTATE classes that mean "the server is not there right now", not "your query is wrong":
# 08 connection exceptions, 57P01-57P03 shutdown and start-up, 53 insufficient resources,
# 25006 a write on a server that has become read-only (a primary demoted under a failover
# manager, or fenced by an operator).
_UNAVAILABLE_SQLSTATE_PREFIXES = ("08", "57P", "53", "25006")


def is_unavailable(error: BaseException) -> bool:
    """True when `error`, or what caused it, says the database cannot be reached now.

    A client can do something about this one: try again in a moment. Everything else raised
    by a query is the server's fault.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DatabaseUnavailable | ConnectionError | TimeoutError):
            return True
        if isinstance(current, OSError):
            return True
        if isinstance(current, asyncpg.exceptions.ConnectionDoesNotExistError):
            return True
        if refused_on_dead_connection(current):
            return True
        # A multi-host DSN with target_session_attrs=read-write whose hosts all answered as
        # standbys: mid-failover, before one of them is promoted.
        if isinstance(current, asyncpg.exceptions.TargetServerAttributeNotMatched):
            return True
        if isinstance(current, asyncpg.InterfaceError) and (
            "closed" in str(current) or "closing" in str(current)
        ):
            return True
        sqlstate = getattr(current, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(_UNAVAILABLE_SQLSTATE_PREFIXES):
            return True
        current = current.__cause__ or current.__context__
    return False


def refused_on_dead_connection(error: BaseException) -> bool:
    """True when asyncpg refused to start a statement because the connection's backend had
    just died: the statement never left this process, and the connection is now closed.

    PostgreSQL ends a backend (pg_terminate_backend, a shutdown, a session timeout) with a
    FATAL ErrorResponse, then closes the socket. On a connection with no statement in flight
    (idle in the pool, or held between two statements of a transaction), asyncpg's
    `CoreProtocol._read_server_messages` (protocol/coreproto.pyx) has no case for a message
    in the idle state: it parks the protocol in PROTOCOL_ERROR_CONSUME (2), waiting for a
    ReadyForQuery that never comes, and the connection still counts as open until the event
    loop delivers the end of the stream (`connection_lost`), a callback later. A statement
    started in between fails in `CoreProtocol._set_state`, before anything is written, with
    "cannot switch to state 12; another operation (2) is in progress" (15: a simple query,
    11: a prepare), and `BaseProtocol._coreproto_error` aborts the connection. The wording
    says "another operation", but no second operation exists (asyncpg issue 1069; a real
    second user of a connection gets InterfaceError "another operation is in progress").
    """
    return isinstance(error, asyncpg.exceptions.InternalClientError) and str(error).startswith(
        "cannot switch to state"
    )
