-- name: items_upsert
-- Idempotent on (origin queue, external key). A key seen before keeps its item; if the
-- item is still pending and the payload differs, the payload is replaced (a re-upload) and
-- any decision under the current lease will be refused with EvidenceChanged.
-- Each item created or re-uploaded is written to its timeline (`item_events`, kind
-- `enqueued` or `reuploaded`, with the evidence hash), by the enqueuing token's user and
-- role; an enqueue that changes nothing writes nothing.
WITH upserted AS (
    INSERT INTO review_items AS i
        (origin_queue, queue, external_key, priority, payload, evidence_hash)
    SELECT :queue, :queue, t.external_key, t.priority, t.payload, t.evidence_hash
    FROM unnest(:external_keys::text[], :priorities::integer[], :payloads::jsonb[], :evidence_hashes::text[])
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
    RETURNING i.id, i.queue, i.external_key, i.evidence_hash, (i.xmax = 0) AS created
),
timeline AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, detail)
    SELECT u.id, u.queue, CASE WHEN u.created THEN 'enqueued' ELSE 'reuploaded' END,
           :actor, :actor_role, jsonb_build_object('evidence_hash', u.evidence_hash)
    FROM upserted AS u
),
-- One notification per batch, with the ids whose evidence changed (bounded: the
-- listener treats `more` as "re-read everything of this queue").
notified AS (
    SELECT casework_hint(
        kind => 'enqueued', queue => :queue::text,
        created_count => count(*) FILTER (WHERE u.created),
        evidence_changed => (array_agg(u.id ORDER BY u.id) FILTER (WHERE NOT u.created))[1:100],
        evidence_cut_short => count(*) FILTER (WHERE NOT u.created) > 100) AS notification
    FROM upserted AS u
    HAVING count(*) > 0
)
SELECT u.external_key, u.created, notified.notification
FROM upserted AS u
LEFT JOIN notified ON true;

-- name: items_get_by_external_keys
SELECT i.*
FROM review_items AS i
WHERE i.origin_queue = :origin_queue AND i.external_key = ANY (:external_keys::text[]);

-- name: items_get_by_ids
SELECT i.* FROM review_items AS i WHERE i.id = ANY (:ids::bigint[]);

-- name: items_get_pages
-- One page of items for each queue of :queues (a dashboard's), oldest id first, filtered by
-- derived state. :state is 'pending', 'leased', 'decided' or NULL for all.
SELECT p.*
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT i.*
    FROM review_items AS i
    -- A range, not `i.queue = q.name`: with an equality the planner takes the queue for a
    -- constant, drops it from the sort key, and may walk the primary key of every queue's
    -- items in id order instead of this queue's in review_items_queue_id (for an empty
    -- queue, the whole table).
    WHERE i.queue >= q.name AND i.queue <= q.name
      AND i.id > :after_id
      AND (:state::text IS NULL
           OR (:state = 'decided' AND i.state = 'decided')
           OR (:state = 'leased' AND i.state = 'pending' AND i.lease_expires_at > now())
           OR (:state = 'pending' AND i.state = 'pending'
               AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())))
    ORDER BY i.queue, i.id
    LIMIT :page_size
) AS p
ORDER BY p.queue, p.id;

-- name: item_claim_next
-- Takes the first claimable item of a queue under a fresh lease. An expired lease counts
-- as an abandonment; the abandonment that reaches max_abandons escalates the item instead
-- of leasing it (`escalated` is then true and the caller claims again).
-- Sends one hint (casework_hint): `claimed`, or `escalated` with the queue the item left.
-- Only a queue's holder role claims there: reviewers, or approvers in an approval queue.
-- An overdue exception waiting for review belongs to its escalation owner: it is never
-- handed out from its old owner's queue, and `overdue_exceptions` tells the caller to move
-- such exceptions (exceptions_escalate_overdue), so no cron job is needed, and a queue
-- without overdue exceptions pays for none of it.
-- A lapsed lease the claim takes over is written to the timeline (`item_events`, kind
-- `lapsed`, at the moment it ran out, with its owner); a claim of a fresh item writes none.
WITH candidate AS (
    SELECT i.id,
           i.lease_token IS NOT NULL AS lapsed,
           i.lease_owner AS lapsed_owner,
           i.lease_token AS lapsed_token,
           i.lease_started_at AS lapsed_started_at,
           i.lease_expires_at AS lapsed_at,
           i.lease_token IS NOT NULL AND i.abandon_count + 1 >= q.max_abandons AS escalates,
           q.lease_ttl_seconds,
           coalesce(q.escalation_queue, q.name) AS escalation_queue,
           q.escalation_priority_boost
    FROM review_items AS i
    JOIN queues AS q ON q.name = i.queue
    WHERE i.queue = :queue
      AND i.state = 'pending'
      AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
      AND q.holder_role = :actor_role
      -- The OR keeps this a per-row lookup by item id, made for exception items only;
      -- as a plain anti-join the planner scans every overdue exception on every claim.
      AND (i.kind = 'review'
           OR NOT EXISTS (SELECT 1 FROM exceptions AS e
                          WHERE e.item_id = i.id
                            AND e.state = 'needs_review'
                            AND e.escalated_at IS NULL
                            AND e.due_at <= now()
                            AND e.escalation_role <> i.queue))
    ORDER BY i.priority DESC, i.created_at
    LIMIT 1
    FOR UPDATE OF i SKIP LOCKED
),
claimed AS (
UPDATE review_items AS i
SET queue            = CASE WHEN c.escalates THEN c.escalation_queue ELSE i.queue END,
    priority         = CASE WHEN c.escalates THEN i.priority + c.escalation_priority_boost
                            ELSE i.priority END,
    abandon_count    = CASE WHEN c.escalates THEN 0 ELSE i.abandon_count + c.lapsed::int END,
    escalation_count = i.escalation_count + c.escalates::int,
    lease_owner      = CASE WHEN c.escalates THEN NULL ELSE :actor END,
    lease_token      = CASE WHEN c.escalates THEN NULL ELSE gen_random_uuid() END,
    lease_expires_at = CASE WHEN c.escalates THEN NULL
                            ELSE now() + make_interval(secs => c.lease_ttl_seconds) END,
    lease_count      = i.lease_count + (NOT c.escalates)::int,
    lease_started_at = CASE WHEN c.escalates THEN i.lease_started_at ELSE now() END,
    updated_at       = now()
FROM candidate AS c
WHERE i.id = c.id
RETURNING i.*, c.escalates AS escalated
),
lapse AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, at)
    SELECT c.id, :queue, 'lapsed', c.lapsed_owner, :actor_role, c.lapsed_token,
           c.lapsed_started_at, c.lapsed_at
    FROM candidate AS c
    WHERE c.lapsed
),
-- An escalation is written to the timeline too (kind `escalated`, by the claimer, with the
-- queues it left and went to). The claim itself is not: the timeline reads it from the
-- record of how its lease ended, or from the item while it is held.
escalation AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, detail)
    SELECT c.id, :queue, 'escalated', :actor, :actor_role,
           jsonb_build_object('from_queue', :queue::text, 'to_queue', c.escalation_queue)
    FROM candidate AS c
    WHERE c.escalates
)
-- Always one row: the claimed item's columns (NULL when nothing was claimed) and whether
-- overdue exceptions wait to move in or out of this queue. Each probe walks one partial
-- index in due order (ORDER BY ... LIMIT keeps even a generic plan on the index: a table
-- scan would have to sort), and counts only exceptions the move can take: one under a live
-- lease stays with its holder.
SELECT claimed.*, hint.notification,
       coalesce((SELECT true
                 FROM exceptions AS e
                 JOIN review_items AS x ON x.id = e.item_id
                 WHERE e.owner_role = :queue
                   AND e.state = 'needs_review'
                   AND e.escalated_at IS NULL
                   AND e.due_at <= now()
                   AND (x.lease_expires_at IS NULL OR x.lease_expires_at <= now())
                 ORDER BY e.due_at
                 LIMIT 1), false)
       OR coalesce((SELECT true
                    FROM exceptions AS e
                    JOIN review_items AS x ON x.id = e.item_id
                    WHERE e.escalation_role = :queue
                      AND e.state = 'needs_review'
                      AND e.escalated_at IS NULL
                      AND e.due_at <= now()
                      AND (x.lease_expires_at IS NULL OR x.lease_expires_at <= now())
                    ORDER BY e.due_at
                    LIMIT 1), false) AS overdue_exceptions
FROM (SELECT 1) AS one
LEFT JOIN claimed ON true
LEFT JOIN LATERAL (
    SELECT casework_hint(
               kind => CASE WHEN claimed.escalated THEN 'escalated' ELSE 'claimed' END,
               queue => claimed.queue, item_id => claimed.id, from_queue => :queue::text)
               AS notification
    WHERE claimed.id IS NOT NULL
) AS hint ON true;
