"""Plan regression: reading an item's timeline reads that item's rows, through
item_events_item, review_decisions_item and the item's key, never a history table whole."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from server.store import sql
from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import literal, plan_outline

ITEMS = 20_000
HISTORY_TABLES = {"item_events", "review_decisions", "review_items"}
INDEXES = {"item_events_item", "review_decisions_item", "review_items_pkey"}
NAME = sql.timeline.ITEM_EVENTS_GET_PAGES.name
# A position in the middle of a story: the second page.
AFTER = {"after_at": datetime(2026, 1, 1, tzinfo=UTC), "after_rank": 30, "after_ref": 7}
FIRST = {"after_at": None, "after_rank": None, "after_ref": None}


@pytest.fixture
async def history(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> list[int]:
    """Many items, each enqueued, released once, noted and decided; some held now, some
    with a lapse nobody noticed. Returns a few item ids."""
    await owner_conn.execute(
        """
        WITH items AS (
            INSERT INTO review_items
                (origin_queue, queue, external_key, payload, evidence_hash, state, decided_at,
                 lease_owner, lease_token, lease_expires_at, lease_started_at, lease_count)
            SELECT 'kyc', 'kyc', 'cust-' || n, '{}', repeat('0', 64),
                   CASE WHEN n % 10 = 0 THEN 'pending' ELSE 'decided' END,
                   CASE WHEN n % 10 = 0 THEN NULL ELSE now() END,
                   CASE WHEN n % 10 = 0 THEN 'alice' END,
                   CASE WHEN n % 10 = 0 THEN gen_random_uuid() END,
                   CASE WHEN n % 10 = 0 THEN now() + (n % 3 - 1) * interval '1 hour' END,
                   now() - interval '1 hour', 2
            FROM generate_series(1, $1::int) AS n
            RETURNING id, state, evidence_hash
        ),
        events AS (
            INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                                     lease_started_at, body)
            SELECT i.id, 'kyc', k.kind, 'alice', 'reviewer',
                   CASE WHEN k.kind = 'released' THEN gen_random_uuid() END,
                   CASE WHEN k.kind = 'released' THEN now() - interval '2 hours' END,
                   CASE WHEN k.kind = 'noted' THEN 'Looked at it.' END
            FROM items AS i, unnest(ARRAY['enqueued', 'released', 'noted']) AS k (kind)
        )
        INSERT INTO review_decisions
            (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role,
             evidence_hash, lease_token, lease_started_at, lease_count)
        SELECT i.id, 'kyc', 'approve', 'approve', 'documents_ok', 'alice', 'reviewer',
               i.evidence_hash, gen_random_uuid(), now() - interval '1 hour', 2
        FROM items AS i
        WHERE i.state = 'decided'
        """,
        ITEMS,
    )
    await owner_conn.execute("ANALYZE")
    ids: list[int] = [
        row["id"]
        for row in await owner_conn.fetch(
            "SELECT id FROM review_items WHERE id % 997 = 0 ORDER BY id LIMIT 10"
        )
    ]
    return ids


def arguments(queries: Queries, item_ids: list[int], after: dict[str, Any]) -> list[Any]:
    return queries.statement(NAME).bind({"item_ids": item_ids, "page_size": 51, **after})


def assert_reads_the_items_rows(outline: list[tuple[str, str | None]]) -> None:
    whole_scans = [
        (kind, target)
        for kind, target in outline
        if kind == "Seq Scan" and target in HISTORY_TABLES
    ]
    assert whole_scans == [], outline
    assert {target for _, target in outline} >= INDEXES, outline


@pytest.mark.parametrize("after", [FIRST, AFTER], ids=["first-page", "next-page"])
@pytest.mark.parametrize("count", [1, 10], ids=["one-item", "ten-items"])
async def test_custom_plans_read_each_item_s_rows_only(
    history: list[int],
    owner_conn: asyncpg.Connection,
    queries: Queries,
    count: int,
    after: dict[str, Any],
) -> None:
    explained = await owner_conn.fetchval(
        "EXPLAIN (FORMAT JSON) " + queries[NAME], *arguments(queries, history[:count], after)
    )

    assert_reads_the_items_rows(plan_outline(explained))


@pytest.mark.parametrize("after", [FIRST, AFTER], ids=["first-page", "next-page"])
async def test_generic_plans_read_each_item_s_rows_only(
    history: list[int], owner_conn: asyncpg.Connection, queries: Queries, after: dict[str, Any]
) -> None:
    # A pool reuses prepared statements: the generic plan may be the one that runs.
    await owner_conn.execute("SET plan_cache_mode = force_generic_plan")
    await owner_conn.execute(f"PREPARE timeline AS {queries[NAME]}")
    values = ", ".join(literal(v, "bigint") for v in arguments(queries, history, after))

    explained = await owner_conn.fetchval(f"EXPLAIN (FORMAT JSON) EXECUTE timeline ({values})")

    assert_reads_the_items_rows(plan_outline(explained))


async def test_the_history_is_a_story_the_query_tells(history: list[int], db: Database) -> None:
    # The plans above are of a query that finds rows: each decided item's whole story.
    rows = await db.fetch(
        sql.timeline.ITEM_EVENTS_GET_PAGES, item_ids=history[:1], page_size=51, **FIRST
    )

    assert sorted(row["kind"] for row in rows) == [
        "claimed",
        "claimed",
        "decided",
        "enqueued",
        "noted",
        "released",
    ]
