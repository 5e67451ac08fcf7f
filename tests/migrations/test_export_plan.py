"""Plan regression: the queue export's cursor reads the window's rows (the enqueue-time
BRIN index), not the whole of review_items in id order, however the planner weighs a
cursor's first rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from server.store import sql
from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import plan_outline

ITEMS = 200_000
NAME = sql.items.ITEM_IDS_GET_ENQUEUED_BETWEEN.name
# One month of a history that runs from January to mid-November 2026 in two queues.
WINDOW = {
    "queue": "kyc",
    "since": datetime(2026, 3, 1, tzinfo=UTC),
    "until": datetime(2026, 4, 1, tzinfo=UTC),
}
# The same rows in the same order, written as the obvious query: the planner walks the
# primary key for a cursor's first rows.
NAIVE = """
SELECT i.id FROM review_items AS i
WHERE i.origin_queue = $1 AND i.created_at >= $2 AND i.created_at < $3
ORDER BY i.id
"""


@pytest.fixture
async def history(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> None:
    await owner_conn.execute(
        """
        INSERT INTO review_items
            (origin_queue, queue, external_key, payload, evidence_hash, state, decided_at,
             created_at)
        SELECT CASE WHEN n % 2 = 0 THEN 'kyc' ELSE 'kyc-senior' END,
               CASE WHEN n % 2 = 0 THEN 'kyc' ELSE 'kyc-senior' END,
               'cust-' || n, '{}', repeat('0', 64), 'decided', now(),
               timestamptz '2026-01-01' + n * interval '2 minutes'
        FROM generate_series(1, $1::int) AS n
        """,
        ITEMS,
    )
    await owner_conn.execute("ANALYZE review_items")


async def cursor_plan(owner_conn: asyncpg.Connection, query: str, arguments: list[Any]) -> Any:
    async with owner_conn.transaction():
        return await owner_conn.fetchval(
            f"EXPLAIN (FORMAT JSON) DECLARE export CURSOR FOR {query}", *arguments
        )


async def test_the_cursor_reads_the_window_through_the_enqueue_time_index(
    history: None, owner_conn: asyncpg.Connection, queries: Queries
) -> None:
    statement = queries.statement(NAME)

    ours = plan_outline(await cursor_plan(owner_conn, statement.sql, statement.bind(WINDOW)))
    naive = plan_outline(await cursor_plan(owner_conn, NAIVE, list(WINDOW.values())))

    assert ("Bitmap Index Scan", "review_items_created_brin") in ours, ours
    assert not [node for node in ours if "review_items_pkey" in node or "Seq Scan" in node[0]]
    # What the CTE prevents: the obvious query, as a cursor, walks every row by id.
    assert ("Index Scan", "review_items_pkey") in naive, naive


async def test_the_window_is_what_the_query_returns(history: None, db: Database) -> None:
    rows = await db.fetch(sql.items.ITEM_IDS_GET_ENQUEUED_BETWEEN, **WINDOW)
    # 31 days of one item in two every 2 minutes: 11,160 items of kyc, in id order.
    ids = [row["id"] for row in rows]
    assert len(ids) == 31 * 24 * 15
    assert ids == sorted(ids)
