-- name: items_upsert
-- Idempotent on (origin queue, external key). A key seen before keeps its item; if the
-- item is still pending and the payload differs, the payload is replaced (a re-upload) and
-- any decision under the current lease will be refused with EvidenceChanged.
-- Each item created or re-uploaded is written to its timeline (`item_events`, kind
-- `enqueued` or `reuploaded`, with the evidence hash), by the enqueuing token's user and
-- role; an enqueue that changes nothing writes nothing.
-- A new item is due at its own :due_ats entry, else when the queue's due time for its
-- priority says (review_due_seconds), else never; a known key keeps its due time.
-- On a queue with a privacy policy, :payloads hold only the public and reference values,
-- :evidence_hashes are the salted field digests' hash, and each item names its subject
-- (:subject_refs; NULLs elsewhere) and the :policy_version that split it.
WITH upserted AS (
    INSERT INTO review_items AS i
        (origin_queue, queue, external_key, priority, payload, evidence_hash, due_at,
         subject_ref, policy_version)
    SELECT :queue, :queue, t.external_key, t.priority, t.payload, t.evidence_hash,
           coalesce(t.due_at, now() + make_interval(secs => review_due_seconds(q, t.priority))),
           t.subject_ref, :policy_version::integer
    FROM unnest(:external_keys::text[], :priorities::integer[], :payloads::jsonb[], :evidence_hashes::text[],
                :due_ats::timestamptz[], :subject_refs::text[])
        AS t (external_key, priority, payload, evidence_hash, due_at, subject_ref)
    JOIN queues AS q ON q.name = :queue
    -- Key order, not batch order: two batches that share keys lock them in the same order and
    -- so cannot deadlock.
    ORDER BY t.external_key
    ON CONFLICT (origin_queue, external_key) DO UPDATE
        SET payload = excluded.payload,
            evidence_hash = excluded.evidence_hash,
            subject_ref = excluded.subject_ref,
            policy_version = excluded.policy_version,
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

-- name: item_ids_get_enqueued_between
-- The items first enqueued to :queue (their origin queue, which never changes) from :since
-- up to, not including, :until, by their enqueue time (created_at), oldest id first: what
-- `casework export queue` packs (server/domain/quality/audit.py), read through a cursor.
-- The window is read first (review_items_created_brin: the window's blocks only), then
-- sorted: as a cursor's query, a plain ORDER BY id would be planned for its first rows, as
-- a walk of the whole table in id order (tests/migrations/test_export_plan.py).
WITH window_items AS MATERIALIZED (
    SELECT i.id
    FROM review_items AS i
    WHERE i.origin_queue = :queue
      AND i.created_at >= :since::timestamptz
      AND i.created_at < :until::timestamptz
)
SELECT w.id FROM window_items AS w ORDER BY w.id;

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
-- An escalation is written too (kind `escalated`, by the claimer, with the queues it left
-- and went to). The claim itself is not: the timeline reads it from the record of how its
-- lease ended, or from the item while it is held. Both rows come from one call of
-- casework_claim_timeline (migration 0037), made only when there is one to write: an
-- INSERT in the statement would be set up on every claim, writing or not.
--
-- Claim controls (migration 0014):
-- - Assigned items come first for their assignee: `mine` walks the caller's own live
--   assignments in the queue (review_items_assigned), and only when it finds none does
--   `general` walk the claim index over the items set aside for nobody (`reserved` false:
--   neither held nor assigned). Neither probe passes a held item or someone else's
--   assignment, however many there are.
-- - A hold or an assignment whose time has run out stays set aside until the claim path
--   clears it (items_end_reservations). While one waits, `general` takes nothing and
--   `reservations_ended` tells the caller to clear them and claim again, so the item comes
--   back with its priority on this same claim. The probe skips an ended one that another
--   statement has locked (one clearing it, most likely): a claim never waits for it, and
--   never refuses to claim because of one it cannot clear.
-- - Lease limit: in a queue with max_leases_per_reviewer, `settings` counts the caller's live
--   leases through casework_live_leases, which serialises one reviewer's claims in the queue
--   (see migration 0014): of concurrent claims by one reviewer, exactly as many succeed as
--   the limit leaves room for. At the limit nothing is claimed and `lease_limit_reached`
--   says so. A queue without a limit never calls it.
-- - Overdue items, in a queue that names an overdue_queue, belong there: they are never
--   handed out here, and `overdue_items` tells the caller to move them
--   (items_escalate_overdue), as with exceptions.
-- - Four-eyes (migration 0019): an item whose `barred_claimer` is the caller (the first
--   decider of a decision waiting for second review, the decider of a decision sampled
--   for QA) is passed over by both probes.
WITH settings AS MATERIALIZED (
    SELECT q.lease_ttl_seconds, q.max_abandons,
           coalesce(q.escalation_queue, q.name) AS escalation_queue,
           q.escalation_priority_boost,
           q.overdue_queue IS NOT NULL AS moves_overdue,
           q.max_leases_per_reviewer AS lease_limit,
           CASE WHEN q.max_leases_per_reviewer IS NULL THEN true
                ELSE casework_live_leases(:queue, :actor) < q.max_leases_per_reviewer
           END AS has_room
    FROM queues AS q
    WHERE q.name = :queue
      AND q.holder_role = :actor_role
),
-- A hold or an assignment that has ended without being cleared: one probe of a partial
-- index that holds only held and assigned items (ORDER BY ... LIMIT: see the end). The lock
-- lasts as long as this statement.
ended_reservations AS MATERIALIZED (
    SELECT x.id
    FROM review_items AS x
    WHERE x.queue = :queue
      AND x.state = 'pending'
      AND x.reserved_until <= now()
    ORDER BY x.reserved_until
    LIMIT 1
    FOR UPDATE OF x SKIP LOCKED
),
-- The caller's own assignments, first. Each probe selects the lease columns from the row
-- it locks: the row as it is now, not as the statement's snapshot saw it. The settings are
-- read through scalar subqueries, computed once before the walk (a one-time filter: no
-- room, or the wrong role, and the index is not entered at all).
mine AS MATERIALIZED (
    SELECT i.id, i.lease_token, i.lease_owner, i.lease_started_at, i.lease_expires_at,
           i.abandon_count
    FROM review_items AS i
    WHERE i.queue = :queue
      AND i.state = 'pending'
      AND i.assigned_to = :actor
      AND (i.assigned_until IS NULL OR i.assigned_until > now())
      AND i.held_until IS NULL
      AND i.barred_claimer IS DISTINCT FROM :actor
      AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
      AND (SELECT s.has_room FROM settings AS s)
      AND (NOT (SELECT s.moves_overdue FROM settings AS s)
           OR i.due_at IS NULL OR i.due_at > now())
      -- Only review items are assigned (item_assign): no exception's due time to check.
    ORDER BY i.priority DESC, i.created_at
    LIMIT 1
    FOR UPDATE OF i SKIP LOCKED
),
general AS MATERIALIZED (
    SELECT i.id, i.lease_token, i.lease_owner, i.lease_started_at, i.lease_expires_at,
           i.abandon_count
    FROM review_items AS i
    WHERE i.queue = :queue
      AND i.state = 'pending'
      AND NOT i.reserved
      AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
      AND i.barred_claimer IS DISTINCT FROM :actor
      AND (SELECT s.has_room FROM settings AS s)
      AND NOT EXISTS (SELECT 1 FROM mine)
      AND NOT EXISTS (SELECT 1 FROM ended_reservations)
      AND (NOT (SELECT s.moves_overdue FROM settings AS s)
           OR i.due_at IS NULL OR i.due_at > now())
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
candidate AS (
    SELECT p.id,
           p.lease_token IS NOT NULL AS lapsed,
           p.lease_owner AS lapsed_owner,
           p.lease_token AS lapsed_token,
           p.lease_started_at AS lapsed_started_at,
           p.lease_expires_at AS lapsed_at,
           p.lease_token IS NOT NULL AND p.abandon_count + 1 >= s.max_abandons AS escalates,
           s.lease_ttl_seconds,
           s.escalation_queue,
           s.escalation_priority_boost
    FROM (SELECT * FROM mine UNION ALL SELECT * FROM general) AS p, settings AS s
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
    -- An assignment belongs to its queue: an item that moves on leaves it behind.
    assigned_to      = CASE WHEN c.escalates THEN NULL ELSE i.assigned_to END,
    assigned_until   = CASE WHEN c.escalates THEN NULL ELSE i.assigned_until END,
    updated_at       = now()
FROM candidate AS c
WHERE i.id = c.id
RETURNING i.*, c.escalates AS escalated
)
-- Always one row: the claimed item's columns (NULL when nothing was claimed) and what the
-- caller must do before claiming again: move overdue exceptions or items, clear ended
-- holds and assignments, or answer that the lease limit is reached. Each probe walks one
-- partial index in due order (ORDER BY ... LIMIT keeps even a generic plan on the index: a
-- table scan would have to sort), and counts only what the move can take: one under a live
-- lease stays with its holder, one held stays until its hold ends.
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
                    LIMIT 1), false) AS overdue_exceptions,
       coalesce((SELECT s.moves_overdue FROM settings AS s), false)
       AND coalesce((SELECT true
                     FROM review_items AS x
                     WHERE x.queue = :queue
                       AND x.state = 'pending'
                       AND x.due_at <= now()
                       AND (x.lease_expires_at IS NULL OR x.lease_expires_at <= now())
                       AND (x.held_until IS NULL OR x.held_until <= now())
                     ORDER BY x.due_at
                     LIMIT 1), false) AS overdue_items,
       claimed.id IS NULL AND EXISTS (SELECT 1 FROM ended_reservations) AS reservations_ended,
       NOT coalesce((SELECT s.has_room FROM settings AS s), true) AS lease_limit_reached,
       (SELECT s.lease_limit FROM settings AS s) AS lease_limit
FROM (SELECT 1) AS one
LEFT JOIN claimed ON true
LEFT JOIN LATERAL (
    SELECT casework_hint(
               kind => CASE WHEN claimed.escalated THEN 'escalated' ELSE 'claimed' END,
               queue => claimed.queue, item_id => claimed.id, from_queue => :queue::text)
               AS notification
    WHERE claimed.id IS NOT NULL
) AS hint ON true
-- The timeline rows of a lapse taken over or an escalation (casework_claim_timeline,
-- migration 0037), written only when there is one: a fresh item's claim writes none.
LEFT JOIN LATERAL (
    SELECT casework_claim_timeline(
               item_id => c.id, queue => :queue::text, actor => :actor::text,
               actor_role => :actor_role::text, escalates => c.escalates,
               escalation_queue => c.escalation_queue, lapsed => c.lapsed,
               lapsed_owner => c.lapsed_owner, lapsed_token => c.lapsed_token,
               lapsed_started_at => c.lapsed_started_at, lapsed_at => c.lapsed_at)
               AS written
    FROM candidate AS c
    WHERE c.lapsed OR c.escalates
) AS timeline ON true;
