"""Multi-host DSNs (`postgresql://user@h1:p1,h2:p2/db?target_session_attrs=read-write`), as a
failover set-up gives them, are parsed wherever Casework reads a DSN; and what a failover
raises while no node takes writes counts as the database being unavailable."""

from __future__ import annotations

import asyncpg
import pytest

from server.runtime import describe_location
from server.store.dsn import database_name, hosts, target_session_attrs, with_database, with_user
from server.store.dsn import writable as writable_dsn
from server.store.errors import is_unavailable

MULTI = (
    "postgresql://owner:secret@10.0.0.1:5432,10.0.0.2:5433/casework?target_session_attrs=read-write"
)


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ("postgresql://u@db:5432/x", [("db", 5432)]),
        ("postgresql://u@db/x", [("db", None)]),
        (MULTI, [("10.0.0.1", 5432), ("10.0.0.2", 5433)]),
        ("postgresql://u@a,b:6000/x", [("a", None), ("b", 6000)]),
        ("postgresql://u@[::1]:5432,[fe80::2]:5433/x", [("::1", 5432), ("fe80::2", 5433)]),
        ("postgresql:///x?host=/run/postgresql", [("/run/postgresql", None)]),
        ("postgresql:///x?host=a,b&port=1,2", [("a", 1), ("b", 2)]),
        ("postgresql:///x", []),
    ],
)
def test_hosts_of_one_or_several(dsn: str, expected: list[tuple[str, int | None]]) -> None:
    assert hosts(dsn) == expected


def test_the_role_and_database_change_and_every_host_stays() -> None:
    app = with_user(MULTI, "casework_app")
    assert app == (
        "postgresql://casework_app@10.0.0.1:5432,10.0.0.2:5433/casework"
        "?target_session_attrs=read-write"
    )
    assert with_user(MULTI, "a", "b").startswith("postgresql://a:b@10.0.0.1:5432,10.0.0.2:5433/")
    assert hosts(with_database(MULTI, "other")) == hosts(MULTI)
    assert database_name(with_database(MULTI, "other")) == "other"


def test_messages_name_every_host_and_never_the_password() -> None:
    assert describe_location(MULTI) == "10.0.0.1:5432,10.0.0.2:5433/casework"
    assert describe_location("postgresql://u@[::1]:5432/x") == "[::1]:5432/x"
    assert describe_location("postgresql://u@db/x") == "db/x"
    assert describe_location("postgresql:///x?host=/run/postgresql") == "/run/postgresql/x"
    assert describe_location("postgresql:///x") == "localhost/x"


def test_several_hosts_without_a_choice_ask_for_the_writable_one() -> None:
    bare = "postgresql://u@a:1,b:2/x"
    assert target_session_attrs(writable_dsn(bare)) == "read-write"
    assert writable_dsn(bare + "?sslmode=disable") == (
        "postgresql://u@a:1,b:2/x?sslmode=disable&target_session_attrs=read-write"
    )
    # An explicit choice, or a single host, is left as it is.
    assert writable_dsn(bare + "?target_session_attrs=any") == bare + "?target_session_attrs=any"
    assert writable_dsn("postgresql://u@a:1/x") == "postgresql://u@a:1/x"


def test_mid_failover_errors_are_unavailable() -> None:
    # Every host answered as a standby: none promoted yet.
    assert is_unavailable(asyncpg.exceptions.TargetServerAttributeNotMatched("none match"))
    # A write reached a server that turned read-only.
    read_only = asyncpg.exceptions.ReadOnlySQLTransactionError("read-only")
    assert read_only.sqlstate == "25006"
    assert is_unavailable(read_only)
    # Other invalid transaction states stay the server's fault.
    assert not is_unavailable(asyncpg.exceptions.InFailedSQLTransactionError("aborted"))
