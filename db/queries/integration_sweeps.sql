-- The time-based events (item.overdue, lease.lapsed): nothing changes when a due time or a
-- lease end passes, so the apply worker sweeps for them (server/domain/integrations/sweeps.py).
-- Each sweep walks, per subscribed queue, the partial index the claim path keeps for the
-- same question (review_items_due, review_items_lease_expiry) from the queue's mark in
-- outbox_sweep_marks, at most :batch_size occurrences a queue a round, and never further
-- back than :lookback_seconds. Each occurrence is written once: its dedupe key (the one
-- the triggers of migration 0033 use when a claim or a move notices it first) makes a
-- repeat a no-op. Items are taken FOR SHARE SKIP LOCKED: one a claim, a move or a decision
-- is changing is left for the next round, so the sweep never waits on them, nor they on it.
-- So that such an item is not passed over for good, a round that is not full moves the mark
-- only to :settle_seconds ago: the next rounds look at the last :settle_seconds again,
-- skipping (by the unique dedupe key's index) what was written already. An idle queue's
-- mark is written only when it falls 2 x :settle_seconds behind.

-- name: outbox_sweep_marks_start
-- The (event type, queue) pairs an enabled endpoint subscribes to now, or an enabled
-- OVERDUE rule (notification_rules) watches (migration 0036); a pair seen for the first time gets
-- its mark at now(). `subscribed` 0: nothing to sweep (one probe of webhook_endpoints and
-- of notification_rules, what an idle deployment pays a round).
WITH subscribed AS (
    SELECT DISTINCT t.event_type, q.queue
    FROM webhook_endpoints AS e,
         unnest(e.event_types) AS t (event_type),
         unnest(e.queues) AS q (queue)
    WHERE e.enabled
      AND e.queues IS NOT NULL
      AND t.event_type IN ('item.overdue', 'lease.lapsed')
    UNION
    SELECT 'item.overdue', q.queue
    FROM notification_rules AS r
    JOIN notification_channels AS c ON c.id = r.channel_id,
         unnest(r.queues) AS q (queue)
    WHERE r.enabled AND c.enabled AND r.event = 'OVERDUE' AND r.queues IS NOT NULL
),
started AS (
    INSERT INTO outbox_sweep_marks (event_type, queue, swept_until)
    SELECT s.event_type, s.queue, now() FROM subscribed AS s
    ON CONFLICT DO NOTHING
)
SELECT count(*) AS subscribed FROM subscribed;

-- name: outbox_sweep_lock
-- One sweeper at a time across workers (the others skip the round): the transaction's own
-- advisory lock, released at its end.
SELECT pg_try_advisory_xact_lock(hashtext('casework.outbox_sweep')) AS locked;

-- name: items_sweep_overdue
-- item.overdue for waiting items whose due time passed since the queue's mark. `found`:
-- occurrences looked at; `written`: events written (0 for one a move already wrote).
WITH marks AS (
    SELECT m.queue, m.swept_until, m.swept_item_id
    FROM outbox_sweep_marks AS m
    WHERE m.event_type = 'item.overdue'
      AND casework_outbox_wanted('{item.overdue}', m.queue, NULL)
),
found AS (
    SELECT m.queue, c.id, c.due_at
    FROM marks AS m
    CROSS JOIN LATERAL (
        SELECT i.id, i.due_at
        FROM review_items AS i
        WHERE i.queue = m.queue
          AND i.state = 'pending'
          AND i.due_at <= now()
          AND i.due_at >= greatest(m.swept_until, now() - make_interval(secs => :lookback_seconds))
          AND (i.due_at, i.id) > (m.swept_until, m.swept_item_id)
          AND NOT EXISTS (SELECT 1 FROM outbox_events AS o
                          WHERE o.dedupe_key = 'item.overdue:' || i.id || ':' || casework_event_micros(i.due_at))
        ORDER BY i.due_at, i.id
        LIMIT :batch_size
        FOR SHARE OF i SKIP LOCKED
    ) AS c
),
emitted AS (
    SELECT f.queue, f.id, f.due_at,
           casework_outbox_emit('item.overdue', f.id, NULL, f.queue, NULL,
                                casework_overdue_event_data(f.id, f.queue, f.due_at),
                                'item.overdue:' || f.id || ':' || casework_event_micros(f.due_at))
               AS event_id
    FROM found AS f
),
counted AS (
    SELECT e.queue, count(*) AS found, count(e.event_id) AS written,
           (array_agg(e.due_at ORDER BY e.due_at DESC, e.id DESC))[1] AS last_at,
           (array_agg(e.id ORDER BY e.due_at DESC, e.id DESC))[1] AS last_id
    FROM emitted AS e
    GROUP BY e.queue
),
-- A full batch: resume after its last; fewer: everything due until :settle_seconds ago is
-- done (see the top of the file).
marked AS (
    UPDATE outbox_sweep_marks AS m
    SET swept_until = CASE WHEN c.found >= :batch_size THEN c.last_at
                           ELSE greatest(m.swept_until,
                                         now() - make_interval(secs => :settle_seconds)) END,
        swept_item_id = CASE WHEN c.found >= :batch_size THEN c.last_id ELSE 0 END
    FROM marks AS k
    LEFT JOIN counted AS c ON c.queue = k.queue
    WHERE m.event_type = 'item.overdue' AND m.queue = k.queue
      AND (c.found IS NOT NULL
           OR m.swept_until < now() - make_interval(secs => 2 * :settle_seconds))
)
SELECT coalesce(sum(c.found), 0)::bigint AS found, coalesce(sum(c.written), 0)::bigint AS written
FROM counted AS c;

-- name: leases_sweep_lapsed
-- lease.lapsed for leases that ran out, unnoticed, since the queue's mark (a claim, a move
-- or a revocation that notices one first writes it from the item's timeline, with the
-- same key). `found` and `written` as items_sweep_overdue's.
WITH marks AS (
    SELECT m.queue, m.swept_until, m.swept_item_id
    FROM outbox_sweep_marks AS m
    WHERE m.event_type = 'lease.lapsed'
      AND casework_outbox_wanted('{lease.lapsed}', m.queue, NULL)
),
found AS (
    SELECT m.queue, c.id, c.lease_token, c.lease_owner, c.lease_started_at, c.lease_expires_at
    FROM marks AS m
    CROSS JOIN LATERAL (
        SELECT i.id, i.lease_token, i.lease_owner, i.lease_started_at, i.lease_expires_at
        FROM review_items AS i
        WHERE i.queue = m.queue
          AND i.state = 'pending'
          AND i.lease_token IS NOT NULL
          AND i.lease_expires_at <= now()
          AND i.lease_expires_at >= greatest(m.swept_until,
                                             now() - make_interval(secs => :lookback_seconds))
          AND (i.lease_expires_at, i.id) > (m.swept_until, m.swept_item_id)
          AND NOT EXISTS (SELECT 1 FROM outbox_events AS o
                          WHERE o.dedupe_key = 'lease.lapsed:' || i.lease_token::text)
        ORDER BY i.lease_expires_at, i.id
        LIMIT :batch_size
        FOR SHARE OF i SKIP LOCKED
    ) AS c
),
emitted AS (
    SELECT f.queue, f.id, f.lease_expires_at,
           casework_outbox_emit('lease.lapsed', f.id, NULL, f.queue, NULL,
                                casework_lapse_event_data(f.id, f.queue, f.lease_owner,
                                                          f.lease_started_at, f.lease_expires_at),
                                'lease.lapsed:' || f.lease_token::text)
               AS event_id
    FROM found AS f
),
counted AS (
    SELECT e.queue, count(*) AS found, count(e.event_id) AS written,
           (array_agg(e.lease_expires_at ORDER BY e.lease_expires_at DESC, e.id DESC))[1]
               AS last_at,
           (array_agg(e.id ORDER BY e.lease_expires_at DESC, e.id DESC))[1] AS last_id
    FROM emitted AS e
    GROUP BY e.queue
),
marked AS (
    UPDATE outbox_sweep_marks AS m
    SET swept_until = CASE WHEN c.found >= :batch_size THEN c.last_at
                           ELSE greatest(m.swept_until,
                                         now() - make_interval(secs => :settle_seconds)) END,
        swept_item_id = CASE WHEN c.found >= :batch_size THEN c.last_id ELSE 0 END
    FROM marks AS k
    LEFT JOIN counted AS c ON c.queue = k.queue
    WHERE m.event_type = 'lease.lapsed' AND m.queue = k.queue
      AND (c.found IS NOT NULL
           OR m.swept_until < now() - make_interval(secs => 2 * :settle_seconds))
)
SELECT coalesce(sum(c.found), 0)::bigint AS found, coalesce(sum(c.written), 0)::bigint AS written
FROM counted AS c;
