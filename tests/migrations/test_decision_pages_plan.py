"""Plan regression: a dashboard's page of decisions for several queues (Queue.decisions, one
statement for every queue) walks each queue's rows of review_decisions_queue_id in id order,
however many decisions other queues hold, never the decisions table whole."""

from __future__ import annotations

import asyncpg
import pytest

from server.store import sql
from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import plan_outline

DECISIONS = 20_000
NAME = sql.decisions_read.DECISIONS_GET_PAGES.name


@pytest.fixture
async def decided(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> None:
    """Many decisions in kyc, a few in kyc-senior."""
    await owner_conn.execute(
        """
        WITH items AS (
            INSERT INTO review_items
                (origin_queue, queue, external_key, payload, evidence_hash, state, decided_at)
            SELECT q, q, 'cust-' || n, '{}', repeat('0', 64), 'decided', now()
            FROM generate_series(1, $1::int) AS n,
                 LATERAL (SELECT CASE WHEN n % 1000 = 0 THEN 'kyc-senior' ELSE 'kyc' END) AS s (q)
            RETURNING id, queue, evidence_hash
        )
        INSERT INTO review_decisions
            (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role,
             evidence_hash, lease_token)
        SELECT i.id, i.queue, 'approve', 'approve', 'documents_ok', 'alice', 'reviewer',
               i.evidence_hash, gen_random_uuid()
        FROM items AS i
        """,
        DECISIONS,
    )
    await owner_conn.execute("ANALYZE")


def assert_walks_each_queue_in_its_index(outline: list[tuple[str, str | None]]) -> None:
    assert ("Seq Scan", "review_decisions") not in outline, outline
    assert ("Index Scan", "review_decisions_queue_id") in outline, outline


@pytest.mark.parametrize(
    "queues", [["kyc-senior"], ["kyc-senior", "kyc", "nobody"]], ids=["one", "three"]
)
async def test_custom_plans_walk_each_queue_in_its_index(
    decided: None, owner_conn: asyncpg.Connection, queries: Queries, queues: list[str]
) -> None:
    arguments = queries.statement(NAME).bind({"queues": queues, "after_id": 0, "page_size": 51})
    explained = await owner_conn.fetchval("EXPLAIN (FORMAT JSON) " + queries[NAME], *arguments)

    assert_walks_each_queue_in_its_index(plan_outline(explained))


async def test_the_generic_plan_walks_each_queue_in_its_index(
    decided: None, owner_conn: asyncpg.Connection, queries: Queries
) -> None:
    # A pool reuses prepared statements: the generic plan may be the one that runs.
    await owner_conn.execute("SET plan_cache_mode = force_generic_plan")
    await owner_conn.execute(f"PREPARE pages AS {queries[NAME]}")

    explained = await owner_conn.fetchval(
        "EXPLAIN (FORMAT JSON) EXECUTE pages (ARRAY['kyc-senior', 'kyc'], 0, 51)"
    )

    assert_walks_each_queue_in_its_index(plan_outline(explained))


async def test_each_queue_gets_its_own_page(decided: None, db: Database) -> None:
    rows = await db.fetch(
        sql.decisions_read.DECISIONS_GET_PAGES,
        queues=["kyc-senior", "kyc", "nobody"],
        after_id=0,
        page_size=51,
    )

    assert [row["queue"] for row in rows] == ["kyc"] * 51 + ["kyc-senior"] * 20
    assert [row["id"] for row in rows[:51]] == sorted(row["id"] for row in rows[:51])
