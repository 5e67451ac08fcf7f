"""`casework_hint` (0007) writes what `parse_event` reads: key by key, in a migrated database,
called as the application role."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import asyncpg
import pytest

from server.events.channels import DATABASE_KINDS, Event, EventKind, parse_event
from server.store.database import connect
from server.store.queries import translate
from tests.conftest import TestDatabase


@dataclass(frozen=True)
class Key:
    """One optional argument: what the payload carries for it, and what the parser makes of it."""

    parameter: str
    sql_type: str
    value: Any
    wire: dict[str, Any]
    # The Event fields it sets; nothing for a key this process does not read.
    event: dict[str, Any]


KEYS = [
    Key("item_id", "bigint", 42, {"i": 42}, {"item_id": 42}),
    Key("decision_id", "bigint", 17, {"d": 17}, {"decision_id": 17}),
    Key("from_queue", "text", "kyc", {"from": "kyc"}, {"from_queue": "kyc"}),
    Key("created_count", "bigint", 3, {"n": 3}, {}),
    Key("evidence_changed", "bigint[]", [5, 6], {"e": [5, 6]}, {"evidence_changed": (5, 6)}),
    Key("evidence_cut_short", "boolean", True, {"more": True}, {"more": True}),
    Key("evidence_cut_short", "boolean", False, {"more": False}, {"more": False}),
    Key("workflow", "text", "supplier", {"w": "supplier"}, {"workflows": ("supplier",)}),
    Key("exception_id", "text", "exc_01", {"x": "exc_01"}, {}),
    Key("workflows", "text[]", ["a", "b"], {"ws": ["a", "b"]}, {"workflows": ("a", "b")}),
    Key("other_queues", "text[]", ["b", "c"], {"qs": ["b", "c"]}, {"other_queues": ("b", "c")}),
    Key("item_ids", "bigint[]", [7, 8], {"is": [7, 8]}, {"item_ids": (7, 8)}),
    Key("items_cut_short", "boolean", True, {"more": True}, {"more": True}),
]


@pytest.fixture
async def app_conn(test_database: TestDatabase) -> AsyncIterator[asyncpg.Connection]:
    conn = await connect(test_database.app_dsn)
    try:
        yield conn
    finally:
        await conn.close()


async def hint(conn: asyncpg.Connection, kind: str, queue: str, *keys: Key) -> str:
    named = "".join(f", {k.parameter} => ${n}::{k.sql_type}" for n, k in enumerate(keys, 3))
    payload: str = await conn.fetchval(
        f"SELECT casework_hint(kind => $1, queue => $2{named})",
        kind,
        queue,
        *(k.value for k in keys),
    )
    return payload


@pytest.mark.parametrize("kind", sorted(DATABASE_KINDS))
async def test_kind_and_queue_alone(app_conn: asyncpg.Connection, kind: EventKind) -> None:
    payload = await hint(app_conn, kind, "kyc")

    # NULL arguments leave their keys out; the parser reads them as absent.
    assert json.loads(payload) == {"k": kind.value, "q": "kyc"}
    assert parse_event(payload) == Event(kind=kind, queue="kyc")


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k.parameter}={k.value}")
async def test_each_key(app_conn: asyncpg.Connection, key: Key) -> None:
    payload = await hint(app_conn, EventKind.EXCEPTION, "kyc", key)

    assert json.loads(payload) == {"k": "exception", "q": "kyc", **key.wire}
    assert parse_event(payload) == replace(
        Event(kind=EventKind.EXCEPTION, queue="kyc"), **key.event
    )


async def test_every_key_together(app_conn: asyncpg.Connection) -> None:
    keys = [k for k in KEYS if k.value is not False]
    payload = await hint(app_conn, EventKind.ENQUEUED, "kyc", *keys)

    wire: dict[str, Any] = {"k": "enqueued", "q": "kyc"}
    for key in keys:
        wire |= key.wire
    assert json.loads(payload) == wire
    # `ws` wins over `w` when both come.
    fields = {name: value for key in keys for name, value in key.event.items()}
    fields["workflows"] = ("a", "b")
    assert parse_event(payload) == Event(kind=EventKind.ENQUEUED, queue="kyc", **fields)


async def test_the_table_covers_every_argument(app_conn: asyncpg.Connection) -> None:
    arguments = await app_conn.fetchval(
        "SELECT proargnames FROM pg_proc WHERE proname = 'casework_hint'"
    )

    assert arguments[:2] == ["kind", "queue"]
    assert set(arguments[2:]) == {key.parameter for key in KEYS}


async def test_a_hint_without_a_queue_is_not_trusted(app_conn: asyncpg.Connection) -> None:
    payload: str = await app_conn.fetchval("SELECT casework_hint(kind => 'claimed', queue => NULL)")

    assert parse_event(payload) is None


async def test_only_the_application_role_may_call_it(
    test_database: TestDatabase,
) -> None:
    # Granted to casework_app only, as casework_notify is: PUBLIC may not call it.
    conn = await connect(test_database.owner_dsn)
    try:
        granted = await conn.fetch(
            "SELECT grantee::regrole::text AS role, privilege_type FROM pg_proc,"
            " aclexplode(proacl) WHERE proname = 'casework_hint' AND grantee <> proowner"
        )
    finally:
        await conn.close()

    assert [(row["role"], row["privilege_type"]) for row in granted] == [
        ("casework_app", "EXECUTE")
    ]


def test_named_arguments_survive_the_query_loader() -> None:
    text = "SELECT casework_hint(kind => 'claimed', queue => :queue::text, item_id => :id)"

    assert translate(text) == (
        "SELECT casework_hint(kind => 'claimed', queue => $1::text, item_id => $2)",
        ("queue", "id"),
    )
