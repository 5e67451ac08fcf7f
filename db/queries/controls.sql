-- Claim controls (migration 0014): assignments and holds. Each change is one fenced
-- statement that writes its timeline row (`item_events`) and its hint in the same
-- statement; `target` locks the item and reads from the locked row what the timeline
-- records. A fence that refuses writes nothing; item_controls_diagnose says why.

-- name: item_assign
-- Reserves a waiting review item for one reviewer until :until (NULL: until unassigned or
-- decided). Assigning again replaces the assignment. A lease held now is left alone.
-- Exception items move between queues with their state, so they are not assigned.
-- Fence: the review item is pending, in a queue the caller's token covers; the reviewer has a live
-- token of the queue's holder role covering the queue (a misspelt name would reserve the
-- item for nobody); :until, when given, lies ahead, within :max_seconds.
WITH target AS (
    SELECT i.id, i.queue
    FROM review_items AS i
    JOIN queues AS q ON q.name = i.queue
    WHERE i.id = :item_id
      AND i.state = 'pending'
      AND i.kind = 'review'
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
      AND (:until::timestamptz IS NULL
           OR (:until::timestamptz > now()
               AND :until::timestamptz <= now() + make_interval(secs => :max_seconds)))
      AND EXISTS (SELECT 1
                  FROM api_tokens AS t
                  WHERE t.user_name = :reviewer
                    AND t.role = q.holder_role
                    AND t.revoked_at IS NULL
                    AND (t.expires_at IS NULL OR t.expires_at > now())
                    AND (i.queue = ANY (t.queues)
                         OR (t.role <> 'reviewer' AND t.queues = '{}')))
    FOR UPDATE OF i
),
assigned AS (
    UPDATE review_items AS i
    SET assigned_to = :reviewer,
        assigned_until = :until::timestamptz,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.id
    RETURNING i.*
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, detail)
    SELECT t.id, t.queue, 'assigned', :actor, :actor_role,
           jsonb_build_object('reviewer', :reviewer::text, 'until', :until::timestamptz)
    FROM target AS t
)
SELECT assigned.*, hint.notification
FROM assigned,
     casework_hint(kind => 'assigned', queue => assigned.queue, item_id => assigned.id)
         AS hint (notification);

-- name: item_unassign
-- Ends an assignment early: the item goes back to the general order.
-- Fence: the item is pending and assigned now, in a queue the caller's token covers.
WITH target AS (
    SELECT i.id, i.queue, i.assigned_to
    FROM review_items AS i
    WHERE i.id = :item_id
      AND i.state = 'pending'
      AND i.assigned_to IS NOT NULL
      AND (i.assigned_until IS NULL OR i.assigned_until > now())
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF i
),
unassigned AS (
    UPDATE review_items AS i
    SET assigned_to = NULL,
        assigned_until = NULL,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.id
    RETURNING i.*
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, detail)
    SELECT t.id, t.queue, 'unassigned', :actor, :actor_role,
           jsonb_build_object('reviewer', t.assigned_to)
    FROM target AS t
)
SELECT unassigned.*, hint.notification
FROM unassigned,
     casework_hint(kind => 'unassigned', queue => unassigned.queue, item_id => unassigned.id)
         AS hint (notification);

-- name: item_hold
-- Parks a claimed review item until :until for a reason of its queue's catalogue. The hold
-- ends the lease (the item waits for nobody meanwhile); the timeline row (`held`) carries
-- that lease's token and start, the reason and the end. When the queue's hold_pauses_due
-- is set, the due time moves on by the whole hold (item_resume gives back what a hold
-- ended early did not use), so the due time is right at every moment without a sweeper.
-- Fence: the token matches a live lease of the caller on a pending review item, in a queue
-- the caller's token covers; the reason is in the queue's catalogue; :until lies ahead,
-- within :max_seconds.
WITH target AS (
    SELECT i.id, i.queue, i.lease_token, i.lease_started_at, q.hold_pauses_due
    FROM review_items AS i
    JOIN queues AS q ON q.name = i.queue
    WHERE i.id = :item_id
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND i.kind = 'review'
      AND i.queue = ANY (:queue_scope::text[])
      AND :until::timestamptz > now()
      AND :until::timestamptz <= now() + make_interval(secs => :max_seconds)
      AND EXISTS (SELECT 1 FROM hold_reasons AS r WHERE r.queue = i.queue AND r.code = :reason)
    FOR UPDATE OF i
),
held AS (
    UPDATE review_items AS i
    SET held_until = :until::timestamptz,
        hold_reason = :reason,
        hold_paused_due = t.hold_pauses_due AND i.due_at IS NOT NULL,
        due_at = CASE WHEN t.hold_pauses_due THEN i.due_at + (:until::timestamptz - now())
                      ELSE i.due_at END,
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.id
    RETURNING i.*
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, detail)
    SELECT t.id, t.queue, 'held', :actor, :actor_role, t.lease_token, t.lease_started_at,
           jsonb_build_object('reason', :reason::text, 'until', :until::timestamptz)
    FROM target AS t
)
SELECT held.*, hint.notification
FROM held,
     casework_hint(kind => 'held', queue => held.queue, item_id => held.id)
         AS hint (notification);

-- name: item_resume
-- Ends a hold early: the item is claimable again at once, with its priority. A hold that
-- paused the due time gives back the part it did not use.
-- Fence: the item is pending and held now, in a queue the caller's token covers.
WITH target AS (
    SELECT i.id, i.queue, i.held_until, i.hold_reason
    FROM review_items AS i
    WHERE i.id = :item_id
      AND i.state = 'pending'
      AND i.held_until > now()
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF i
),
resumed AS (
    UPDATE review_items AS i
    SET due_at = CASE WHEN i.hold_paused_due THEN i.due_at - (t.held_until - now())
                      ELSE i.due_at END,
        held_until = NULL,
        hold_reason = NULL,
        hold_paused_due = false,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.id
    RETURNING i.*
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, detail)
    SELECT t.id, t.queue, 'resumed', :actor, :actor_role,
           jsonb_build_object('reason', t.hold_reason, 'until', t.held_until)
    FROM target AS t
)
SELECT resumed.*, hint.notification
FROM resumed,
     casework_hint(kind => 'resumed', queue => resumed.queue, item_id => resumed.id)
         AS hint (notification);

-- name: items_end_reservations
-- Clears the holds and assignments of a queue whose time has run out, so their items
-- rejoin the general claim order with their priority. Runs from the claim path when
-- item_claim_next says some wait (no sweeper job). A hold that ran its course paused the
-- due time by exactly its length already. The end needs no timeline row: the `held` or
-- `assigned` row says when it was to end. A bounded batch, SKIP LOCKED: an item another
-- statement holds is left for the next claim.
WITH ended AS (
    SELECT i.id
    FROM review_items AS i
    WHERE i.queue = :queue
      AND i.state = 'pending'
      AND i.reserved_until <= now()
    ORDER BY i.reserved_until
    LIMIT :batch
    FOR UPDATE OF i SKIP LOCKED
),
-- The ids as an array: the planner cannot know how few rows `ended` holds.
cleared AS (
    UPDATE review_items AS i
    SET held_until = CASE WHEN i.held_until <= now() THEN NULL ELSE i.held_until END,
        hold_reason = CASE WHEN i.held_until <= now() THEN NULL ELSE i.hold_reason END,
        hold_paused_due = CASE WHEN i.held_until <= now() THEN false ELSE i.hold_paused_due END,
        assigned_to = CASE WHEN i.assigned_until <= now() THEN NULL ELSE i.assigned_to END,
        assigned_until = CASE WHEN i.assigned_until <= now() THEN NULL
                              ELSE i.assigned_until END
    FROM ended AS e
    WHERE i.id = e.id AND i.id = ANY (ARRAY(SELECT d.id FROM ended AS d))
    RETURNING i.id
)
SELECT count(*) AS cleared FROM cleared;

-- name: item_controls_diagnose
-- Read-only: why did an assignment, hold, resume or revocation write nothing? Runs only on
-- that failure path. Arguments a mutation does not take are NULL.
SELECT i.id, i.queue, i.state, i.kind, i.lease_token, i.lease_owner,
       i.lease_token IS NOT NULL AND i.lease_expires_at > now() AS lease_live,
       coalesce(i.held_until > now(), false) AS held,
       i.assigned_to IS NOT NULL
       AND (i.assigned_until IS NULL OR i.assigned_until > now()) AS assigned,
       :until::timestamptz IS NULL
       OR (:until::timestamptz > now()
           AND :until::timestamptz <= now() + make_interval(secs => :max_seconds))
           AS until_in_range,
       EXISTS (SELECT 1 FROM hold_reasons AS r WHERE r.queue = i.queue AND r.code = :reason)
           AS reason_known,
       EXISTS (SELECT 1
               FROM api_tokens AS t
               JOIN queues AS q ON q.name = i.queue
               WHERE t.user_name = :reviewer
                 AND t.role = q.holder_role
                 AND t.revoked_at IS NULL
                 AND (t.expires_at IS NULL OR t.expires_at > now())
                 AND (i.queue = ANY (t.queues)
                      OR (t.role <> 'reviewer' AND t.queues = '{}'))) AS reviewer_works_here
FROM review_items AS i
WHERE i.id = :item_id;

-- name: hold_reason_upsert
INSERT INTO hold_reasons AS r (queue, code, label)
VALUES (:queue, :code, :label)
ON CONFLICT (queue, code) DO UPDATE SET label = excluded.label
RETURNING r.*;

-- name: hold_reasons_get_by_queues
SELECT r.* FROM hold_reasons AS r WHERE r.queue = ANY (:queues::text[]) ORDER BY r.queue, r.code;

-- name: hold_counts_get_by_queues
-- Queue.measures.holds: the items held now in each queue of :queues, by reason (with its
-- label), largest first. What waits is counted now, not over a window, like the backlog;
-- the walk covers the queue's set-aside items only (the claim index under `reserved`).
SELECT i.queue, i.hold_reason AS code, r.label, count(*) AS items,
       min(i.held_until) AS next_ends_at
FROM review_items AS i
JOIN hold_reasons AS r ON r.queue = i.queue AND r.code = i.hold_reason
WHERE i.queue = ANY (:queues::text[])
  AND i.state = 'pending'
  AND i.reserved
  AND i.held_until > now()
GROUP BY i.queue, i.hold_reason, r.label
ORDER BY i.queue, items DESC, i.hold_reason;
