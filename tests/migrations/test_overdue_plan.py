"""Plan regression: the overdue pass that runs before every claim walks the partial indexes
of exceptions waiting for review, not the history of closed and handled ones."""

from __future__ import annotations

import asyncpg
import pytest

from server.store.queries import Queries
from tests.migrations.helpers import WORKFLOW_CATALOGUE, plan_outline

PER_WORKFLOW = 4_000
# One in this many is overdue and not yet escalated: the few rows the pass is for.
OVERDUE_EVERY = 500
# Decided review items: the claim path's history, which the pass must not read either.
REVIEW_HISTORY = 20_000
OVERDUE_INDEXES = ("exceptions_overdue_by_owner", "exceptions_overdue_by_escalation")
QUEUE = "supplier-ops"

# Most exceptions are closed; the rest are spread over every other situation: waiting and
# not yet due, escalated already, with an approver, waiting for a redrive. A few are overdue.
EXCEPTIONS = """
WITH spec AS (
    SELECT w.workflow, w.owner, w.lead, w.approvals, n,
           'exc_' || w.prefix || lpad(n::text, 19, '0') AS id,
           CASE WHEN n % $2::int = 0 THEN 'overdue'
                WHEN n % 100 < 5 THEN 'not_due'
                WHEN n % 100 < 9 THEN 'escalated'
                WHEN n % 100 < 12 THEN 'approval'
                WHEN n % 100 < 15 THEN 'redrive'
                ELSE 'closed' END AS situation
    FROM (VALUES ('supplier_onboarding', 'supplier-ops', 'procurement-leads',
                  'supplier-approvals', '1'),
                 ('payouts', 'payout-ops', 'payout-leads', 'payout-approvals', '2'))
             AS w (workflow, owner, lead, approvals, prefix),
         generate_series(1, $1::int) AS n
),
items AS (
    INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash,
                              state, kind)
    SELECT s.owner,
           CASE s.situation WHEN 'escalated' THEN s.lead WHEN 'approval' THEN s.approvals
                            ELSE s.owner END,
           s.id, jsonb_build_object('exceptionId', s.id), repeat('0', 64),
           CASE WHEN s.situation IN ('closed', 'redrive') THEN 'parked' ELSE 'pending' END,
           'exception'
    FROM spec AS s
    RETURNING id, external_key
)
INSERT INTO exceptions (id, workflow, source_record_id, reason_code, detail, consequence,
                        state, closure, closed_at, owner_role, escalation_role, escalated_at,
                        due_at, item_id)
SELECT s.id, s.workflow, 'REC-' || s.n, 'entity_mismatch', 'generated', 'low',
       CASE s.situation WHEN 'closed' THEN 'closed'
                        WHEN 'approval' THEN 'awaiting_approval'
                        WHEN 'redrive' THEN 'redrive_pending'
                        ELSE 'needs_review' END,
       CASE WHEN s.situation = 'closed' THEN 'rejected' END,
       CASE WHEN s.situation = 'closed' THEN now() END,
       CASE WHEN s.situation = 'escalated' THEN s.lead ELSE s.owner END,
       s.lead,
       CASE WHEN s.situation = 'escalated' THEN now() - interval '1 day' END,
       CASE WHEN s.situation = 'not_due' THEN now() + interval '1 day'
            ELSE now() - interval '2 days' END,
       i.id
FROM spec AS s
JOIN items AS i ON i.external_key = s.id
"""


REVIEWS = """
INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash, state,
                          decided_at)
SELECT 'kyc', 'kyc', 'cust-' || n, jsonb_build_object('n', n), repeat('0', 64), 'decided', now()
FROM generate_series(1, $1::int) AS n
"""


@pytest.fixture
async def exceptions(owner_conn: asyncpg.Connection) -> None:
    """Two workflows, each with a long history of exceptions and a few overdue ones, beside
    a long history of decided review items."""
    await owner_conn.execute("INSERT INTO queues (name, holder_role) VALUES ('kyc', 'reviewer')")
    await owner_conn.execute(WORKFLOW_CATALOGUE)
    await owner_conn.execute(REVIEWS, REVIEW_HISTORY)
    await owner_conn.execute(EXCEPTIONS, PER_WORKFLOW, OVERDUE_EVERY)
    await owner_conn.execute("ANALYZE exceptions")
    await owner_conn.execute("ANALYZE review_items")
    overdue = await owner_conn.fetchval(
        "SELECT count(*) FROM exceptions WHERE owner_role = $1 AND state = 'needs_review' "
        "AND escalated_at IS NULL AND due_at <= now()",
        QUEUE,
    )
    # Otherwise the plan would be for an empty result, and prove less.
    assert overdue == PER_WORKFLOW // OVERDUE_EVERY


Outline = list[tuple[str, str | None]]


async def explain(owner: asyncpg.Connection, queries: Queries, plan: str) -> Outline:
    await owner.execute(f"SET plan_cache_mode = {plan}")
    await owner.execute(
        f"PREPARE escalate_overdue (text) AS {queries['exceptions_escalate_overdue']}"
    )
    explained = await owner.fetchval(f"EXPLAIN (FORMAT JSON) EXECUTE escalate_overdue ('{QUEUE}')")
    return plan_outline(explained)


# A pool reuses prepared statements, so the generic plan is the one that runs in the end;
# the custom plan is the one of its first executions.
PLANS = pytest.mark.parametrize(
    "plan", ["force_custom_plan", "force_generic_plan"], ids=["custom", "generic"]
)


@PLANS
async def test_overdue_pass_reads_exceptions_through_the_partial_indexes(
    exceptions: None, owner_conn: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    outline = await explain(owner_conn, queries, plan)

    assert {name for _, name in outline} & set(OVERDUE_INDEXES), outline
    # Anywhere in the statement: finding the overdue rows, or writing them back.
    assert ("Seq Scan", "exceptions") not in outline, outline


@PLANS
async def test_overdue_pass_does_not_read_the_item_history(
    exceptions: None, owner_conn: asyncpg.Connection, queries: Queries, plan: str
) -> None:
    # The pass runs before every claim, so a claim's cost must still follow the backlog.
    outline = await explain(owner_conn, queries, plan)

    assert ("Seq Scan", "review_items") not in outline, outline
