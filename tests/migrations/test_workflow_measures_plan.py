"""Plan regression: Workflow.measures reads the window's events through
exception_events_workflow_at and the open exceptions through a partial index, never the
whole history of events or of closed exceptions, for a 7-day window."""

from __future__ import annotations

import asyncpg
import pytest

from server.domain.measures.figures import DEFAULT_WINDOW_SECONDS
from server.store.queries import Queries
from tests.migrations.helpers import WORKFLOW_CATALOGUE, plan_outline

PER_WORKFLOW = 3_000
# One exception in this many is open now, and its events are recent; the others were
# raised and closed long ago: the history the measures must not read.
RECENT_EVERY = 100
WORKFLOWS = ("supplier_onboarding", "payouts")
WINDOW_INDEX = "exception_events_workflow_at"
# Either partial index over open exceptions serves "now": the one that keeps raising
# idempotent (0005) or the one /metrics counts open exceptions with (0011).
OPEN_INDEXES = {"exceptions_open_once", "exceptions_open"}

EXCEPTIONS = """
WITH spec AS (
    SELECT w.workflow, w.owner, w.lead, n,
           'exc_' || w.prefix || lpad(n::text, 19, '0') AS id,
           n % $2::int = 0 AS recent,
           -- Closed ones are spread over the past year; open ones were raised an hour ago.
           CASE WHEN n % $2::int = 0 THEN now() - interval '1 hour'
                ELSE now() - make_interval(days => 30 + n % 330) END AS raised_at
    FROM (VALUES ('supplier_onboarding', 'supplier-ops', 'procurement-leads', '1'),
                 ('payouts', 'payout-ops', 'payout-leads', '2'))
             AS w (workflow, owner, lead, prefix),
         generate_series(1, $1::int) AS n
),
items AS (
    INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash,
                              state, kind)
    SELECT s.owner, s.owner, s.id, jsonb_build_object('exceptionId', s.id), repeat('0', 64),
           CASE WHEN s.recent THEN 'pending' ELSE 'parked' END, 'exception'
    FROM spec AS s
    RETURNING id, external_key
),
raised AS (
    INSERT INTO exceptions (id, workflow, source_record_id, reason_code, detail, consequence,
                            state, closure, closed_at, owner_role, escalation_role, due_at,
                            item_id, created_at, reopen_count)
    SELECT s.id, s.workflow, 'REC-' || s.n, 'entity_mismatch', 'generated', 'low',
           CASE WHEN s.recent THEN 'needs_review' ELSE 'closed' END,
           CASE WHEN s.recent THEN NULL ELSE 'rejected' END,
           CASE WHEN s.recent THEN NULL ELSE s.raised_at + interval '1 day' END,
           s.owner, s.lead, s.raised_at + interval '3 days', i.id, s.raised_at,
           CASE WHEN s.recent THEN 1 ELSE 0 END
    FROM spec AS s
    JOIN items AS i ON i.external_key = s.id
)
-- Every exception's history: raised, a recurrence, closed, and for the open ones a reopen.
INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role, from_state,
                              to_state, version, data, at)
SELECT s.id, s.workflow, e.kind, 'erp', 'integration', NULL, 'needs_review', 0,
       jsonb_build_object('closure', 'rejected'), s.raised_at + e.after
FROM spec AS s,
     (VALUES ('raised', interval '0'), ('recurred', interval '1 hour'),
             ('closed', interval '1 day'), ('reopened', interval '2 days')) AS e (kind, after)
WHERE e.kind <> 'reopened' OR s.recent
"""


@pytest.fixture
async def history(owner_conn: asyncpg.Connection) -> None:
    await owner_conn.execute(WORKFLOW_CATALOGUE)
    await owner_conn.execute(EXCEPTIONS, PER_WORKFLOW, RECENT_EVERY)
    for table in ("exceptions", "exception_events", "review_items", "exception_corrections"):
        await owner_conn.execute(f"ANALYZE {table}")
    in_window = await owner_conn.fetchval(
        "SELECT count(*) FROM exception_events WHERE at >= now() - interval '7 days'"
    )
    # Otherwise the plan would be for an empty window, and prove less.
    assert 0 < in_window < 0.05 * await owner_conn.fetchval("SELECT count(*) FROM exception_events")


Outline = list[tuple[str, str | None]]

WINDOWED = ("workflow_measures_get_activity", "workflow_measures_get_repeats")
NOW = ("workflow_measures_get_now", "workflow_measures_get_ages")


async def explain(
    owner: asyncpg.Connection, queries: Queries, statement: str, plan: str
) -> Outline:
    await owner.execute(f"SET plan_cache_mode = {plan}")
    if statement in WINDOWED:
        await owner.execute(f"PREPARE measure (text[], integer) AS {queries[statement]}")
        execute = f"EXECUTE measure ('{{{','.join(WORKFLOWS)}}}', {DEFAULT_WINDOW_SECONDS})"
    else:
        await owner.execute(f"PREPARE measure (text[]) AS {queries[statement]}")
        execute = f"EXECUTE measure ('{{{','.join(WORKFLOWS)}}}')"
    try:
        return plan_outline(await owner.fetchval(f"EXPLAIN (FORMAT JSON) {execute}"))
    finally:
        await owner.execute("DEALLOCATE measure")


# A pool reuses prepared statements, so the generic plan is the one that runs in the end;
# the custom plan is the one of its first executions.
PLANS = pytest.mark.parametrize(
    "plan", ["force_custom_plan", "force_generic_plan"], ids=["custom", "generic"]
)


@PLANS
@pytest.mark.parametrize("statement", WINDOWED)
async def test_windowed_measures_read_only_the_window_of_events(
    history: None, owner_conn: asyncpg.Connection, queries: Queries, statement: str, plan: str
) -> None:
    outline = await explain(owner_conn, queries, statement, plan)

    assert WINDOW_INDEX in {name for _, name in outline}, outline
    assert ("Seq Scan", "exception_events") not in outline, outline
    assert ("Seq Scan", "exceptions") not in outline, outline


@PLANS
@pytest.mark.parametrize("statement", NOW)
async def test_measures_of_now_read_only_the_open_exceptions(
    history: None, owner_conn: asyncpg.Connection, queries: Queries, statement: str, plan: str
) -> None:
    outline = await explain(owner_conn, queries, statement, plan)

    assert OPEN_INDEXES & {name for _, name in outline}, outline
    assert ("Seq Scan", "exceptions") not in outline, outline
    assert ("Seq Scan", "exception_events") not in outline, outline
    assert ("Seq Scan", "review_items") not in outline, outline
