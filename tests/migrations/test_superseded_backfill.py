"""Migration 0040 on a database that already holds overturns: each row that supersedes a
decision gets that decision's time, and the constraint that keeps them together holds."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from server.store.database import connect
from server.store.migrate import apply_migrations
from tests import pg
from tests.conftest import closing

BEFORE = "0040_superseded_order.sql"

HISTORY = """
INSERT INTO queues (name) VALUES ('kyc');
INSERT INTO reason_codes (queue, code, label, verdicts)
VALUES ('kyc', 'documents_ok', 'Documents OK', ARRAY['approve', 'reject']);
WITH items AS (
    INSERT INTO review_items
        (origin_queue, queue, external_key, payload, evidence_hash, state, decided_at)
    SELECT 'kyc', 'kyc', 'cust-' || n, '{}', repeat('0', 64), 'decided', now()
    FROM generate_series(1, 3) AS n
    RETURNING id, evidence_hash
)
INSERT INTO review_decisions
    (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role, evidence_hash,
     lease_token, decided_at)
SELECT i.id, 'kyc', 'approve', 'approve', 'documents_ok', 'rob', 'reviewer', i.evidence_hash,
       gen_random_uuid(), timestamptz '2026-01-01' + make_interval(days => i.id::int)
FROM items AS i;
-- Two of the three overturned, the later decision first.
INSERT INTO review_decisions
    (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role, evidence_hash,
     supersedes, decided_at)
SELECT d.item_id, 'kyc', 'overturn', 'reject', 'documents_ok', 'ann', 'approver',
       d.evidence_hash, d.id, timestamptz '2026-06-01' - make_interval(days => d.id::int)
FROM review_decisions AS d
WHERE d.verdict = 'approve' AND d.item_id > (SELECT min(item_id) FROM review_decisions);
"""


@pytest.fixture
async def owner_before(pg_server: str, tmp_path: Path) -> AsyncIterator[asyncpg.Connection]:
    """A database migrated up to 0040 (not included), as its owner."""
    for migration in sorted(pg.MIGRATIONS_DIR.glob("*.sql")):
        if migration.name < BEFORE:
            shutil.copy(migration, tmp_path / migration.name)
    name = await pg.create_empty_database(pg_server, "casework_backfill")
    try:
        async with closing(connect(pg.owner_dsn(pg_server, name))) as conn:
            await apply_migrations(conn, tmp_path)
            yield conn
    finally:
        await pg.drop_database(pg_server, name)


async def test_overturns_written_before_0040_get_the_superseded_decisions_time(
    owner_before: asyncpg.Connection,
) -> None:
    await owner_before.execute(HISTORY)

    applied = await apply_migrations(owner_before, pg.MIGRATIONS_DIR)

    assert [migration.version for migration in applied] == [40]
    rows = await owner_before.fetch(
        """
        SELECT s.supersedes_decided_at, d.decided_at
        FROM review_decisions AS s JOIN review_decisions AS d ON d.id = s.supersedes
        """
    )
    assert len(rows) == 2
    assert all(row["supersedes_decided_at"] == row["decided_at"] for row in rows), rows
    assert (
        await owner_before.fetchval(
            "SELECT count(*) FROM review_decisions WHERE supersedes_decided_at IS NOT NULL"
        )
        == 2
    )
    with pytest.raises(asyncpg.CheckViolationError):
        await owner_before.execute(
            "UPDATE review_decisions SET supersedes_decided_at = NULL WHERE supersedes IS NOT NULL"
        )
