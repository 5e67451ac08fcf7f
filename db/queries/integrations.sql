-- Webhook endpoints (an admin's), their signing secrets, and the delivery of the event
-- outbox (migration 0031). Delivery is claimed, attempted outside any transaction, and
-- recorded, as decisions are (applications.sql): a claim takes a lock that lapses, and only
-- the latest attempt's outcome is recorded (the `attempts` fence).

-- name: webhook_endpoint_insert
-- A new endpoint and its first secret.
WITH endpoint AS (
    INSERT INTO webhook_endpoints AS e (id, url, description, event_types, queues, workflows,
                                        format, legacy_headers, max_attempts, timeout_seconds,
                                        created_by)
    VALUES (:id, :url, :description, :event_types::text[], :queues::text[],
            :workflows::text[], :format, :legacy_headers, :max_attempts, :timeout_seconds,
            :created_by)
    RETURNING e.id
)
INSERT INTO webhook_endpoint_secrets (endpoint_id, secret)
SELECT endpoint.id, :secret FROM endpoint
RETURNING endpoint_id;

-- name: webhook_endpoints_get
-- Endpoints by id (NULL: every endpoint), oldest first, each with the creation and expiry of
-- the secrets that sign now (newest first) and its deliveries waiting or failed.
SELECT e.*,
       ARRAY(SELECT s.created_at FROM webhook_endpoint_secrets AS s
             WHERE s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
             ORDER BY s.created_at DESC) AS secret_created_at,
       ARRAY(SELECT s.expires_at FROM webhook_endpoint_secrets AS s
             WHERE s.endpoint_id = e.id AND (s.expires_at IS NULL OR s.expires_at > now())
             ORDER BY s.created_at DESC) AS secret_expires_at,
       (SELECT count(*) FROM outbox_deliveries AS d
        WHERE d.endpoint_id = e.id AND d.state = 'pending') AS pending_deliveries,
       (SELECT count(*) FROM outbox_deliveries AS d
        WHERE d.endpoint_id = e.id AND d.state = 'failed') AS failed_deliveries
FROM webhook_endpoints AS e
WHERE :ids::uuid[] IS NULL OR e.id = ANY (:ids::uuid[])
ORDER BY e.created_at, e.id;

-- name: webhook_endpoint_update
-- Every setting at once (the caller merged what it was given with what was there).
UPDATE webhook_endpoints AS e
SET url = :url, description = :description, event_types = :event_types::text[],
    queues = :queues::text[], workflows = :workflows::text[], format = :format,
    legacy_headers = :legacy_headers, max_attempts = :max_attempts,
    timeout_seconds = :timeout_seconds, updated_at = now()
WHERE e.id = :id
RETURNING e.id;

-- name: webhook_endpoint_disable
-- New events are not recorded for a disabled endpoint; its pending deliveries wait.
UPDATE webhook_endpoints AS e
SET enabled = false, disabled_reason = :reason, disabled_at = now(), updated_at = now()
WHERE e.id = :id AND e.enabled
RETURNING e.id;

-- name: webhook_endpoint_enable
-- Its pending deliveries fall due now, each with a fresh round of attempts.
WITH endpoint AS (
    UPDATE webhook_endpoints AS e
    SET enabled = true, disabled_reason = NULL, disabled_at = NULL, updated_at = now()
    WHERE e.id = :id AND NOT e.enabled
    RETURNING e.id
),
resumed AS (
    UPDATE outbox_deliveries AS d
    SET next_attempt_at = CASE WHEN d.waiting_turn THEN d.next_attempt_at ELSE now() END,
        round_start = d.attempts
    FROM endpoint
    WHERE d.endpoint_id = endpoint.id AND d.state = 'pending'
      AND (d.locked_until IS NULL OR d.locked_until <= now())
)
SELECT endpoint.id FROM endpoint;

-- name: webhook_endpoint_delete
-- Its secrets and deliveries go with it; the events stay until retention prunes them.
DELETE FROM webhook_endpoints AS e WHERE e.id = :id RETURNING e.id;

-- name: webhook_endpoint_rotate_secret
-- :secret signs from now on; every secret signing now keeps signing beside it for
-- :overlap_seconds more (at most: one already ending sooner ends as planned), and secrets
-- whose time is over are forgotten.
WITH expired AS (
    DELETE FROM webhook_endpoint_secrets AS s
    WHERE s.endpoint_id = :id AND s.expires_at <= now()
),
overlapping AS (
    UPDATE webhook_endpoint_secrets AS s
    SET expires_at = least(coalesce(s.expires_at, 'infinity'),
                           now() + make_interval(secs => :overlap_seconds::double precision))
    WHERE s.endpoint_id = :id AND (s.expires_at IS NULL OR s.expires_at > now())
)
INSERT INTO webhook_endpoint_secrets (endpoint_id, secret)
SELECT e.id, :secret FROM webhook_endpoints AS e WHERE e.id = :id
RETURNING endpoint_id;

-- name: webhook_deliveries_page
-- An endpoint's deliveries, newest event first, in :state (NULL: any), before the event
-- :before_event_id (NULL: from the newest).
SELECT d.endpoint_id, d.event_id, d.state, d.attempts, d.next_attempt_at, d.last_status,
       d.last_error, d.delivered_at, d.created_at, d.locked_until, d.ordering_key,
       d.waiting_turn, o.message_id, o.event_type, o.occurred_at, o.item_id, o.exception_id, o.queue,
       o.workflow
FROM outbox_deliveries AS d
JOIN outbox_events AS o ON o.id = d.event_id
WHERE d.endpoint_id = :endpoint_id
  AND (:state::text IS NULL OR d.state = :state::text)
  AND (:before_event_id::bigint IS NULL OR d.event_id < :before_event_id::bigint)
ORDER BY d.event_id DESC
LIMIT :row_limit;

-- name: webhook_delivery_get
-- One delivery, by its endpoint and the event's webhook-id.
SELECT d.endpoint_id, d.event_id, d.state, d.attempts, d.next_attempt_at, d.last_status,
       d.last_error, d.delivered_at, d.created_at, d.locked_until, d.ordering_key,
       d.waiting_turn, o.message_id, o.event_type, o.occurred_at, o.item_id, o.exception_id, o.queue,
       o.workflow
FROM outbox_deliveries AS d
JOIN outbox_events AS o ON o.id = d.event_id
WHERE d.endpoint_id = :endpoint_id AND o.message_id = :message_id;

-- name: webhook_delivery_replay
-- A delivered or failed delivery goes out again, same webhook-id, with a fresh round of
-- attempts: at once, or after the subject's delivery pending now (the caller holds the
-- subject's lock, outbox_subject_lock). It is then the first of the line (the oldest event).
UPDATE outbox_deliveries AS d
SET state = 'pending', next_attempt_at = now(), locked_until = NULL, delivered_at = NULL,
    round_start = d.attempts,
    waiting_turn = EXISTS (SELECT 1 FROM outbox_deliveries AS p
                           WHERE p.endpoint_id = d.endpoint_id
                             AND p.ordering_key = d.ordering_key AND p.state = 'pending')
FROM outbox_events AS o
WHERE o.id = d.event_id AND d.endpoint_id = :endpoint_id AND o.message_id = :message_id
  AND d.state IN ('delivered', 'failed')
RETURNING d.event_id;

-- name: outbox_subject_lock
-- The lock casework_outbox_emit takes for the subject, held to the end of the transaction:
-- a subject's turn is handed on, or a replay queued, while no event of it is being added.
SELECT pg_advisory_xact_lock(hashtextextended('outbox ' || :ordering_key::text, 0));

-- name: outbox_delivery_next_turn
-- After a delivery of the subject left the line (delivered or failed): the first pending one
-- falls due now, if it was waiting. The caller holds outbox_subject_lock.
UPDATE outbox_deliveries AS d
SET waiting_turn = false, next_attempt_at = now()
WHERE d.endpoint_id = :endpoint_id AND d.ordering_key = :ordering_key AND d.state = 'pending'
  AND d.waiting_turn
  AND d.event_id = (SELECT min(p.event_id) FROM outbox_deliveries AS p
                    WHERE p.endpoint_id = :endpoint_id AND p.ordering_key = :ordering_key
                      AND p.state = 'pending')
RETURNING d.event_id;

-- name: outbox_deliveries_repair_turns
-- A safety net, run with retention: a waiting delivery with nothing pending before it falls
-- due (none should be found; the turn is handed on when a delivery leaves the line).
UPDATE outbox_deliveries AS d
SET waiting_turn = false, next_attempt_at = now()
WHERE d.state = 'pending' AND d.waiting_turn
  AND NOT EXISTS (SELECT 1 FROM outbox_deliveries AS p
                  WHERE p.endpoint_id = d.endpoint_id AND p.ordering_key = d.ordering_key
                    AND p.state = 'pending' AND p.event_id < d.event_id)
RETURNING d.event_id;

-- name: webhook_endpoints_any_enabled
-- Whether any endpoint takes deliveries: a worker that finds none leaves the claim below
-- out until it looks again, so a deployment without endpoints pays one probe per poll
-- interval instead of a claim per decision.
SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled) AS any_enabled;

-- name: outbox_deliveries_claim
-- Takes up to :batch_size due deliveries for one attempt each. Only the first pending
-- delivery of each (endpoint, subject) is due (the others are waiting_turn): a subject's
-- events go out one at a time, in event id order, and a retry holds back the ones behind
-- it. The NOT EXISTS re-checks the order on the few heads read. Endpoints disabled are
-- skipped.
WITH due AS (
    SELECT d.endpoint_id, d.event_id
    FROM outbox_deliveries AS d
    JOIN webhook_endpoints AS e ON e.id = d.endpoint_id
    WHERE d.state = 'pending' AND NOT d.waiting_turn
      AND d.next_attempt_at <= now()
      AND (d.locked_until IS NULL OR d.locked_until <= now())
      AND e.enabled
      AND NOT EXISTS (
          SELECT 1 FROM outbox_deliveries AS p
          WHERE p.endpoint_id = d.endpoint_id AND p.ordering_key = d.ordering_key
            AND p.state = 'pending' AND p.event_id < d.event_id
      )
    ORDER BY d.next_attempt_at
    LIMIT :batch_size
    FOR UPDATE OF d SKIP LOCKED
),
claimed AS (
    UPDATE outbox_deliveries AS d
    SET attempts = d.attempts + 1,
        locked_until = now() + make_interval(secs => e.timeout_seconds * 2 + 10)
    FROM due, webhook_endpoints AS e
    WHERE d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id
      AND e.id = d.endpoint_id
    RETURNING d.endpoint_id, d.event_id, d.ordering_key, d.attempts, d.round_start
)
SELECT c.endpoint_id, c.event_id, c.ordering_key, c.attempts AS attempt,
       c.attempts - c.round_start AS round_attempt,
       o.message_id, o.event_type, o.occurred_at, o.data, o.item_id, o.exception_id,
       o.queue, o.workflow,
       e.url, e.format, e.legacy_headers, e.timeout_seconds,
       ARRAY(SELECT s.secret FROM webhook_endpoint_secrets AS s
             WHERE s.endpoint_id = c.endpoint_id
               AND (s.expires_at IS NULL OR s.expires_at > now())
             ORDER BY s.created_at DESC) AS secrets
FROM claimed AS c
JOIN outbox_events AS o ON o.id = c.event_id
JOIN webhook_endpoints AS e ON e.id = c.endpoint_id;

-- name: outbox_delivery_record_delivered
-- Fence: only the latest attempt (:attempt) of a pending delivery counts.
UPDATE outbox_deliveries AS d
SET state = 'delivered', delivered_at = now(), locked_until = NULL, last_status = :status,
    last_error = NULL
WHERE d.endpoint_id = :endpoint_id AND d.event_id = :event_id AND d.state = 'pending'
  AND d.attempts = :attempt
RETURNING d.event_id;

-- name: outbox_delivery_record_failure
-- Retried at :next_attempt_at, unless :permanent or the round's last attempt: then
-- `failed` (an admin may replay it). Fence: as for outbox_delivery_record_delivered.
-- :error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
UPDATE outbox_deliveries AS d
SET state = CASE WHEN :permanent OR d.attempts - d.round_start >= e.max_attempts
                 THEN 'failed' ELSE 'pending' END,
    next_attempt_at = CASE WHEN :permanent OR d.attempts - d.round_start >= e.max_attempts
                           THEN d.next_attempt_at ELSE :next_attempt_at::timestamptz END,
    locked_until = NULL,
    last_status = :status,
    last_error = :error
FROM webhook_endpoints AS e
WHERE e.id = d.endpoint_id AND d.endpoint_id = :endpoint_id AND d.event_id = :event_id
  AND d.state = 'pending' AND d.attempts = :attempt
RETURNING d.state;

-- name: outbox_delivery_record_gone
-- The receiver answered 410: the endpoint is disabled (:reason), whichever attempt this
-- was, and the delivery stays pending for a re-enable. `disabled` is true when this call
-- disabled it (false: it was disabled already).
WITH delivery AS (
    UPDATE outbox_deliveries AS d
    SET locked_until = NULL, next_attempt_at = now(), last_status = 410, last_error = :error
    WHERE d.endpoint_id = :endpoint_id AND d.event_id = :event_id AND d.state = 'pending'
      AND d.attempts = :attempt
    RETURNING d.event_id
),
disabled AS (
    UPDATE webhook_endpoints AS e
    SET enabled = false, disabled_reason = :reason, disabled_at = now(), updated_at = now()
    WHERE e.id = :endpoint_id AND e.enabled
    RETURNING e.id
)
SELECT EXISTS (SELECT 1 FROM disabled) AS disabled,
       EXISTS (SELECT 1 FROM delivery) AS recorded;

-- name: outbox_prune
-- Retention (casework_outbox_prune): events older than :keep_seconds with nothing pending.
SELECT casework_outbox_prune(make_interval(secs => :keep_seconds::double precision),
                             :batch_size::integer) AS pruned;
