-- name: queue_backlog
-- The figures a backlog subscriber sees: pending (claimable now), leased, and the age of
-- the oldest claimable item. Walks the claim index only.
-- $1 queue
SELECT count(*) FILTER (WHERE i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
           AS pending,
       count(*) FILTER (WHERE i.lease_expires_at > now()) AS leased,
       extract(epoch FROM now() - min(i.created_at)
               FILTER (WHERE i.lease_expires_at IS NULL OR i.lease_expires_at <= now()))
           AS oldest_pending_age_seconds
FROM review_items AS i
WHERE i.queue = $1 AND i.state = 'pending';

-- name: lease_next_expiry
-- The next moment a live lease in these queues runs out, after $2.
-- $1 queues, $2 after
SELECT min(i.lease_expires_at) AS next_expiry
FROM review_items AS i
WHERE i.queue = ANY ($1::text[])
  AND i.state = 'pending'
  AND i.lease_token IS NOT NULL
  AND i.lease_expires_at > $2;

-- name: leases_expired_between
-- Leases that ran out in (after, until]: what the expiry timer announces. Reads only.
-- $1 queues, $2 after, $3 until
SELECT i.id, i.queue, i.lease_owner, i.lease_expires_at
FROM review_items AS i
WHERE i.queue = ANY ($1::text[])
  AND i.state = 'pending'
  AND i.lease_token IS NOT NULL
  AND i.lease_expires_at > $2
  AND i.lease_expires_at <= $3
ORDER BY i.lease_expires_at, i.id;

-- name: decision_position
-- Where a decision sits in its queue's commit-ordered stream.
-- $1 decision id
SELECT d.queue, d.txid, d.id FROM review_decisions AS d WHERE d.id = $1;

-- name: decision_stream_horizon
-- Every transaction below this id has ended: no decision below it can still appear.
SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon;

-- name: decisions_after_position
-- The next decisions of a queue in commit-safe order: after the position, and only from
-- transactions below the horizon, so a late commit can never land behind the cursor.
-- $1 queue, $2 position txid, $3 position id, $4 page size
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.queue = $1
  AND (d.txid, d.id) > ($2::xid8, $3::bigint)
  AND d.txid < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY d.txid, d.id
LIMIT $4;
