-- Every read of decisions names the row that supersedes each (an override or an overturn)
-- and its confirmation, if any: a decision's status (PROVISIONAL, EFFECTIVE, SUPERSEDED;
-- migration 0020) is read from them.
--
-- Both are probed per decision read, by their unique keys (review_decisions_one_overturn_each,
-- decision_confirmations' key), in a LATERAL whose LIMIT keeps it a probe: as plain LEFT
-- JOINs the planner merged the decisions read with every superseding row there is, in
-- supersedes order, so reading 50 decisions walked all the history's overturns (10,000 at
-- 1M items, 1.3 ms of a 1.8 ms read; tests/migrations/test_decision_pages_plan.py).

-- name: decisions_get_by_ids
SELECT d.*, s.id AS superseded_by, c.confirmed_by, c.confirmed_at
FROM review_decisions AS d
LEFT JOIN LATERAL (SELECT s.id FROM review_decisions AS s WHERE s.supersedes = d.id LIMIT 1)
    AS s ON true
LEFT JOIN LATERAL (SELECT c.confirmed_by, c.confirmed_at FROM decision_confirmations AS c
                   WHERE c.decision_id = d.id LIMIT 1) AS c ON true
WHERE d.id = ANY (:ids::bigint[]);

-- name: decisions_get_by_item_ids
-- Every decision of each item, oldest first.
SELECT d.*, s.id AS superseded_by, c.confirmed_by, c.confirmed_at
FROM review_decisions AS d
LEFT JOIN LATERAL (SELECT s.id FROM review_decisions AS s WHERE s.supersedes = d.id LIMIT 1)
    AS s ON true
LEFT JOIN LATERAL (SELECT c.confirmed_by, c.confirmed_at FROM decision_confirmations AS c
                   WHERE c.decision_id = d.id LIMIT 1) AS c ON true
WHERE d.item_id = ANY (:item_ids::bigint[])
ORDER BY d.item_id, d.id;

-- name: decisions_get_pages
-- One page of decisions for each queue of :queues (a dashboard's), oldest first, whatever
-- their status: one statement for every queue of a request.
SELECT p.*
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT d.*, s.id AS superseded_by, c.confirmed_by, c.confirmed_at
    FROM review_decisions AS d
    LEFT JOIN LATERAL (SELECT s.id FROM review_decisions AS s WHERE s.supersedes = d.id
                       LIMIT 1) AS s ON true
    LEFT JOIN LATERAL (SELECT c.confirmed_by, c.confirmed_at FROM decision_confirmations AS c
                       WHERE c.decision_id = d.id LIMIT 1) AS c ON true
    -- A range, not `d.queue = q.name`, as in items_get_pages: the walk stays on this
    -- queue's rows of review_decisions_queue_id, in id order.
    WHERE d.queue >= q.name AND d.queue <= q.name
      AND d.id > :after_id
    ORDER BY d.queue, d.id
    LIMIT :page_size
) AS p
ORDER BY p.queue, p.id;

-- name: decision_get_position
-- Where a decision sits in its queue's commit-ordered stream: at the transaction that made
-- it effective (its own, or its confirmation's). `in_stream` is false for a provisional
-- decision nobody has confirmed: the stream has not delivered it.
SELECT d.queue, coalesce(c.txid, d.txid) AS txid, d.id,
       NOT d.provisional OR c.decision_id IS NOT NULL AS in_stream
FROM review_decisions AS d
LEFT JOIN decision_confirmations AS c ON c.decision_id = d.id
WHERE d.id = :decision_id;

-- name: decisions_get_stream_horizon
-- Every transaction below this id has ended: no decision below it can still appear.
SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon;

-- name: decisions_get_after_position
-- The next decisions of a queue in commit-safe order: after the position, and only from
-- transactions below the horizon, so a late commit can never land behind the cursor.
-- Each decision is delivered once, when it takes effect: a decision that needed no second
-- review at its own transaction, a provisional one at its confirmation's (an override is a
-- decision of its own). A provisional decision is never delivered before it is confirmed,
-- and one that was overridden never is: an integration acting on this stream acts only on
-- effective decisions. `position_txid` is the position's transaction.
WITH effective AS (
    (SELECT d.txid, d.id
     FROM review_decisions AS d
     WHERE d.queue = :queue
       AND (d.txid, d.id) > (:after_txid::xid8, :after_id::bigint)
       AND d.txid < pg_snapshot_xmin(pg_current_snapshot())
       AND NOT d.provisional
     ORDER BY d.txid, d.id
     LIMIT :page_size)
    UNION ALL
    (SELECT c.txid, c.decision_id
     FROM decision_confirmations AS c
     WHERE c.queue = :queue
       AND (c.txid, c.decision_id) > (:after_txid::xid8, :after_id::bigint)
       AND c.txid < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY c.txid, c.decision_id
     LIMIT :page_size)
    ORDER BY 1, 2
    LIMIT :page_size
)
SELECT d.*, e.txid AS position_txid, s.id AS superseded_by, c.confirmed_by, c.confirmed_at
FROM effective AS e
JOIN review_decisions AS d ON d.id = e.id
LEFT JOIN LATERAL (SELECT s.id FROM review_decisions AS s WHERE s.supersedes = d.id LIMIT 1)
    AS s ON true
LEFT JOIN LATERAL (SELECT c.confirmed_by, c.confirmed_at FROM decision_confirmations AS c
                   WHERE c.decision_id = d.id LIMIT 1) AS c ON true
ORDER BY e.txid, e.id;

-- name: decision_confirmations_get_by_decision_ids
-- The second reviews that confirmed these decisions (migration 0020), for audit packs.
SELECT c.* FROM decision_confirmations AS c WHERE c.decision_id = ANY (:decision_ids::bigint[])
ORDER BY c.decision_id;
