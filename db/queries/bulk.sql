-- Bulk actions (issue 14, section 6; migration 0016): a manager releases, assigns, moves or
-- holds many review items in ONE statement each, all or nothing.
--
-- Each statement has the same shape:
--   - `matched` (the filter form: :item_ids NULL) walks the queue's waiting items through
--     the claim index (review_items_claimable: state 'pending', led by the queue), oldest
--     first, taking :batch + 1 so that `more` can say the filter matched more than :batch.
--     Items the action would leave as they are (ALREADY_SO) are not matched, so calling
--     again makes progress;
--   - `taken` is :item_ids (the id form; the caller passes them sorted and distinct) or the
--     oldest :batch of `matched`;
--   - `locked` locks them FOR UPDATE in id order, whatever order they were chosen in: two
--     bulk calls over overlapping items lock in the same order and cannot deadlock, and a
--     claim (SKIP LOCKED) never waits for one. It reads the rows as they are once locked: a
--     claim that committed while it waited is seen, and the item is skipped as leased (or
--     its lease revoked);
--   - `fence` holds the conditions of the whole call: every id found in the caller's
--     queues (:queue_scope), no exception's item, and the action's own (a known reviewer,
--     hold reason or destination). If one fails nothing is written and the one row
--     returned has `passes` false; items_bulk_diagnose then says why;
--   - `outcomes` sorts each locked item: `not_waiting` (decided, or not changeable now),
--     `already_so`, `leased` (a live lease and :revoke_leases false), or `changed`;
--   - the UPDATE changes the `changed` items; one INSERT writes their timeline rows in
--     order (a lapse or a revocation before the change); `hints` sends one casework_hint
--     (kind `bulk`, the first 100 changed ids, `more` beyond) per queue the changed items
--     were in;
--   - the answer is one row per locked item (changed items as they are now, the others as
--     they were) with its outcome, and `passes` and `more` on every row; a single row of
--     NULL item columns when nothing was taken or the fence refused.

-- name: items_bulk_release
-- Makes the items claimable by anyone now: ends their holds (a hold that paused the due
-- time gives back what it did not use, as item_resume) and their assignments and, with
-- :revoke_leases, their live leases (as lease_revoke: not an abandonment). Timeline rows:
-- `revoked` (the owner; :body, the call's reason), `resumed`, `unassigned`, each with :body.
-- ALREADY_SO: neither held nor assigned now, nor under a live lease. A hold or assignment
-- that has ended but is not yet cleared is cleared too, with no row (its own row said when
-- it would end), as items_end_reservations does.
-- Fence: every id found in the caller's queues; no exception's item; the filter's queue
-- exists.
WITH matched AS MATERIALIZED (
    SELECT i.id, i.created_at
    FROM review_items AS i
    WHERE :item_ids::bigint[] IS NULL
      AND i.queue = :queue
      AND i.state = 'pending'
      AND i.kind = 'review'
      AND (:state::text IS NULL
           OR (:state = 'leased' AND i.lease_expires_at > now())
           OR (:state = 'pending'
               AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())))
      AND (:overdue::boolean IS NULL OR coalesce(i.due_at <= now(), false) = :overdue)
      AND (:assigned::boolean IS NULL
           OR (i.assigned_to IS NOT NULL
               AND (i.assigned_until IS NULL OR i.assigned_until > now())) = :assigned)
      AND (:older_than_seconds::integer IS NULL
           OR i.created_at < now() - make_interval(secs => :older_than_seconds))
      AND NOT (NOT coalesce(i.held_until > now(), false) AND NOT (i.assigned_to IS NOT NULL AND (i.assigned_until IS NULL OR i.assigned_until > now())) AND NOT (i.lease_token IS NOT NULL AND i.lease_expires_at > now()))
    ORDER BY i.created_at, i.id
    LIMIT :batch + 1
),
taken AS MATERIALIZED (
    SELECT u.id FROM unnest(:item_ids::bigint[]) AS u (id)
    UNION ALL
    (SELECT m.id FROM matched AS m ORDER BY m.created_at, m.id LIMIT :batch)
),
locked AS MATERIALIZED (
    SELECT i.*
    FROM review_items AS i
    WHERE i.id = ANY (ARRAY(SELECT t.id FROM taken AS t))
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
      -- The filter form: an item that left the queue while the lock was awaited is not taken.
      AND (:item_ids::bigint[] IS NOT NULL OR i.queue = :queue)
    ORDER BY i.id
    FOR UPDATE OF i
),
fence AS MATERIALIZED (
    SELECT (:item_ids::bigint[] IS NULL OR count(*) = cardinality(:item_ids::bigint[]))
           AND coalesce(bool_and(l.kind = 'review'), true)
           AND (:queue::text IS NULL OR EXISTS (SELECT 1 FROM queues AS q WHERE q.name = :queue))
               AS passes,
           (SELECT count(*) FROM matched) > :batch AS more
    FROM locked AS l
),
outcomes AS MATERIALIZED (
    SELECT l.id, l.queue, l.lease_owner, l.lease_token, l.lease_started_at, l.lease_expires_at,
           l.lease_token IS NOT NULL AND l.lease_expires_at > now() AS lease_live,
           l.lease_token IS NOT NULL AND l.lease_expires_at <= now() AS lease_lapsed,
           coalesce(l.held_until > now(), false) AS held_now,
           l.held_until, l.hold_reason,
           l.assigned_to IS NOT NULL
           AND (l.assigned_until IS NULL OR l.assigned_until > now()) AS assigned_now,
           l.assigned_to, l.assigned_until,
           q.holder_role, q.hold_pauses_due,
           CASE WHEN l.state <> 'pending' THEN 'not_waiting'
                WHEN NOT coalesce(l.held_until > now(), false) AND NOT (l.assigned_to IS NOT NULL AND (l.assigned_until IS NULL OR l.assigned_until > now())) AND NOT (l.lease_token IS NOT NULL AND l.lease_expires_at > now()) THEN 'already_so'
                WHEN l.lease_token IS NOT NULL AND l.lease_expires_at > now()
                     AND NOT :revoke_leases::boolean THEN 'leased'
                ELSE 'changed'
           END AS outcome
    FROM locked AS l
    JOIN queues AS q ON q.name = l.queue
    WHERE (SELECT f.passes FROM fence AS f)
),
-- The ids as an array: the planner cannot know how few rows `outcomes` holds.
changed AS (
    UPDATE review_items AS i
    SET due_at = CASE WHEN i.hold_paused_due AND o.held_now
                      THEN i.due_at - (o.held_until - now()) ELSE i.due_at END,
        held_until = NULL,
        hold_reason = NULL,
        hold_paused_due = false,
        assigned_to = NULL,
        assigned_until = NULL,
        lease_owner = CASE WHEN o.lease_live THEN NULL ELSE i.lease_owner END,
        lease_token = CASE WHEN o.lease_live THEN NULL ELSE i.lease_token END,
        lease_expires_at = CASE WHEN o.lease_live THEN NULL ELSE i.lease_expires_at END,
        updated_at = now()
    FROM outcomes AS o
    WHERE i.id = o.id
      AND i.id = ANY (ARRAY(SELECT c.id FROM outcomes AS c WHERE c.outcome = 'changed'))
    RETURNING i.*
),
-- One INSERT, ordered: what ended a lease comes before the change in the timeline.
logged AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, at, body, detail)
    SELECT o.id, o.queue, e.kind, e.actor, e.actor_role, e.lease_token, e.lease_started_at,
           e.at, e.body, e.detail
    FROM outcomes AS o
    CROSS JOIN LATERAL (VALUES
        (2, o.lease_live, 'revoked', :actor, :actor_role, o.lease_token, o.lease_started_at,
         now(), :body::text, jsonb_build_object('owner', o.lease_owner)),
        (3, o.held_now, 'resumed', :actor, :actor_role, NULL::uuid, NULL::timestamptz, now(),
         :body::text, jsonb_build_object('reason', o.hold_reason, 'until', o.held_until)),
        (4, o.assigned_now, 'unassigned', :actor, :actor_role, NULL::uuid, NULL::timestamptz,
         now(), :body::text,
         jsonb_build_object('reviewer', o.assigned_to, 'until', o.assigned_until))
    ) AS e (step, happened, kind, actor, actor_role, lease_token, lease_started_at, at, body,
            detail)
    WHERE o.outcome = 'changed' AND e.happened
    ORDER BY o.id, e.step
),
hints AS (
    SELECT min(o.id) AS first_id,
           casework_hint(kind => 'bulk', queue => o.queue,
                         item_ids => (array_agg(o.id ORDER BY o.id))[1:100],
                         items_cut_short => count(*) > 100) AS notification
    FROM outcomes AS o
    WHERE o.outcome = 'changed'
    GROUP BY o.queue
)
SELECT f.passes, f.more, x.*, h.notification
FROM fence AS f
LEFT JOIN (
    SELECT c.*, 'changed' AS outcome, NULL::text AS skipped_owner FROM changed AS c
    UNION ALL
    SELECT l.*, o.outcome, CASE WHEN o.outcome = 'leased' THEN l.lease_owner END
    FROM locked AS l
    JOIN outcomes AS o ON o.id = l.id
    WHERE o.outcome <> 'changed'
) AS x ON true
LEFT JOIN hints AS h ON h.first_id = x.id
ORDER BY x.id;

-- name: items_bulk_assign
-- Reserves each item for :reviewer until :until (NULL: until unassigned), as item_assign
-- does one: only review items; assigning again replaces the assignment; a hold stays. With
-- :revoke_leases a live lease is revoked first (`revoked`, with :body); a lease that has run
-- out is left for the next claim to write off. Timeline: `assigned` {reviewer, until},
-- with :body. ALREADY_SO: assigned to :reviewer until :until already.
-- Fence: every id found in the caller's queues; no exception's item; the reviewer has a live
-- token of the holder role of every waiting item's queue (and of the filter's queue);
-- :until, when given, lies ahead, within :max_seconds.
WITH matched AS MATERIALIZED (
    SELECT i.id, i.created_at
    FROM review_items AS i
    WHERE :item_ids::bigint[] IS NULL
      AND i.queue = :queue
      AND i.state = 'pending'
      AND i.kind = 'review'
      AND (:state::text IS NULL
           OR (:state = 'leased' AND i.lease_expires_at > now())
           OR (:state = 'pending'
               AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())))
      AND (:overdue::boolean IS NULL OR coalesce(i.due_at <= now(), false) = :overdue)
      AND (:assigned::boolean IS NULL
           OR (i.assigned_to IS NOT NULL
               AND (i.assigned_until IS NULL OR i.assigned_until > now())) = :assigned)
      AND (:older_than_seconds::integer IS NULL
           OR i.created_at < now() - make_interval(secs => :older_than_seconds))
      AND NOT (i.assigned_to IS NOT DISTINCT FROM :reviewer::text AND i.assigned_until IS NOT DISTINCT FROM :until::timestamptz)
    ORDER BY i.created_at, i.id
    LIMIT :batch + 1
),
taken AS MATERIALIZED (
    SELECT u.id FROM unnest(:item_ids::bigint[]) AS u (id)
    UNION ALL
    (SELECT m.id FROM matched AS m ORDER BY m.created_at, m.id LIMIT :batch)
),
locked AS MATERIALIZED (
    SELECT i.*
    FROM review_items AS i
    WHERE i.id = ANY (ARRAY(SELECT t.id FROM taken AS t))
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
      -- The filter form: an item that left the queue while the lock was awaited is not taken.
      AND (:item_ids::bigint[] IS NOT NULL OR i.queue = :queue)
    ORDER BY i.id
    FOR UPDATE OF i
),
fence AS MATERIALIZED (
    SELECT (:item_ids::bigint[] IS NULL OR count(*) = cardinality(:item_ids::bigint[]))
           AND coalesce(bool_and(l.kind = 'review'), true)
           AND coalesce(bool_and(l.state <> 'pending' OR EXISTS (SELECT 1
                          FROM api_tokens AS t
                          JOIN queues AS q ON q.name = l.queue
                          WHERE t.user_name = :reviewer
                            AND t.role = q.holder_role
                            AND t.revoked_at IS NULL
                            AND (t.expires_at IS NULL OR t.expires_at > now())
                            AND (l.queue = ANY (t.queues)
                                 OR (t.role <> 'reviewer' AND t.queues = '{}')))), true)
           AND (:queue::text IS NULL OR EXISTS (SELECT 1
                          FROM api_tokens AS t
                          JOIN queues AS q ON q.name = :queue
                          WHERE t.user_name = :reviewer
                            AND t.role = q.holder_role
                            AND t.revoked_at IS NULL
                            AND (t.expires_at IS NULL OR t.expires_at > now())
                            AND (:queue = ANY (t.queues)
                                 OR (t.role <> 'reviewer' AND t.queues = '{}'))))
           AND (:until::timestamptz IS NULL
                OR (:until::timestamptz > now()
                    AND :until::timestamptz <= now() + make_interval(secs => :max_seconds)))
               AS passes,
           (SELECT count(*) FROM matched) > :batch AS more
    FROM locked AS l
),
outcomes AS MATERIALIZED (
    SELECT l.id, l.queue, l.lease_owner, l.lease_token, l.lease_started_at, l.lease_expires_at,
           l.lease_token IS NOT NULL AND l.lease_expires_at > now() AS lease_live,
           l.lease_token IS NOT NULL AND l.lease_expires_at <= now() AS lease_lapsed,
           coalesce(l.held_until > now(), false) AS held_now,
           l.held_until, l.hold_reason,
           l.assigned_to IS NOT NULL
           AND (l.assigned_until IS NULL OR l.assigned_until > now()) AS assigned_now,
           l.assigned_to, l.assigned_until,
           q.holder_role, q.hold_pauses_due,
           CASE WHEN l.state <> 'pending' THEN 'not_waiting'
                WHEN l.assigned_to IS NOT DISTINCT FROM :reviewer::text AND l.assigned_until IS NOT DISTINCT FROM :until::timestamptz THEN 'already_so'
                WHEN l.lease_token IS NOT NULL AND l.lease_expires_at > now()
                     AND NOT :revoke_leases::boolean THEN 'leased'
                ELSE 'changed'
           END AS outcome
    FROM locked AS l
    JOIN queues AS q ON q.name = l.queue
    WHERE (SELECT f.passes FROM fence AS f)
),
-- The ids as an array: the planner cannot know how few rows `outcomes` holds.
changed AS (
    UPDATE review_items AS i
    SET assigned_to = :reviewer,
        assigned_until = :until::timestamptz,
        lease_owner = CASE WHEN o.lease_live THEN NULL ELSE i.lease_owner END,
        lease_token = CASE WHEN o.lease_live THEN NULL ELSE i.lease_token END,
        lease_expires_at = CASE WHEN o.lease_live THEN NULL ELSE i.lease_expires_at END,
        updated_at = now()
    FROM outcomes AS o
    WHERE i.id = o.id
      AND i.id = ANY (ARRAY(SELECT c.id FROM outcomes AS c WHERE c.outcome = 'changed'))
    RETURNING i.*
),
-- One INSERT, ordered: what ended a lease comes before the change in the timeline.
logged AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, at, body, detail)
    SELECT o.id, o.queue, e.kind, e.actor, e.actor_role, e.lease_token, e.lease_started_at,
           e.at, e.body, e.detail
    FROM outcomes AS o
    CROSS JOIN LATERAL (VALUES
        (2, o.lease_live, 'revoked', :actor, :actor_role, o.lease_token, o.lease_started_at,
         now(), :body::text, jsonb_build_object('owner', o.lease_owner)),
        (5, true, 'assigned', :actor, :actor_role, NULL::uuid, NULL::timestamptz, now(),
         :body::text,
         jsonb_build_object('reviewer', :reviewer::text, 'until', :until::timestamptz))
    ) AS e (step, happened, kind, actor, actor_role, lease_token, lease_started_at, at, body,
            detail)
    WHERE o.outcome = 'changed' AND e.happened
    ORDER BY o.id, e.step
),
hints AS (
    SELECT min(o.id) AS first_id,
           casework_hint(kind => 'bulk', queue => o.queue,
                         item_ids => (array_agg(o.id ORDER BY o.id))[1:100],
                         items_cut_short => count(*) > 100) AS notification
    FROM outcomes AS o
    WHERE o.outcome = 'changed'
    GROUP BY o.queue
)
SELECT f.passes, f.more, x.*, h.notification
FROM fence AS f
LEFT JOIN (
    SELECT c.*, 'changed' AS outcome, NULL::text AS skipped_owner FROM changed AS c
    UNION ALL
    SELECT l.*, o.outcome, CASE WHEN o.outcome = 'leased' THEN l.lease_owner END
    FROM locked AS l
    JOIN outcomes AS o ON o.id = l.id
    WHERE o.outcome <> 'changed'
) AS x ON true
LEFT JOIN hints AS h ON h.first_id = x.id
ORDER BY x.id;

-- name: items_bulk_move
-- Moves each waiting review item to :to_queue, keeping its priority. What belonged to the
-- queue it leaves stays behind, as with the overdue move (items_escalate_overdue): its
-- assignment (the assignee works that queue) and its hold (its reason is of that queue's
-- catalogue) end, and it takes the due time of the queue it joins, counted from now (none if
-- that queue sets none). Its abandonments are counted afresh there; it is not an
-- escalation. A live lease is skipped, or revoked with :revoke_leases; a lease that had run
-- out is written off (`lapsed`). Timeline, in order: `lapsed`, `revoked` (with :body),
-- `resumed`, `unassigned`, `moved` {from_queue, to_queue} with :body, each in the queue the
-- item left. Each hint names :to_queue among its queues (`qs`). ALREADY_SO: in :to_queue.
-- Fence: every id found in the caller's queues; no exception's item; :to_queue exists and
-- lies in the caller's queues.
WITH matched AS MATERIALIZED (
    SELECT i.id, i.created_at
    FROM review_items AS i
    WHERE :item_ids::bigint[] IS NULL
      AND i.queue = :queue
      AND i.state = 'pending'
      AND i.kind = 'review'
      AND (:state::text IS NULL
           OR (:state = 'leased' AND i.lease_expires_at > now())
           OR (:state = 'pending'
               AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())))
      AND (:overdue::boolean IS NULL OR coalesce(i.due_at <= now(), false) = :overdue)
      AND (:assigned::boolean IS NULL
           OR (i.assigned_to IS NOT NULL
               AND (i.assigned_until IS NULL OR i.assigned_until > now())) = :assigned)
      AND (:older_than_seconds::integer IS NULL
           OR i.created_at < now() - make_interval(secs => :older_than_seconds))
      AND NOT (i.queue = :to_queue::text)
    ORDER BY i.created_at, i.id
    LIMIT :batch + 1
),
taken AS MATERIALIZED (
    SELECT u.id FROM unnest(:item_ids::bigint[]) AS u (id)
    UNION ALL
    (SELECT m.id FROM matched AS m ORDER BY m.created_at, m.id LIMIT :batch)
),
locked AS MATERIALIZED (
    SELECT i.*
    FROM review_items AS i
    WHERE i.id = ANY (ARRAY(SELECT t.id FROM taken AS t))
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
      -- The filter form: an item that left the queue while the lock was awaited is not taken.
      AND (:item_ids::bigint[] IS NOT NULL OR i.queue = :queue)
    ORDER BY i.id
    FOR UPDATE OF i
),
fence AS MATERIALIZED (
    SELECT (:item_ids::bigint[] IS NULL OR count(*) = cardinality(:item_ids::bigint[]))
           AND coalesce(bool_and(l.kind = 'review'), true)
           AND EXISTS (SELECT 1 FROM queues AS q WHERE q.name = :to_queue)
           AND (:queue_scope::text[] IS NULL OR :to_queue = ANY (:queue_scope))
           AND (:queue::text IS NULL OR EXISTS (SELECT 1 FROM queues AS q WHERE q.name = :queue))
               AS passes,
           (SELECT count(*) FROM matched) > :batch AS more
    FROM locked AS l
),
outcomes AS MATERIALIZED (
    SELECT l.id, l.queue, l.lease_owner, l.lease_token, l.lease_started_at, l.lease_expires_at,
           l.lease_token IS NOT NULL AND l.lease_expires_at > now() AS lease_live,
           l.lease_token IS NOT NULL AND l.lease_expires_at <= now() AS lease_lapsed,
           coalesce(l.held_until > now(), false) AS held_now,
           l.held_until, l.hold_reason,
           l.assigned_to IS NOT NULL
           AND (l.assigned_until IS NULL OR l.assigned_until > now()) AS assigned_now,
           l.assigned_to, l.assigned_until,
           q.holder_role, q.hold_pauses_due,
           CASE WHEN l.state <> 'pending' THEN 'not_waiting'
                WHEN l.queue = :to_queue::text THEN 'already_so'
                WHEN l.lease_token IS NOT NULL AND l.lease_expires_at > now()
                     AND NOT :revoke_leases::boolean THEN 'leased'
                ELSE 'changed'
           END AS outcome
    FROM locked AS l
    JOIN queues AS q ON q.name = l.queue
    WHERE (SELECT f.passes FROM fence AS f)
),
-- The ids as an array: the planner cannot know how few rows `outcomes` holds.
changed AS (
    UPDATE review_items AS i
    SET queue = t.name,
        due_at = now() + make_interval(secs => review_due_seconds(t, i.priority)),
        abandon_count = 0,
        assigned_to = NULL,
        assigned_until = NULL,
        held_until = NULL,
        hold_reason = NULL,
        hold_paused_due = false,
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM outcomes AS o
    JOIN queues AS t ON t.name = :to_queue
    WHERE i.id = o.id
      AND i.id = ANY (ARRAY(SELECT c.id FROM outcomes AS c WHERE c.outcome = 'changed'))
    RETURNING i.*
),
-- One INSERT, ordered: what ended a lease comes before the change in the timeline.
logged AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, at, body, detail)
    SELECT o.id, o.queue, e.kind, e.actor, e.actor_role, e.lease_token, e.lease_started_at,
           e.at, e.body, e.detail
    FROM outcomes AS o
    CROSS JOIN LATERAL (VALUES
        (1, o.lease_lapsed, 'lapsed', o.lease_owner, o.holder_role, o.lease_token,
         o.lease_started_at, o.lease_expires_at, NULL::text, NULL::jsonb),
        (2, o.lease_live, 'revoked', :actor, :actor_role, o.lease_token, o.lease_started_at,
         now(), :body::text, jsonb_build_object('owner', o.lease_owner)),
        (3, o.held_now, 'resumed', :actor, :actor_role, NULL::uuid, NULL::timestamptz, now(),
         :body::text, jsonb_build_object('reason', o.hold_reason, 'until', o.held_until)),
        (4, o.assigned_now, 'unassigned', :actor, :actor_role, NULL::uuid, NULL::timestamptz,
         now(), :body::text,
         jsonb_build_object('reviewer', o.assigned_to, 'until', o.assigned_until)),
        (5, true, 'moved', :actor, :actor_role, NULL::uuid, NULL::timestamptz, now(),
         :body::text, jsonb_build_object('from_queue', o.queue, 'to_queue', :to_queue::text))
    ) AS e (step, happened, kind, actor, actor_role, lease_token, lease_started_at, at, body,
            detail)
    WHERE o.outcome = 'changed' AND e.happened
    ORDER BY o.id, e.step
),
hints AS (
    SELECT min(o.id) AS first_id,
           casework_hint(kind => 'bulk', queue => o.queue,
                         other_queues => ARRAY[:to_queue::text],
                         item_ids => (array_agg(o.id ORDER BY o.id))[1:100],
                         items_cut_short => count(*) > 100) AS notification
    FROM outcomes AS o
    WHERE o.outcome = 'changed'
    GROUP BY o.queue
)
SELECT f.passes, f.more, x.*, h.notification
FROM fence AS f
LEFT JOIN (
    SELECT c.*, 'changed' AS outcome, NULL::text AS skipped_owner FROM changed AS c
    UNION ALL
    SELECT l.*, o.outcome, CASE WHEN o.outcome = 'leased' THEN l.lease_owner END
    FROM locked AS l
    JOIN outcomes AS o ON o.id = l.id
    WHERE o.outcome <> 'changed'
) AS x ON true
LEFT JOIN hints AS h ON h.first_id = x.id
ORDER BY x.id;

-- name: items_bulk_hold
-- Parks each waiting review item until :until for :reason, as item_hold does for its lease
-- holder, but by a manager and without a lease: a live lease is skipped, or revoked first
-- with :revoke_leases (`revoked`, its body the reason's label); a lease that had run out is
-- written off (`lapsed`) and counted as an abandonment, as the claim that noticed it would.
-- The queue's hold_pauses_due moves the due time on by the whole hold. An assignment stays.
-- Timeline: `held` {reason, until}. ALREADY_SO: held now (resume or release it first).
-- Fence: every id found in the caller's queues; no exception's item; :reason is in the
-- catalogue of every waiting item's queue (and of the filter's queue); :until lies ahead,
-- within :max_seconds.
WITH matched AS MATERIALIZED (
    SELECT i.id, i.created_at
    FROM review_items AS i
    WHERE :item_ids::bigint[] IS NULL
      AND i.queue = :queue
      AND i.state = 'pending'
      AND i.kind = 'review'
      AND (:state::text IS NULL
           OR (:state = 'leased' AND i.lease_expires_at > now())
           OR (:state = 'pending'
               AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())))
      AND (:overdue::boolean IS NULL OR coalesce(i.due_at <= now(), false) = :overdue)
      AND (:assigned::boolean IS NULL
           OR (i.assigned_to IS NOT NULL
               AND (i.assigned_until IS NULL OR i.assigned_until > now())) = :assigned)
      AND (:older_than_seconds::integer IS NULL
           OR i.created_at < now() - make_interval(secs => :older_than_seconds))
      AND NOT (coalesce(i.held_until > now(), false))
    ORDER BY i.created_at, i.id
    LIMIT :batch + 1
),
taken AS MATERIALIZED (
    SELECT u.id FROM unnest(:item_ids::bigint[]) AS u (id)
    UNION ALL
    (SELECT m.id FROM matched AS m ORDER BY m.created_at, m.id LIMIT :batch)
),
locked AS MATERIALIZED (
    SELECT i.*
    FROM review_items AS i
    WHERE i.id = ANY (ARRAY(SELECT t.id FROM taken AS t))
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
      -- The filter form: an item that left the queue while the lock was awaited is not taken.
      AND (:item_ids::bigint[] IS NOT NULL OR i.queue = :queue)
    ORDER BY i.id
    FOR UPDATE OF i
),
fence AS MATERIALIZED (
    SELECT (:item_ids::bigint[] IS NULL OR count(*) = cardinality(:item_ids::bigint[]))
           AND coalesce(bool_and(l.kind = 'review'), true)
           AND coalesce(bool_and(l.state <> 'pending'
                                 OR EXISTS (SELECT 1 FROM hold_reasons AS r
                                            WHERE r.queue = l.queue AND r.code = :reason)),
                        true)
           AND (:queue::text IS NULL
                OR EXISTS (SELECT 1 FROM hold_reasons AS r
                           WHERE r.queue = :queue AND r.code = :reason))
           AND :until::timestamptz > now()
           AND :until::timestamptz <= now() + make_interval(secs => :max_seconds)
               AS passes,
           (SELECT count(*) FROM matched) > :batch AS more
    FROM locked AS l
),
outcomes AS MATERIALIZED (
    SELECT l.id, l.queue, l.lease_owner, l.lease_token, l.lease_started_at, l.lease_expires_at,
           l.lease_token IS NOT NULL AND l.lease_expires_at > now() AS lease_live,
           l.lease_token IS NOT NULL AND l.lease_expires_at <= now() AS lease_lapsed,
           coalesce(l.held_until > now(), false) AS held_now,
           l.held_until, l.hold_reason,
           l.assigned_to IS NOT NULL
           AND (l.assigned_until IS NULL OR l.assigned_until > now()) AS assigned_now,
           l.assigned_to, l.assigned_until,
           q.holder_role, q.hold_pauses_due,
           CASE WHEN l.state <> 'pending' THEN 'not_waiting'
                WHEN coalesce(l.held_until > now(), false) THEN 'already_so'
                WHEN l.lease_token IS NOT NULL AND l.lease_expires_at > now()
                     AND NOT :revoke_leases::boolean THEN 'leased'
                ELSE 'changed'
           END AS outcome
    FROM locked AS l
    JOIN queues AS q ON q.name = l.queue
    WHERE (SELECT f.passes FROM fence AS f)
),
-- The ids as an array: the planner cannot know how few rows `outcomes` holds.
changed AS (
    UPDATE review_items AS i
    SET held_until = :until::timestamptz,
        hold_reason = :reason,
        hold_paused_due = o.hold_pauses_due AND i.due_at IS NOT NULL,
        due_at = CASE WHEN o.hold_pauses_due THEN i.due_at + (:until::timestamptz - now())
                      ELSE i.due_at END,
        abandon_count = i.abandon_count + o.lease_lapsed::int,
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = now()
    FROM outcomes AS o
    WHERE i.id = o.id
      AND i.id = ANY (ARRAY(SELECT c.id FROM outcomes AS c WHERE c.outcome = 'changed'))
    RETURNING i.*
),
-- One INSERT, ordered: what ended a lease comes before the change in the timeline.
logged AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, at, body, detail)
    SELECT o.id, o.queue, e.kind, e.actor, e.actor_role, e.lease_token, e.lease_started_at,
           e.at, e.body, e.detail
    FROM outcomes AS o
    CROSS JOIN LATERAL (VALUES
        (1, o.lease_lapsed, 'lapsed', o.lease_owner, o.holder_role, o.lease_token,
         o.lease_started_at, o.lease_expires_at, NULL::text, NULL::jsonb),
        (2, o.lease_live, 'revoked', :actor, :actor_role, o.lease_token, o.lease_started_at,
         now(), (SELECT r.label FROM hold_reasons AS r WHERE r.queue = o.queue AND r.code = :reason), jsonb_build_object('owner', o.lease_owner)),
        (5, true, 'held', :actor, :actor_role, NULL::uuid, NULL::timestamptz, now(), NULL::text,
         jsonb_build_object('reason', :reason::text, 'until', :until::timestamptz))
    ) AS e (step, happened, kind, actor, actor_role, lease_token, lease_started_at, at, body,
            detail)
    WHERE o.outcome = 'changed' AND e.happened
    ORDER BY o.id, e.step
),
hints AS (
    SELECT min(o.id) AS first_id,
           casework_hint(kind => 'bulk', queue => o.queue,
                         item_ids => (array_agg(o.id ORDER BY o.id))[1:100],
                         items_cut_short => count(*) > 100) AS notification
    FROM outcomes AS o
    WHERE o.outcome = 'changed'
    GROUP BY o.queue
)
SELECT f.passes, f.more, x.*, h.notification
FROM fence AS f
LEFT JOIN (
    SELECT c.*, 'changed' AS outcome, NULL::text AS skipped_owner FROM changed AS c
    UNION ALL
    SELECT l.*, o.outcome, CASE WHEN o.outcome = 'leased' THEN l.lease_owner END
    FROM locked AS l
    JOIN outcomes AS o ON o.id = l.id
    WHERE o.outcome <> 'changed'
) AS x ON true
LEFT JOIN hints AS h ON h.first_id = x.id
ORDER BY x.id;

-- name: items_bulk_diagnose
-- Read-only: why did a bulk action's fence refuse? Runs only on that failure path. Arguments
-- an action does not take are NULL. The first id (lowest) that is missing or outside
-- :queue_scope, the first that is an exception's item, the first queue (of the waiting items
-- and the filter's queue) lacking the hold reason or the reviewer.
WITH found AS (
    SELECT i.id, i.queue, i.kind, i.state
    FROM review_items AS i
    WHERE i.id = ANY (:item_ids::bigint[])
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
),
concerned AS (
    SELECT f.queue FROM found AS f WHERE f.state = 'pending' AND f.kind = 'review'
    UNION
    SELECT :queue::text WHERE :queue::text IS NOT NULL
)
SELECT (SELECT min(u.id) FROM unnest(:item_ids::bigint[]) AS u (id)
        WHERE NOT EXISTS (SELECT 1 FROM found AS f WHERE f.id = u.id)) AS missing_id,
       (SELECT min(f.id) FROM found AS f WHERE f.kind = 'exception') AS exception_id,
       :queue::text IS NULL OR EXISTS (SELECT 1 FROM queues AS q WHERE q.name = :queue)
           AS queue_known,
       :to_queue::text IS NULL OR EXISTS (SELECT 1 FROM queues AS q WHERE q.name = :to_queue)
           AS to_queue_known,
       (SELECT min(c.queue) FROM concerned AS c
        WHERE :reason::text IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM hold_reasons AS r
                          WHERE r.queue = c.queue AND r.code = :reason)) AS reason_missing_in,
       (SELECT min(c.queue) FROM concerned AS c
        WHERE :reviewer::text IS NOT NULL
          AND NOT EXISTS (SELECT 1
                            FROM api_tokens AS t
                            JOIN queues AS q ON q.name = c.queue
                            WHERE t.user_name = :reviewer
                              AND t.role = q.holder_role
                              AND t.revoked_at IS NULL
                              AND (t.expires_at IS NULL OR t.expires_at > now())
                              AND (c.queue = ANY (t.queues)
                                   OR (t.role <> 'reviewer' AND t.queues = '{}')))) AS reviewer_missing_in,
       :until::timestamptz IS NULL
       OR (:until::timestamptz > now()
           AND :until::timestamptz <= now() + make_interval(secs => :max_seconds))
           AS until_in_range;
