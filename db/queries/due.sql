-- Due times (migration 0014): the overdue move and what the process timer announces.

-- name: items_escalate_overdue
-- Runs from the claim path when item_claim_next says overdue items wait in a queue that
-- names an overdue_queue, so no cron job is needed: each moves there with its priority
-- raised by the queue's overdue_priority_boost, once. An item under a live lease stays
-- with its holder until the lease ends; a held item stays until its hold ends. The move
-- leaves behind what belonged to the old queue (an assignment, an ended hold) and gives
-- the item the due time of the queue it joins (none if that queue sets none): its old due
-- time has been acted on, and keeping it would make the item overdue there at once. The
-- timeline gets an `escalated` row per item (cause `overdue`, with the old due time), and a
-- `lapsed` row for a lease that had run out. SKIP LOCKED: a concurrent claim or change of
-- the same item is never waited for; the next claim looks again.
WITH overdue AS (
    SELECT i.id, i.queue, i.due_at, i.lease_token, i.lease_owner, i.lease_started_at,
           i.lease_expires_at, q.overdue_queue, q.overdue_priority_boost, q.holder_role
    FROM review_items AS i
    JOIN queues AS q ON q.name = i.queue
    WHERE i.queue = :queue
      AND q.overdue_queue IS NOT NULL
      AND i.state = 'pending'
      AND i.due_at <= now()
      AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
      AND (i.held_until IS NULL OR i.held_until <= now())
    ORDER BY i.due_at
    -- A bound on one claim's work; the next claim moves the rest.
    LIMIT 100
    FOR UPDATE OF i SKIP LOCKED
),
-- The ids as an array: the planner cannot know how few rows `overdue` holds.
moved AS (
    UPDATE review_items AS i
    SET queue = o.overdue_queue,
        priority = i.priority + o.overdue_priority_boost,
        due_at = now() + make_interval(
            secs => review_due_seconds(t, i.priority + o.overdue_priority_boost)),
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        abandon_count = 0,
        escalation_count = i.escalation_count + 1,
        assigned_to = NULL,
        assigned_until = NULL,
        held_until = NULL,
        hold_reason = NULL,
        hold_paused_due = false,
        updated_at = now()
    FROM overdue AS o
    JOIN queues AS t ON t.name = o.overdue_queue
    WHERE i.id = o.id AND i.id = ANY (ARRAY(SELECT d.id FROM overdue AS d))
    RETURNING i.id
),
-- One INSERT, ordered: an item's lapse comes before its move in the timeline.
logged AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, at, detail)
    SELECT o.id, o.queue, e.kind, e.actor, e.actor_role, e.lease_token, e.lease_started_at,
           e.at, e.detail
    FROM overdue AS o
    CROSS JOIN LATERAL (VALUES
        (1, 'lapsed', o.lease_owner, o.holder_role, o.lease_token, o.lease_started_at,
         o.lease_expires_at, NULL::jsonb),
        (2, 'escalated', 'casework', 'system', NULL::uuid, NULL::timestamptz, now(),
         jsonb_build_object('from_queue', o.queue, 'to_queue', o.overdue_queue,
                            'cause', 'overdue', 'due_at', o.due_at))
    ) AS e (step, kind, actor, actor_role, lease_token, lease_started_at, at, detail)
    WHERE e.kind = 'escalated' OR o.lease_token IS NOT NULL
    ORDER BY o.id, e.step
)
SELECT n.escalated, hint.notification
FROM (SELECT count(*) AS escalated, min(o.overdue_queue) AS to_queue FROM overdue AS o) AS n
LEFT JOIN LATERAL (
    SELECT casework_hint(kind => 'escalated', queue => n.to_queue, from_queue => :queue::text)
               AS notification
    WHERE n.escalated > 0
) AS hint ON true;

-- name: items_get_due_between
-- Waiting items that fell due in (after, until]: what the process timer announces as
-- OVERDUE. Reads only.
SELECT i.id, i.queue, i.lease_owner, i.due_at
FROM review_items AS i
WHERE i.queue = ANY (:queues::text[])
  AND i.state = 'pending'
  AND i.due_at > :after
  AND i.due_at <= :until
ORDER BY i.due_at, i.id;
