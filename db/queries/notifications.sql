-- Notifications to the owners of waiting work (migrations 0034, 0036): an admin's channels
-- and rules, the unclaimed sweep, and the delivery of notification_deliveries. Delivery is
-- claimed, sent outside any transaction, and recorded, as webhook events are
-- (integrations.sql): a claim takes a lock that lapses, and only the latest attempt's
-- outcome is recorded (the `attempts` fence).

-- name: notification_channel_insert
INSERT INTO notification_channels AS c (id, name, kind, target, rate_per_minute,
                                        digest_minutes, enabled, created_by)
VALUES (:id, :name, :kind, :target, :rate_per_minute, :digest_minutes, :enabled, :created_by)
ON CONFLICT (name) DO NOTHING
RETURNING c.id;

-- name: notification_channels_get
-- Channels by id (NULL: every channel), by name, each with its rules and its pending and
-- failed notifications.
SELECT c.*,
       ARRAY(SELECT r.name FROM notification_rules AS r
             WHERE r.channel_id = c.id ORDER BY r.name) AS rule_names,
       (SELECT count(*) FROM notification_deliveries AS d
        WHERE d.channel_id = c.id AND d.state = 'pending') AS pending_notifications,
       (SELECT count(*) FROM notification_deliveries AS d
        WHERE d.channel_id = c.id AND d.state = 'failed') AS failed_notifications
FROM notification_channels AS c
WHERE :ids::uuid[] IS NULL OR c.id = ANY (:ids::uuid[])
ORDER BY c.name;

-- name: notification_channel_update
-- Every setting at once (the caller merged what it was given with what was there).
UPDATE notification_channels AS c
SET name = :name, target = :target, rate_per_minute = :rate_per_minute,
    digest_minutes = :digest_minutes, enabled = :enabled, updated_at = now()
WHERE c.id = :id
  AND NOT EXISTS (SELECT 1 FROM notification_channels AS o WHERE o.name = :name AND o.id <> :id)
RETURNING c.id;

-- name: notification_channel_delete
-- Refused (no row) while a rule sends to it; its notifications go with it.
DELETE FROM notification_channels AS c
WHERE c.id = :id
  AND NOT EXISTS (SELECT 1 FROM notification_rules AS r WHERE r.channel_id = c.id)
RETURNING c.id;

-- name: notification_rule_insert
INSERT INTO notification_rules AS r (id, name, event, queues, workflows,
                                     unclaimed_after_seconds, channel_id, enabled, created_by)
VALUES (:id, :name, :event, :queues::text[], :workflows::text[], :unclaimed_after_seconds,
        :channel_id, :enabled, :created_by)
ON CONFLICT (name) DO NOTHING
RETURNING r.id;

-- name: notification_rules_get
-- Rules by id (NULL: every rule), by name, with their channel's name.
SELECT r.*, c.name AS channel_name
FROM notification_rules AS r
JOIN notification_channels AS c ON c.id = r.channel_id
WHERE :ids::uuid[] IS NULL OR r.id = ANY (:ids::uuid[])
ORDER BY r.name;

-- name: notification_rule_update
UPDATE notification_rules AS r
SET name = :name, event = :event, queues = :queues::text[], workflows = :workflows::text[],
    unclaimed_after_seconds = :unclaimed_after_seconds, channel_id = :channel_id,
    enabled = :enabled, updated_at = now()
WHERE r.id = :id
  AND NOT EXISTS (SELECT 1 FROM notification_rules AS o WHERE o.name = :name AND o.id <> :id)
RETURNING r.id;

-- name: notification_rule_delete
-- Its notifications, sent or not, go with it.
DELETE FROM notification_rules AS r WHERE r.id = :id RETURNING r.id;

-- name: notification_unclaimed_sweep
-- item.unclaimed, for rules only: per enabled UNCLAIMED rule of an enabled channel, at most
-- :batch_size pending items of its queues nobody holds (no live lease, no hold) that have
-- waited longer than its bound since casework_unclaimed_since (0036). The event and the rule's delivery row are
-- written together; the key (rule, item, since) makes a second sweep, or a second worker,
-- write nothing. Items a claim or a decision is changing are skipped (SKIP LOCKED) for
-- the next round. `written`: notifications written.
WITH rules AS (
    SELECT r.id, r.channel_id, r.queues, r.unclaimed_after_seconds
    FROM notification_rules AS r
    JOIN notification_channels AS c ON c.id = r.channel_id
    WHERE r.event = 'UNCLAIMED' AND r.enabled AND c.enabled AND r.queues IS NOT NULL
),
found AS (
    SELECT r.id AS rule_id, r.channel_id, w.id AS item_id, w.queue, w.external_key, w.since
    FROM rules AS r
    CROSS JOIN LATERAL (
        SELECT i.id, i.queue, i.external_key, s.since
        FROM review_items AS i
        CROSS JOIN LATERAL (SELECT casework_unclaimed_since(i.id) AS since) AS s
        WHERE i.queue = ANY (r.queues)
          AND i.state = 'pending'
          AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
          AND (i.held_until IS NULL OR i.held_until <= now())
          -- What waited since before the bound was enqueued before it: the cheap filter.
          AND i.created_at <= now() - make_interval(secs => r.unclaimed_after_seconds)
          AND s.since <= now() - make_interval(secs => r.unclaimed_after_seconds)
          AND NOT EXISTS (
              SELECT 1 FROM outbox_events AS o
              WHERE o.dedupe_key = 'item.unclaimed:' || r.id || ':' || i.id || ':'
                                   || casework_event_micros(s.since))
        ORDER BY s.since, i.id
        LIMIT :batch_size
        FOR SHARE OF i SKIP LOCKED
    ) AS w
),
events AS (
    INSERT INTO outbox_events AS o (message_id, event_type, item_id, queue, data, dedupe_key)
    SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), 'item.unclaimed', f.item_id,
           f.queue,
           jsonb_build_object('itemId', f.item_id::text, 'externalKey', f.external_key,
                              'queue', f.queue, 'since', casework_event_time(f.since),
                              'ruleId', f.rule_id::text),
           'item.unclaimed:' || f.rule_id || ':' || f.item_id || ':'
               || casework_event_micros(f.since)
    FROM found AS f
    ON CONFLICT ON CONSTRAINT outbox_events_dedupe_key_key DO NOTHING
    RETURNING o.id, o.item_id, (o.data ->> 'ruleId')::uuid AS rule_id
),
written AS (
    INSERT INTO notification_deliveries (event_id, rule_id, channel_id, item_id)
    SELECT e.id, e.rule_id, f.channel_id, e.item_id
    FROM events AS e
    JOIN found AS f ON f.rule_id = e.rule_id AND f.item_id = e.item_id
    ON CONFLICT (rule_id, event_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) AS written FROM written;

-- name: notification_sweep_lock
-- One unclaimed sweeper at a time across workers (the others skip the round).
SELECT pg_try_advisory_xact_lock(hashtext('casework.notification_sweep')) AS locked;

-- name: notification_channels_due
-- Channels with a delivery row due now (pending, its time come, not in flight), each
-- locked by one claimer at a time (SKIP LOCKED: another worker takes other channels), with
-- what its rate limit and its digest need: messages sent in the last minute (a digest's
-- rows share their sent_at: one message), messages in flight, and the last digest's time.
SELECT c.id, c.kind, c.target, c.rate_per_minute, c.digest_minutes,
       (SELECT CASE WHEN c.digest_minutes IS NULL THEN count(*)
                    ELSE count(DISTINCT d.sent_at) END
        FROM notification_deliveries AS d
        WHERE d.channel_id = c.id AND d.state = 'sent'
          AND d.sent_at > now() - interval '1 minute') AS sent_last_minute,
       (SELECT CASE WHEN c.digest_minutes IS NULL THEN count(*)
                    ELSE count(DISTINCT d.locked_until) END
        FROM notification_deliveries AS d
        WHERE d.channel_id = c.id AND d.state = 'pending' AND d.locked_until > now())
           AS in_flight,
       (SELECT max(d.sent_at) FROM notification_deliveries AS d
        WHERE d.channel_id = c.id AND d.state = 'sent') AS last_sent_at
FROM notification_channels AS c
WHERE c.enabled
  AND EXISTS (SELECT 1 FROM notification_deliveries AS d
              WHERE d.channel_id = c.id AND d.state = 'pending'
                AND d.next_attempt_at <= now()
                AND (d.locked_until IS NULL OR d.locked_until <= now()))
ORDER BY c.id
LIMIT :channel_limit
FOR UPDATE OF c SKIP LOCKED;

-- name: notification_deliveries_claim
-- Up to :batch_size due notifications of one channel, oldest first, locked for
-- :lock_seconds (one lock time for all: a digest's rows are one message). Each with what
-- its notice is built from: the event's data and the rule, never the item's payload.
WITH due AS (
    SELECT d.id
    FROM notification_deliveries AS d
    WHERE d.channel_id = :channel_id AND d.state = 'pending'
      AND d.next_attempt_at <= now()
      AND (d.locked_until IS NULL OR d.locked_until <= now())
    ORDER BY d.id
    LIMIT :batch_size
    FOR UPDATE SKIP LOCKED
),
claimed AS (
    UPDATE notification_deliveries AS d
    SET locked_until = now() + make_interval(secs => :lock_seconds),
        attempts = d.attempts + 1
    FROM due
    WHERE d.id = due.id
    RETURNING d.id, d.event_id, d.rule_id, d.item_id, d.attempts, d.created_at
)
SELECT k.id, k.item_id, k.attempts, k.created_at, o.event_type, o.data, o.occurred_at,
       o.queue, o.workflow, o.exception_id, r.name AS rule_name, r.event
FROM claimed AS k
JOIN outbox_events AS o ON o.id = k.event_id
JOIN notification_rules AS r ON r.id = k.rule_id
ORDER BY k.id;

-- name: notification_deliveries_record_sent
-- Sent, for the attempts made by this claim only (the fence: (id, attempts) pairs); one
-- statement, so a digest's rows share their sent_at.
UPDATE notification_deliveries AS d
SET state = 'sent', sent_at = now(), locked_until = NULL, last_error = NULL
FROM unnest(:ids::bigint[], :attempts::integer[]) AS a (id, attempt)
WHERE d.id = a.id AND d.attempts = a.attempt AND d.state = 'pending'
RETURNING d.id;

-- name: notification_deliveries_record_failure
-- A failed attempt: tried again at :next_attempt_at, or failed for good when :permanent or
-- when :max_attempts are spent.
UPDATE notification_deliveries AS d
SET state = CASE WHEN :permanent::boolean OR d.attempts >= :max_attempts THEN 'failed'
                 ELSE 'pending' END,
    next_attempt_at = :next_attempt_at, locked_until = NULL, last_error = :error
FROM unnest(:ids::bigint[], :attempts::integer[]) AS a (id, attempt)
WHERE d.id = a.id AND d.attempts = a.attempt AND d.state = 'pending'
RETURNING d.id, d.state;
