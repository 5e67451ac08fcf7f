"""Plan regression: a dashboard's page of decisions for several queues (Queue.decisions, one
statement for every queue) walks each queue's rows of review_decisions_queue_id in id order,
however many decisions other queues hold, never the decisions table whole."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

from server.store import sql
from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import plan_nodes, plan_outline

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


@pytest.fixture
async def overturned(decided: None, owner_conn: asyncpg.Connection) -> list[int]:
    """One decision in ten of kyc overturned: the history's superseding rows, many more than
    a read of decisions asks about. Returns fifty decisions to read, some overturned."""
    await owner_conn.execute(
        """
        INSERT INTO review_decisions
            (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role,
             evidence_hash, supersedes, supersedes_decided_at)
        SELECT d.item_id, d.queue, 'overturn', 'reject', 'name_mismatch', 'ann', 'approver',
               d.evidence_hash, d.id, d.decided_at
        FROM review_decisions AS d
        WHERE d.queue = 'kyc' AND d.id % 10 = 0
        """
    )
    await owner_conn.execute("ANALYZE")
    ids: list[int] = [
        row["id"]
        for row in await owner_conn.fetch(
            "SELECT id FROM review_decisions WHERE verdict = 'approve' ORDER BY id DESC LIMIT 50"
        )
    ]
    return ids


def superseding_rows_read(explained: Any) -> int:
    """Rows the plan read of the superseding index, over all its loops."""
    document = json.loads(explained) if isinstance(explained, str) else explained
    return sum(
        int(node.get("Actual Rows", 0) * node.get("Actual Loops", 1))
        for node in plan_nodes(document[0]["Plan"])
        if node.get("Index Name") == "review_decisions_one_overturn_each"
    )


@pytest.mark.parametrize("plan", ["custom", "generic"])
@pytest.mark.parametrize(
    ("name", "argument"),
    [
        (sql.decisions_read.DECISIONS_GET_BY_IDS.name, "ids"),
        (sql.decisions_read.DECISIONS_GET_BY_ITEM_IDS.name, "item_ids"),
    ],
)
async def test_reading_decisions_probes_what_supersedes_each_not_every_overturn(
    overturned: list[int],
    owner_conn: asyncpg.Connection,
    queries: Queries,
    name: str,
    argument: str,
    plan: str,
) -> None:
    """A read of 50 decisions looks up, for each, the row that supersedes it; it never
    walks the 2,000 overturns of the history to join them."""
    values = overturned
    if argument == "item_ids":
        values = [
            row["item_id"]
            for row in await owner_conn.fetch(
                "SELECT item_id FROM review_decisions WHERE id = ANY ($1)", overturned
            )
        ]
    if plan == "generic":
        await owner_conn.execute("SET plan_cache_mode = force_generic_plan")
    await owner_conn.execute(f"PREPARE reading (bigint[]) AS {queries[name]}")
    try:
        listed = ",".join(map(str, values))
        explained = await owner_conn.fetchval(
            f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE reading ('{{{listed}}}')"
        )
    finally:
        await owner_conn.execute("DEALLOCATE reading")
        await owner_conn.execute("RESET plan_cache_mode")

    # At most one superseding row per decision read (50 decisions, 5 of them overturned).
    assert superseding_rows_read(explained) <= len(values), plan_outline(explained)
