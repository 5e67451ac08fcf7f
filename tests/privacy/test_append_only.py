"""The privacy records are append-only for the application: PostgreSQL itself refuses the
service's role any UPDATE, DELETE or TRUNCATE of them. Erasure goes through functions owned
by the migration role, never through the service's own statements."""

from __future__ import annotations

import asyncpg
import pytest

# Each table, and a column to try to rewrite.
APPEND_ONLY = {
    "privacy_log": "reason",
    "privacy_holds": "until",
    "privacy_hold_releases": "reason",
    "erasure_requests": "basis",
    "erasure_outcomes": "outcome",
    "decision_disclosures": "revealed",
    "item_fields": "erased_at",
    "sealed_notes": "erased_at",
    "privacy_policies": "fields",
    "retention_classes": "keep_seconds",
}


@pytest.mark.parametrize(("table", "column"), sorted(APPEND_ONLY.items()), ids=sorted(APPEND_ONLY))
async def test_the_application_role_cannot_rewrite_a_privacy_record(
    app_conn: asyncpg.Connection, table: str, column: str
) -> None:
    # It may read them (so each refusal below is about the write, not the table).
    assert await app_conn.fetchval(f"SELECT count(*) FROM {table}") == 0
    for statement in (
        f"UPDATE {table} SET {column} = {column}",
        f"DELETE FROM {table}",
        f"TRUNCATE {table}",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match=f"permission denied.*{table}"):
            await app_conn.execute(statement)


async def test_the_application_role_may_rewrap_a_data_key_and_nothing_more(
    app_conn: asyncpg.Connection,
) -> None:
    await app_conn.execute("INSERT INTO privacy_subjects (subject_ref) VALUES ('cust-1')")
    await app_conn.execute(
        "INSERT INTO privacy_subject_keys (subject_ref, key_version, kek_id, wrapped_key) "
        "VALUES ('cust-1', 1, 'k1', '\\x00')"
    )

    # Rotation: the KEK's id and the wrapped bytes.
    await app_conn.execute(
        "UPDATE privacy_subject_keys SET kek_id = 'k2', wrapped_key = '\\x01' "
        "WHERE subject_ref = 'cust-1'"
    )

    # Shredding is not the application's, nor is moving or dropping a key.
    for statement in (
        "UPDATE privacy_subject_keys SET shredded_at = now()",
        "UPDATE privacy_subject_keys SET subject_ref = 'cust-2'",
        "UPDATE privacy_subject_keys SET key_version = 2",
        "DELETE FROM privacy_subject_keys",
        "TRUNCATE privacy_subject_keys",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await app_conn.execute(statement)
    row = await app_conn.fetchrow("SELECT kek_id, wrapped_key FROM privacy_subject_keys")
    assert row is not None
    assert tuple(row) == ("k2", b"\x01")
