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
