"""Plan regression for the bulk actions' filter form: with thousands of decided items in the
queue and thousands in another queue, the filter walks an index of the queue's waiting items
(review_items_claimable), never the whole table. Generic and custom plans, run (and rolled
back) as the application would run them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from server.domain.controls.bulk import MAX_BULK_ITEMS
from server.domain.controls.reservations import MAX_RESERVATION_SECONDS
from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import literal, plan_nodes, plan_outline

HISTORY = 20_000
ELSEWHERE = 5_000
WAITING = 300
CLAIM_INDEX = "review_items_claimable"

PLANS = pytest.mark.parametrize(
    "plan", ["force_custom_plan", "force_generic_plan"], ids=["custom", "generic"]
)


@pytest.fixture
async def backlog(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> None:
    await owner_conn.execute(
        f"""
        INSERT INTO hold_reasons (queue, code, label) VALUES ('kyc', 'waiting', 'Waiting');
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash, state, decided_at)
        SELECT 'kyc', 'kyc', 'old-' || n, 0, '{{}}', repeat('0', 64), 'decided', now()
        FROM generate_series(1, {HISTORY}) AS n;
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash)
        SELECT 'kyc-senior', 'kyc-senior', 'senior-' || n, 0, '{{}}', repeat('0', 64)
        FROM generate_series(1, {ELSEWHERE}) AS n;
        INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                  evidence_hash, created_at)
        SELECT 'kyc', 'kyc', 'waiting-' || n, n % 5, '{{}}', repeat('0', 64),
               now() - make_interval(secs => n)
        FROM generate_series(1, {WAITING}) AS n;
        ANALYZE review_items;
        """
    )


async def explain_hold(owner: asyncpg.Connection, queries: Queries, plan: str) -> Any:
    arguments = {
        "item_ids": None,
        "queue": "kyc",
        "state": "pending",
        "overdue": None,
        "assigned": None,
        "older_than_seconds": 60,
        "batch": MAX_BULK_ITEMS,
        "queue_scope": None,
        "reason": "waiting",
        "until": datetime.now(UTC) + timedelta(hours=1),
        "max_seconds": MAX_RESERVATION_SECONDS,
        "revoke_leases": False,
        "actor": "max",
        "actor_role": "manager",
    }
    statement = queries.statement("items_bulk_hold")
    values = statement.bind(arguments)
    await owner.execute(f"SET plan_cache_mode = {plan}")
    await owner.execute(f"PREPARE bulk_hold AS {queries['items_bulk_hold']}")
    transaction = owner.transaction()
    await transaction.start()
    try:
        explained = await owner.fetchval(
            "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE bulk_hold ("
            + ", ".join(literal(v) for v in values)
            + ")"
        )
    finally:
        await transaction.rollback()
    return json.loads(explained) if isinstance(explained, str) else explained


@PLANS
async def test_the_filter_reads_the_queues_waiting_items_through_the_claim_index(
    backlog: None, owner_conn: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    document = await explain_hold(owner_conn, queries, plan)

    outline = plan_outline(document)
    assert ("Seq Scan", "review_items") not in outline, outline
    walks = [n for n in plan_nodes(document[0]["Plan"]) if n.get("Index Name") == CLAIM_INDEX]
    assert walks, outline
    # The walk reads the queue's waiting items, none of its decided history or the other
    # queue's backlog.
    read = sum(
        (n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)) * n.get("Actual Loops", 1)
        for n in walks
    )
    assert read <= WAITING, walks
