-- name: item_claim_next
-- Takes the first claimable item of a queue under a fresh lease. An expired lease counts
-- as an abandonment; the abandonment that reaches max_abandons escalates the item instead
-- of leasing it (`escalated` is then true and the caller claims again).
-- Sends one hint (casework_notify): `claimed`, or `escalated` with the queue the item left.
-- Only a queue's holder role claims there: reviewers, or approvers in an approval queue.
-- An overdue exception waiting for review belongs to its escalation owner: it is never
-- handed out from its old owner's queue, and `overdue_exceptions` tells the caller to move
-- such exceptions (exceptions_escalate_overdue), so no cron job is needed, and a queue
-- without overdue exceptions pays for none of it.
-- $1 queue, $2 lease owner, $3 the caller's role
WITH candidate AS (
    SELECT i.id,
           i.lease_token IS NOT NULL AS lapsed,
           i.lease_token IS NOT NULL AND i.abandon_count + 1 >= q.max_abandons AS escalates,
           q.lease_ttl_seconds,
           coalesce(q.escalation_queue, q.name) AS escalation_queue,
           q.escalation_priority_boost
    FROM review_items AS i
    JOIN queues AS q ON q.name = i.queue
    WHERE i.queue = $1
      AND i.state = 'pending'
      AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
      AND q.holder_role = $3
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
    lease_owner      = CASE WHEN c.escalates THEN NULL ELSE $2 END,
    lease_token      = CASE WHEN c.escalates THEN NULL ELSE gen_random_uuid() END,
    lease_expires_at = CASE WHEN c.escalates THEN NULL
                            ELSE now() + make_interval(secs => c.lease_ttl_seconds) END,
    lease_count      = i.lease_count + (NOT c.escalates)::int,
    updated_at       = now()
FROM candidate AS c
WHERE i.id = c.id
RETURNING i.*, c.escalates AS escalated
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
                 WHERE e.owner_role = $1
                   AND e.state = 'needs_review'
                   AND e.escalated_at IS NULL
                   AND e.due_at <= now()
                   AND (x.lease_expires_at IS NULL OR x.lease_expires_at <= now())
                 ORDER BY e.due_at
                 LIMIT 1), false)
       OR coalesce((SELECT true
                    FROM exceptions AS e
                    JOIN review_items AS x ON x.id = e.item_id
                    WHERE e.escalation_role = $1
                      AND e.state = 'needs_review'
                      AND e.escalated_at IS NULL
                      AND e.due_at <= now()
                      AND (x.lease_expires_at IS NULL OR x.lease_expires_at <= now())
                    ORDER BY e.due_at
                    LIMIT 1), false) AS overdue_exceptions
FROM (SELECT 1) AS one
LEFT JOIN claimed ON true
LEFT JOIN LATERAL (
    SELECT casework_notify(json_build_object(
               'k', CASE WHEN claimed.escalated THEN 'escalated' ELSE 'claimed' END,
               'q', claimed.queue, 'i', claimed.id, 'from', $1::text)::text) AS notification
    WHERE claimed.id IS NOT NULL
) AS hint ON true;

-- name: lease_renew
-- Fence: the token must match a live lease of the caller on a pending item, in a queue the
-- caller's token covers.
-- $1 item id, $2 lease token, $3 lease owner, $4 the queues of the caller's token (NULL: all)
WITH renewed AS (
UPDATE review_items AS i
SET lease_expires_at = now() + make_interval(secs => q.lease_ttl_seconds),
    updated_at = now()
FROM queues AS q
WHERE q.name = i.queue
  AND i.id = $1
  AND i.lease_token = $2
  AND i.lease_owner = $3
  AND i.state = 'pending'
  AND i.lease_expires_at > now()
  AND ($4::text[] IS NULL OR i.queue = ANY ($4))
RETURNING i.*
)
SELECT renewed.*, hint.notification
FROM renewed,
     casework_notify(json_build_object(
         'k', 'renewed', 'q', renewed.queue, 'i', renewed.id)::text) AS hint (notification);

-- name: lease_release
-- Fence as for renew. A released item is claimable at once and is not an abandonment.
-- $1 item id, $2 lease token, $3 lease owner, $4 the queues of the caller's token (NULL: all)
WITH released AS (
UPDATE review_items AS i
SET lease_owner = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = now()
WHERE i.id = $1
  AND i.lease_token = $2
  AND i.lease_owner = $3
  AND i.state = 'pending'
  AND i.lease_expires_at > now()
  AND ($4::text[] IS NULL OR i.queue = ANY ($4))
RETURNING i.*
)
SELECT released.*, hint.notification
FROM released,
     casework_notify(json_build_object(
         'k', 'released', 'q', released.queue, 'i', released.id)::text) AS hint (notification);
