-- name: items_upsert
-- Idempotent on (origin queue, external key). A key seen before keeps its item; if the
-- item is still pending and the payload differs, the payload is replaced (a re-upload) and
-- any decision under the current lease will be refused with EvidenceChanged.
-- $1 queue, $2 external keys, $3 priorities, $4 payloads, $5 evidence hashes
WITH upserted AS (
    INSERT INTO review_items AS i
        (origin_queue, queue, external_key, priority, payload, evidence_hash)
    SELECT $1, $1, t.external_key, t.priority, t.payload, t.evidence_hash
    FROM unnest($2::text[], $3::integer[], $4::jsonb[], $5::text[])
        AS t (external_key, priority, payload, evidence_hash)
    -- Key order, not batch order: two batches that share keys lock them in the same order and
    -- so cannot deadlock.
    ORDER BY t.external_key
    ON CONFLICT (origin_queue, external_key) DO UPDATE
        SET payload = excluded.payload,
            evidence_hash = excluded.evidence_hash,
            updated_at = now()
        WHERE i.state = 'pending' AND i.kind = 'review'
          AND i.evidence_hash <> excluded.evidence_hash
    RETURNING i.id, i.external_key, (i.xmax = 0) AS created
),
-- One notification per batch, with the ids whose evidence changed (bounded: the
-- listener treats `more` as "re-read everything of this queue").
notified AS (
    SELECT casework_notify(json_build_object(
        'k', 'enqueued', 'q', $1::text,
        'n', count(*) FILTER (WHERE u.created),
        'e', (array_agg(u.id ORDER BY u.id) FILTER (WHERE NOT u.created))[1:100],
        'more', count(*) FILTER (WHERE NOT u.created) > 100)::text) AS notification
    FROM upserted AS u
    HAVING count(*) > 0
)
SELECT u.external_key, u.created, notified.notification
FROM upserted AS u
LEFT JOIN notified ON true;

-- name: items_get_by_external_keys
-- $1 origin queue, $2 external keys
SELECT i.*
FROM review_items AS i
WHERE i.origin_queue = $1 AND i.external_key = ANY ($2::text[]);

-- name: items_get_by_ids
-- $1 ids
SELECT i.* FROM review_items AS i WHERE i.id = ANY ($1::bigint[]);

-- name: items_page
-- One page of a queue's items, oldest id first, filtered by derived state.
-- $1 queue, $2 state filter ('pending', 'leased', 'decided' or NULL for all),
-- $3 exclusive lower bound on id, $4 page size
SELECT i.*
FROM review_items AS i
WHERE i.queue = $1
  AND i.id > $3
  AND ($2::text IS NULL
       OR ($2 = 'decided' AND i.state = 'decided')
       OR ($2 = 'leased' AND i.state = 'pending' AND i.lease_expires_at > now())
       OR ($2 = 'pending' AND i.state = 'pending'
           AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())))
ORDER BY i.id
LIMIT $4;
