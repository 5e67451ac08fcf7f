"""What the erasure, hold, retention and replay tests share: compliance officers, a ledger,
policy items of a subject, retention classes, decisions, and snapshots of tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from server.domain.model import Item, Principal, Role
from server.domain.privacy.keys import Keyring
from server.domain.privacy.sealing import open_sealed
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.conftest import INTEGRATION, reviewer
from tests.integration.helpers import claim, decide

CORA = Principal("cora-compliance", Role.COMPLIANCE, frozenset())
CARL = Principal("carl-compliance", Role.COMPLIANCE, frozenset())
REVIEWER = reviewer("rita", "kyc")

AML_BASIS = "EU AMLR Art. 77: five years after the end of the business relationship"
FIVE_YEARS = 5 * 365 * 24 * 3600


CANARY_NAME = "Zebediah Canarywood"
CANARY_PASSPORT = "P-CANARY-440192"


def canary_payload(n: int) -> dict[str, Any]:
    """An applicant (as tests/privacy/test_intake.py's) whose name and passport are
    recognisable everywhere they might leak."""
    return {
        "applicant": {
            "name": f"{CANARY_NAME} {n:03d}",
            "date_of_birth": f"1961-04-{10 + n % 18:02d}",
            "passport_number": f"{CANARY_PASSPORT}-{n:03d}",
        },
        "document": {"id": f"doc-{n}", "sha256": "ab" * 32},
        "risk_score": 71,
    }


def canaries(n: int) -> list[str]:
    payload = canary_payload(n)["applicant"]
    return [payload["name"], payload["passport_number"]]


async def enqueue(
    db: Database, keyring: Keyring, key: str, subject: str, n: int = 0, queue: str = "kyc"
) -> Item:
    result = await enqueue_items(
        db, INTEGRATION, queue, [NewItem(key, canary_payload(n), subject_ref=subject)], keyring
    )
    assert isinstance(result, list), result
    return result[0].item


async def decide_next(db: Database, queue: str = "kyc") -> int:
    """Claims the next item of the queue and approves it: the decision's id."""
    held = await claim(db, REVIEWER, queue)
    return (await decide(db, REVIEWER, held)).id


async def add_retention_class(
    conn: asyncpg.Connection,
    name: str,
    keep_seconds: int,
    anchor: str,
    basis: str = AML_BASIS,
) -> None:
    await conn.execute(
        "INSERT INTO retention_classes (name, keep_seconds, anchor, basis, created_by) "
        "VALUES ($1, $2, $3, $4, 'ada-admin')",
        name,
        keep_seconds,
        anchor,
        basis,
    )


async def table_text(conn: asyncpg.Connection, table: str, key: str) -> list[str]:
    """Every row of a table, as PostgreSQL prints it: byte for byte comparable."""
    rows = await conn.fetch(f"SELECT t::text AS row FROM {table} AS t ORDER BY {key}")
    return [r["row"] for r in rows]


# Everything an erasure may change, to show that a deferred or held one changed nothing
# (privacy_log and erasure_outcomes record the refusal itself and are compared apart).
ERASABLE_TABLES = {
    "item_fields": "item_id, evidence_hash, path",
    "sealed_notes": "event_id",
    "privacy_subject_keys": "subject_ref, key_version",
    "review_items": "id",
    "review_decisions": "id",
    "item_events": "id",
}


async def snapshot(conn: asyncpg.Connection) -> dict[str, list[str]]:
    return {t: await table_text(conn, t, key) for t, key in ERASABLE_TABLES.items()}


def ago(now: datetime, **delta: float) -> datetime:
    return now - timedelta(**delta)


def utcnow() -> datetime:
    return datetime.now(UTC)


async def fields_of(conn: asyncpg.Connection, item_id: int) -> dict[str, asyncpg.Record]:
    rows = await conn.fetch("SELECT * FROM item_fields WHERE item_id = $1", item_id)
    return {r["path"]: r for r in rows}


async def log_actions(conn: asyncpg.Connection) -> list[str]:
    return [r["action"] for r in await conn.fetch("SELECT action FROM privacy_log ORDER BY id")]


# Every column of every table in the schema, with how to search it: bytea by its bytes, any
# other type by its text form (text, varchar, jsonb, arrays, ...).
COLUMNS = """
SELECT c.relname AS table_name, a.attname AS column_name,
       coalesce(nullif(t.typbasetype, 0), t.oid) = 'bytea'::regtype AS is_bytea
FROM pg_attribute AS a
JOIN pg_class AS c ON c.oid = a.attrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_type AS t ON t.oid = a.atttypid
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY 1, 2
"""


async def columns_holding(conn: asyncpg.Connection, needles: list[str]) -> list[str]:
    """`table.column: needle` for every needle found in any column of any table."""
    found: list[str] = []
    columns = await conn.fetch(COLUMNS)
    assert len(columns) > 100, "the catalogue lists the whole schema"
    for column in columns:
        name = f'"{column["table_name"]}"."{column["column_name"]}"'
        if column["is_bytea"]:
            test = f"position(convert_to(needle, 'UTF8') in {name}) > 0"
        else:
            test = f"position(needle in {name}::text) > 0"
        hits = await conn.fetch(
            f'SELECT DISTINCT needle FROM "{column["table_name"]}", unnest($1::text[]) AS needle '
            f"WHERE {test}",
            needles,
        )
        found.extend(f"{column['table_name']}.{column['column_name']}: {h['needle']}" for h in hits)
    return found


async def readable_values(conn: asyncpg.Connection, keyring: Keyring) -> list[str]:
    """Every sealed value the database and the key file can still open, as JSON text: what
    someone holding a copy of both could read."""
    rows = await conn.fetch(
        "SELECT f.item_id, f.path, f.subject_ref, f.key_version, f.nonce, f.ciphertext, "
        "       k.kek_id, k.wrapped_key "
        "FROM item_fields AS f JOIN privacy_subject_keys AS k "
        "  ON k.subject_ref = f.subject_ref AND k.key_version = f.key_version "
        "WHERE f.ciphertext IS NOT NULL AND k.wrapped_key IS NOT NULL"
    )
    values = []
    for r in rows:
        key = await keyring.provider.unwrap(r["kek_id"], r["subject_ref"], bytes(r["wrapped_key"]))
        value = open_sealed(
            key,
            item_id=r["item_id"],
            path=r["path"],
            key_version=r["key_version"],
            nonce=r["nonce"],
            ciphertext=r["ciphertext"],
        )
        values.append(json.dumps(value))
    return values
