-- name: decisions_get_by_ids
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.id = ANY (:ids::bigint[]);

-- name: decisions_get_by_item_ids
-- Every decision of each item, oldest first.
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.item_id = ANY (:item_ids::bigint[])
ORDER BY d.item_id, d.id;

-- name: decisions_get_page
-- One page of a queue's decisions, oldest first.
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.queue = :queue AND d.id > :after_id
ORDER BY d.id
LIMIT :page_size;

-- name: decision_get_position
-- Where a decision sits in its queue's commit-ordered stream.
SELECT d.queue, d.txid, d.id FROM review_decisions AS d WHERE d.id = :decision_id;

-- name: decisions_get_stream_horizon
-- Every transaction below this id has ended: no decision below it can still appear.
SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon;

-- name: decisions_get_after_position
-- The next decisions of a queue in commit-safe order: after the position, and only from
-- transactions below the horizon, so a late commit can never land behind the cursor.
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.queue = :queue
  AND (d.txid, d.id) > (:after_txid::xid8, :after_id::bigint)
  AND d.txid < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY d.txid, d.id
LIMIT :page_size;
