"""Review history to search: N items over 50 queues, with their decisions and timeline.

`build_history(conn, items)` fills a migrated, empty database as its owner, in a few
INSERT ... SELECT generate_series statements, then VACUUM ANALYZE. Used by the search plan
tests (tests/search, once per session, as a template) and by bench/search_bench.py.

The mix, drawn from seeded hashes of the item's number (the same database every time):
- 48 working queues `search-00` … `search-47` of skewed sizes (the first holds about 14% of
  the items, the last about 1%), all escalating to `search-senior`; `search-00` … `search-07`
  send rejections to a second review in `search-second`; `search-00` … `search-23` have due
  times; `search-40` … `search-46` carry subject refs; `search-47` also holds a few parked
  exception items (their exceptions closed).
- created in id order at a steady ITEMS_PER_YEAR, so 100k items are a year of history and
  1M are ten years of it: a month holds as many decisions at either size, as it would in a
  deployment whose history grows. The live work does not grow with the history either: the
  last RECENT_ITEMS (about a week) hold most of the pending, leased and
  awaiting-second-review items, and about STALE_PENDING older items still wait; the rest is
  decided.
- decisions by 8 of 60 reviewers per queue, 72% approve / 28% reject with their reason codes,
  5% escalated first (decided in `search-senior`), 1% overturned by an approver, 5% with a
  note; provisional decisions on the items awaiting second review.
- pending items: some held, some assigned, some overdue; notes (timeline `noted`) on 3%.

Every row satisfies the schema's constraints, foreign keys included: the load runs with
session_replication_role = replica (so the per-row triggers, foreign-key checks included,
stay quiet: history carries no outbox events and no work list), and the rows are built to be
valid; tests/search/test_search_history.py checks the foreign keys on a small build.
"""

from __future__ import annotations

import asyncpg

WORKING_QUEUES = 48
ITEMS_PER_YEAR = 100_000
# About a week at ITEMS_PER_YEAR, whatever the size of the history.
RECENT_ITEMS = 2_000
# Old items still pending (forgotten, stuck): a few hundred at any size.
STALE_PENDING = 400
SENIOR = "search-senior"
SECOND = "search-second"
EXCEPTION_QUEUE = "search-47"
# The reason codes of every queue, by verdict: the catalogue a decision's code must be in.
REASONS = {
    "approve": ("documents_ok", "low_risk"),
    "reject": ("name_mismatch", "address_mismatch", "fraud_signal", "expired_document"),
    "escalate": ("needs_senior",),
}
HOLD_REASON = "awaiting_documents"


def working_queue(index: int) -> str:
    return f"search-{index:02d}"


CATALOGUE = f"""
INSERT INTO queues (name, lease_ttl_seconds) VALUES ('{SENIOR}', 600), ('{SECOND}', 600);
INSERT INTO queues (name, lease_ttl_seconds, escalation_queue, due_seconds,
                    second_review_verdicts, second_review_queue)
SELECT 'search-' || lpad(n::text, 2, '0'), 300, '{SENIOR}',
       CASE WHEN n < 24 THEN 86400 END,
       CASE WHEN n < 8 THEN ARRAY['reject'] ELSE '{{}}'::text[] END,
       CASE WHEN n < 8 THEN '{SECOND}' END
FROM generate_series(0, {WORKING_QUEUES - 1}) AS n;
INSERT INTO reason_codes (queue, code, label, verdicts)
SELECT q.name, r.code, replace(r.code, '_', ' '), ARRAY[r.verdict]
FROM queues AS q,
     (VALUES {", ".join(f"('{c}', '{v}')" for v, codes in REASONS.items() for c in codes)})
         AS r (code, verdict)
WHERE q.name LIKE 'search-%';
INSERT INTO hold_reasons (queue, code, label)
SELECT name, '{HOLD_REASON}', 'Awaiting documents' FROM queues WHERE name LIKE 'search-%';
INSERT INTO workflows (name, approval_queue) VALUES ('search_flow', '{SENIOR}');
INSERT INTO exception_reasons (workflow, code, label, owner_role, escalation_role,
                               allowed_actions, due_low_seconds, due_medium_seconds,
                               due_high_seconds, due_critical_seconds)
VALUES ('search_flow', 'entity_mismatch', 'Entity mismatch', '{EXCEPTION_QUEUE}', '{SENIOR}',
        ARRAY['close_exception'], 259200, 86400, 14400, 3600);
"""

# One row per item: what it is, drawn from seeded hashes of its number g (h1 … h8).
PLAN = f"""
CREATE TEMP TABLE search_plan AS
WITH drawn AS (
    SELECT g,
           hashint8extended(g, 1) & 2147483647 AS h1, hashint8extended(g, 2) & 2147483647 AS h2,
           hashint8extended(g, 3) & 2147483647 AS h3, hashint8extended(g, 4) & 2147483647 AS h4,
           hashint8extended(g, 5) & 2147483647 AS h5, hashint8extended(g, 6) & 2147483647 AS h6,
           hashint8extended(g, 7) & 2147483647 AS h7, hashint8extended(g, 8) & 2147483647 AS h8,
           g > $1::bigint - {RECENT_ITEMS} AS recent,
           $2::timestamptz - make_interval(secs => 365 * 86400.0 * ($1::bigint - g)
                                                    / {ITEMS_PER_YEAR} + 600) AS created_at
    FROM generate_series(1, $1::bigint) AS g
), classed AS (
    SELECT d.*,
           floor({WORKING_QUEUES} * power((h1 % 10000) / 10000.0, 2))::int AS qi,
           h2 % 10000 AS u
    FROM drawn AS d
), kinds AS (
    SELECT c.*,
           CASE WHEN qi = {WORKING_QUEUES - 1} AND u < 300 THEN 'parked'
                WHEN recent AND u < 4000 THEN 'pending'
                WHEN recent AND u < 5000 THEN 'leased'
                WHEN recent AND u < 5400 AND qi < 8 THEN 'awaiting'
                WHEN NOT recent AND u < {STALE_PENDING * 10_000} / $1::bigint THEN 'pending'
                ELSE 'decided' END AS kind
    FROM classed AS c
), verdicts AS (
    -- Only rejections go to a second review.
    SELECT k.*, CASE WHEN k.kind <> 'awaiting' AND h5 % 100 < 72 THEN 'approve'
                     ELSE 'reject' END AS verdict
    FROM kinds AS k
)
SELECT k.g, k.created_at, k.kind, k.verdict,
       'search-' || lpad(k.qi::text, 2, '0') AS origin,
       k.qi,
       CASE WHEN k.verdict = 'approve' THEN (ARRAY{list(REASONS["approve"])})[1 + k.h5 % 5 / 4]
            ELSE (ARRAY{list(REASONS["reject"])})[1 + k.h5 % 4] END AS reason,
       'rev-' || lpad(((k.qi * 3 + k.h6 % 8) % 60)::text, 2, '0') AS reviewer,
       k.kind = 'decided' AND k.h4 % 100 < 5 AS escalated,
       k.kind = 'decided' AND k.h4 % 100 = 5 AS overturned,
       k.kind = 'awaiting' AS awaiting,
       k.kind = 'pending' AND k.h3 % 10 = 0 AS held,
       k.kind = 'pending' AND k.h3 % 10 IN (1, 2) AS assigned,
       CASE WHEN k.h7 % 100 < 70 THEN 0 WHEN k.h7 % 100 < 90 THEN 1 + k.h7 % 3
            WHEN k.h7 % 100 < 98 THEN 10 ELSE 100 END AS priority,
       -- Decided an hour to two days after arrival (never in the future: the recent ones
       -- earlier), after 1 to 10 minutes' work.
       least(k.created_at + make_interval(secs => 3600 + k.h8 % 172800),
             $2::timestamptz - interval '1 second') AS decided_at,
       make_interval(secs => 60 + k.h8 % 540) AS handling,
       k.h3, k.h4, k.h6, k.h8
FROM verdicts AS k
"""

ITEMS = f"""
INSERT INTO review_items
    (id, origin_queue, queue, external_key, priority, payload, evidence_hash, state, kind,
     lease_owner, lease_token, lease_expires_at, lease_started_at, lease_count,
     escalation_count, created_at, updated_at, decided_at, assigned_to, held_until, hold_reason,
     due_at, barred_claimer, awaiting_decision_id, subject_ref)
OVERRIDING SYSTEM VALUE
SELECT p.g, p.origin,
       CASE WHEN p.escalated THEN '{SENIOR}' WHEN p.awaiting THEN '{SECOND}' ELSE p.origin END,
       (ARRAY['app-', 'inv-', 'cus-'])[1 + p.qi % 3] || p.g, p.priority, '{{}}'::jsonb,
       repeat('a', 64),
       CASE p.kind WHEN 'decided' THEN 'decided' WHEN 'parked' THEN 'parked' ELSE 'pending' END,
       CASE WHEN p.kind = 'parked' THEN 'exception' ELSE 'review' END,
       CASE WHEN p.kind = 'leased' THEN p.reviewer END,
       CASE WHEN p.kind = 'leased' THEN gen_random_uuid() END,
       CASE WHEN p.kind = 'leased' THEN $1::timestamptz + interval '4 minutes' END,
       CASE WHEN p.kind = 'leased' THEN $1::timestamptz - interval '1 minute'
            WHEN p.kind = 'decided' THEN p.decided_at - p.handling END,
       CASE WHEN p.kind IN ('leased', 'decided', 'awaiting') THEN 1 + (p.h8 % 7 = 0)::int
            ELSE (p.h8 % 5 = 0)::int END,
       p.escalated::int,
       p.created_at,
       CASE WHEN p.overturned THEN least(p.decided_at + interval '1 hour', $1::timestamptz)
            WHEN p.kind IN ('decided', 'awaiting') THEN p.decided_at
            WHEN p.held OR p.assigned THEN p.created_at + interval '1 hour'
            ELSE p.created_at END,
       CASE WHEN p.kind = 'decided' THEN p.decided_at END,
       CASE WHEN p.assigned THEN p.reviewer END,
       CASE WHEN p.held THEN $1::timestamptz + interval '2 days' END,
       CASE WHEN p.held THEN '{HOLD_REASON}' END,
       CASE WHEN p.qi < 24 THEN p.created_at + interval '1 day' END,
       CASE WHEN p.awaiting THEN p.reviewer END,
       CASE WHEN p.awaiting THEN p.g END,
       CASE WHEN p.qi BETWEEN 40 AND 46 THEN 'subj-' || (p.h6 % 200000) END
FROM search_plan AS p
ORDER BY p.g
"""

# An item's own decision has the item's number as its id; an escalation before it, N + g;
# an overturn of it, 2N + g. Ids and times then rise together, as a history is written.
DECISIONS = f"""
INSERT INTO review_decisions
    (id, item_id, queue, verdict, outcome, reason_code, note, reviewer, reviewer_role,
     evidence_hash, lease_token, supersedes, supersedes_decided_at, decided_at,
     lease_started_at, lease_count, item_created_at, provisional)
OVERRIDING SYSTEM VALUE
SELECT d.*
FROM (
    SELECT p.g, p.g, CASE WHEN p.escalated THEN '{SENIOR}' ELSE p.origin END,
           p.verdict, p.verdict, p.reason,
           CASE WHEN p.h3 % 20 = 7 THEN 'Checked against the registry extract.' END,
           p.reviewer, 'reviewer', repeat('a', 64), gen_random_uuid(), NULL::bigint,
           NULL::timestamptz, p.decided_at, p.decided_at - p.handling,
           1 + (p.h8 % 7 = 0)::int, p.created_at, p.awaiting
    FROM search_plan AS p WHERE p.kind IN ('decided', 'awaiting')
    UNION ALL
    SELECT $1::bigint + p.g, p.g, p.origin, 'escalate', 'escalate', 'needs_senior', NULL,
           'rev-' || lpad(((p.qi * 3 + p.h6 % 7) % 60)::text, 2, '0'), 'reviewer',
           repeat('a', 64), gen_random_uuid(), NULL, NULL, p.decided_at - p.handling * 3,
           p.decided_at - p.handling * 4, 1, p.created_at, false
    FROM search_plan AS p WHERE p.escalated
    UNION ALL
    SELECT 2 * $1::bigint + p.g, p.g, CASE WHEN p.escalated THEN '{SENIOR}' ELSE p.origin END,
           'overturn', CASE p.verdict WHEN 'approve' THEN 'reject' ELSE 'approve' END,
           CASE p.verdict WHEN 'approve' THEN 'name_mismatch' ELSE 'documents_ok' END,
           'Overturned on appeal.', 'approver-' || (p.h6 % 5), 'approver', repeat('a', 64),
           NULL, p.g, p.decided_at, least(p.decided_at + interval '1 hour', $2::timestamptz),
           NULL, NULL,
           p.created_at, false
    FROM search_plan AS p WHERE p.overturned
) AS d
"""

EVENTS = """
INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                         lease_started_at, at, recorded_at, body)
SELECT p.g, p.origin, 'enqueued', 'search-intake', 'integration', NULL::uuid,
       NULL::timestamptz, p.created_at,
       p.created_at, NULL
FROM search_plan AS p
UNION ALL
SELECT p.g, p.origin, 'escalated', p.reviewer, 'reviewer', NULL, NULL,
       p.decided_at - p.handling * 3, p.decided_at - p.handling * 3, NULL
FROM search_plan AS p WHERE p.escalated
UNION ALL
SELECT p.g, p.origin, 'lapsed', p.reviewer, 'reviewer', gen_random_uuid(),
       p.created_at + interval '1 minute', p.created_at + interval '6 minutes',
       p.created_at + interval '6 minutes', NULL
FROM search_plan AS p WHERE p.kind = 'decided' AND p.h4 % 50 = 17
UNION ALL
SELECT p.g, p.origin, 'noted', p.reviewer, 'reviewer', NULL, NULL,
       p.created_at + interval '30 minutes', p.created_at + interval '30 minutes',
       'Asked the applicant for a clearer scan.'
FROM search_plan AS p WHERE p.h3 % 33 = 5
UNION ALL
SELECT p.g, p.origin, CASE WHEN p.held THEN 'held' ELSE 'assigned' END, 'lead-' || p.qi,
       'manager', NULL, NULL, p.created_at + interval '1 hour', p.created_at + interval '1 hour',
       NULL
FROM search_plan AS p WHERE p.held OR p.assigned
"""

EXCEPTIONS = f"""
INSERT INTO exceptions (id, workflow, source_record_id, reason_code, detail, consequence,
                        state, closure, owner_role, escalation_role, due_at, item_id,
                        created_at, updated_at, closed_at)
SELECT 'exc_' || lpad(p.g::text, 20, '0'), 'search_flow', 'rec-' || p.g, 'entity_mismatch',
       'Entity mismatch', 'medium', 'closed', 'corrected', '{EXCEPTION_QUEUE}', '{SENIOR}',
       p.created_at + interval '1 day', p.g, p.created_at, p.created_at + interval '2 hours',
       p.created_at + interval '2 hours'
FROM search_plan AS p WHERE p.kind = 'parked'
"""

# The secondary indexes (and the unique constraints they back) of the tables the load fills:
# built once after the load instead of row by row during it, about four times faster.
SECONDARY_INDEXES = """
SELECT c.relname AS name, t.relname AS table_name, pg_get_indexdef(i.indexrelid) AS definition,
       con.conname AS constraint_name, pg_get_constraintdef(con.oid) AS constraint_definition
FROM pg_index AS i
JOIN pg_class AS c ON c.oid = i.indexrelid
JOIN pg_class AS t ON t.oid = i.indrelid
LEFT JOIN pg_constraint AS con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
WHERE t.relname IN ('review_items', 'review_decisions', 'item_events')
  AND NOT i.indisprimary
ORDER BY t.relname, c.relname
"""

IDENTITIES = """
SELECT setval(pg_get_serial_sequence('review_items', 'id'), (SELECT max(id) FROM review_items));
SELECT setval(pg_get_serial_sequence('review_decisions', 'id'),
              (SELECT max(id) FROM review_decisions));
"""


async def build_history(conn: asyncpg.Connection, items: int) -> None:
    """Fill the (migrated, empty) database `conn` is connected to, as its owner."""
    await conn.execute(CATALOGUE)
    async with conn.transaction():
        now = await conn.fetchval("SELECT date_trunc('second', now())")
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
        indexes = await conn.fetch(SECONDARY_INDEXES)
        for index in indexes:
            if index["constraint_name"] is not None:
                table, constraint = index["table_name"], index["constraint_name"]
                await conn.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{constraint}"')
            else:
                await conn.execute(f'DROP INDEX "{index["name"]}"')
        await conn.execute(PLAN, items, now)
        await conn.execute(ITEMS, now)
        await conn.execute(DECISIONS, items, now)
        await conn.execute(EVENTS)
        await conn.execute(EXCEPTIONS)
        await conn.execute("DROP TABLE search_plan")
        # Rebuilt as they were (a unique one checks its rows as it is built).
        for index in indexes:
            if index["constraint_name"] is not None:
                await conn.execute(
                    f"ALTER TABLE {index['table_name']} ADD CONSTRAINT "
                    f'"{index["constraint_name"]}" {index["constraint_definition"]}'
                )
            else:
                await conn.execute(index["definition"])
        await conn.execute(IDENTITIES)
    await conn.execute("VACUUM ANALYZE")
