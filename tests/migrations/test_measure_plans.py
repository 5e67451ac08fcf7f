"""Plan regression: no queue measure reads the whole decision history for a 7-day window.

A long history (decided a month ago) and a short window: every statement of
db/queries/queue_measures.sql must reach the history through its windowed index, never by
scanning review_decisions, review_items or item_events whole."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

from server.domain.measures.figures import DEFAULT_WINDOW_SECONDS
from server.store import sql
from server.store.database import Database
from server.store.queries import Queries
from tests.migrations.helpers import literal, plan_nodes, plan_outline

HISTORY_PER_QUEUE = 20_000
RECENT_PER_QUEUE = 50
HISTORY_TABLES = {"review_decisions", "review_items", "item_events", "qa_results"}
MEASURES = [
    sql.queue_measures.QUEUE_MEASURES_SUMMARY.name,
    sql.queue_measures.QUEUE_MEASURES_LEASE_COUNTS.name,
    sql.queue_measures.QUEUE_MEASURES_REASONS.name,
    sql.queue_measures.QUEUE_MEASURES_REVIEWERS.name,
    sql.queue_measures.QUEUE_MEASURES_QUALITY.name,
]
# Where each statement must enter the decision history, and the summary the items'.
WINDOW_INDEX = "review_decisions_decided_brin"
# The decision search's indexes (migration 0039) lead with the queue (and a filter) and then
# decided_at, so the planner may read a queue's window through them: a range, as long as
# decided_at bounds the scan. Read through them without it, they would walk the history.
QUEUE_WINDOW_INDEXES = {
    "review_decisions_search_queue",
    "review_decisions_search_reviewer",
    "review_decisions_search_reason",
    "review_decisions_search_verdict",
}
ARRIVALS_INDEX = "review_items_created_brin"
# How quality reads each window decision's copy, result and overturn: by unique index.
QUALITY_PROBES = {
    "review_items_one_qa_copy_each",
    "qa_results_one_per_decision",
    "review_decisions_one_overturn_each",
}


@pytest.fixture
async def history(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> None:
    """Two queues, each with a month-old decided history, a window's worth of recent
    decisions, lapses and releases old and new, and a short backlog."""
    await owner_conn.execute(
        """
        WITH items AS (
            INSERT INTO review_items
                (origin_queue, queue, external_key, payload, evidence_hash, state,
                 decided_at, created_at, lease_count, lease_started_at)
            SELECT q, q, 'cust-' || n, '{}', repeat('0', 64),
                   CASE WHEN n % 100 = 0 THEN 'pending' ELSE 'decided' END,
                   CASE WHEN n % 100 = 0 THEN NULL ELSE at END, at - interval '1 hour', 1,
                   at - interval '5 minutes'
            FROM unnest(ARRAY['kyc', 'kyc-senior']) AS q,
                 generate_series(1, $1::int + $2::int) AS n,
                 LATERAL (SELECT CASE WHEN n <= $1 THEN now() - interval '30 days'
                                      ELSE now() - interval '1 hour' END AS at) AS t
            RETURNING id, queue, state, decided_at, lease_started_at, evidence_hash
        ),
        events AS (
            INSERT INTO item_events (item_id, queue, kind, actor, actor_role, at)
            SELECT i.id, i.queue, CASE WHEN i.id % 2 = 0 THEN 'lapsed' ELSE 'released' END,
                   'alice', 'reviewer', i.lease_started_at
            FROM items AS i
            WHERE i.id % 10 = 0
        )
        INSERT INTO review_decisions
            (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role,
             evidence_hash, lease_token, lease_started_at, lease_count, decided_at)
        SELECT i.id, i.queue, 'approve', 'approve', 'documents_ok', 'alice', 'reviewer',
               i.evidence_hash, gen_random_uuid(), i.lease_started_at, 1, i.decided_at
        FROM items AS i
        WHERE i.state = 'decided'
        """,
        HISTORY_PER_QUEUE,
        RECENT_PER_QUEUE,
    )
    # Every decision, old and new, sampled for QA and checked (a queue with a qaSampleRate of
    # 1): as long a QA history as the decision history.
    await owner_conn.execute(
        """
        INSERT INTO queues (name) VALUES ('kyc-qa');
        INSERT INTO reason_codes (queue, code, label, verdicts)
        VALUES ('kyc-qa', 'qa_agree', 'agree', ARRAY['approve']);
        WITH copies AS (
            INSERT INTO review_items
                (origin_queue, queue, external_key, payload, evidence_hash, kind, state,
                 decided_at, created_at, barred_claimer, qa_of)
            SELECT 'kyc-qa', 'kyc-qa', 'qa-of-decision-' || d.id, '{}', d.evidence_hash, 'qa',
                   'decided', d.decided_at, d.decided_at, d.reviewer, d.id
            FROM review_decisions AS d
            RETURNING id, qa_of, decided_at
        )
        INSERT INTO qa_results
            (decision_id, qa_item_id, queue, decision_queue, agrees, reason_code, reviewer,
             reviewer_role, lease_token, recorded_at)
        SELECT c.qa_of, c.id, 'kyc-qa', d.queue, true, 'qa_agree', 'quinn', 'reviewer',
               gen_random_uuid(), c.decided_at
        FROM copies AS c
        JOIN review_decisions AS d ON d.id = c.qa_of;
        """
    )
    await owner_conn.execute("ANALYZE")


def arguments(queries: Queries, name: str, reviewer: str | None) -> list[Any]:
    return queries.statement(name).bind(
        {
            "queues": ["kyc", "kyc-senior"],
            "since_seconds": DEFAULT_WINDOW_SECONDS,
            "reviewer": reviewer,
        }
    )


def assert_windowed(name: str, explained: Any) -> None:
    outline = plan_outline(explained)
    whole_scans = [
        (kind, target)
        for kind, target in outline
        if kind == "Seq Scan" and target in HISTORY_TABLES
    ]
    assert whole_scans == [], outline
    document = json.loads(explained) if isinstance(explained, str) else explained
    queue_reads = [
        node
        for node in plan_nodes(document[0]["Plan"])
        if node.get("Index Name") in QUEUE_WINDOW_INDEXES
    ]
    unbounded = [node["Index Name"] for node in queue_reads if "decided_at" not in str(node)]
    assert unbounded == [], outline
    assert queue_reads or any(target == WINDOW_INDEX for _, target in outline), outline
    if name == sql.queue_measures.QUEUE_MEASURES_SUMMARY.name:
        assert any(target == ARRIVALS_INDEX for _, target in outline), outline
    if name == sql.queue_measures.QUEUE_MEASURES_QUALITY.name:
        assert {target for _, target in outline} >= QUALITY_PROBES, outline


@pytest.mark.parametrize("reviewer", [None, "alice"])
@pytest.mark.parametrize("name", MEASURES)
async def test_custom_plans_read_the_window_only(
    history: None, owner_conn: asyncpg.Connection, queries: Queries, name: str, reviewer: str | None
) -> None:
    explained = await owner_conn.fetchval(
        "EXPLAIN (FORMAT JSON) " + queries[name], *arguments(queries, name, reviewer)
    )

    assert_windowed(name, explained)


@pytest.mark.parametrize("name", MEASURES)
async def test_generic_plans_read_the_window_only(
    history: None, owner_conn: asyncpg.Connection, queries: Queries, name: str
) -> None:
    # A pool reuses prepared statements: the generic plan may be the one that runs.
    await owner_conn.execute("SET plan_cache_mode = force_generic_plan")
    await owner_conn.execute(f"PREPARE measure AS {queries[name]}")
    values = ", ".join(literal(v) for v in arguments(queries, name, None))

    explained = await owner_conn.fetchval(f"EXPLAIN (FORMAT JSON) EXECUTE measure ({values})")

    assert_windowed(name, explained)
