-- Redrives by broker (workflows with redrive_via = 'broker'): `casework intake` publishes the
-- corrected message back to where the original failed. Claimed like redrive_deliveries_claim
-- (redrive_delivery.sql), under a lock that lapses; published outside any transaction;
-- recorded with redrive_delivery_record_delivered / redrive_delivery_record_failure.

-- name: intake_redrives_claim
-- Takes up to :batch_size due broker redrives for one attempt each, for an intake whose
-- sources are :sources: those whose exception's newest intake message (by received_at)
-- came from one of them, with that message (its source, origin, body and headers) and the
-- approved correction's changes. Also those whose exception has no intake message at all
-- (raised through the API, not by an intake): there is nothing to publish, and the caller
-- fails them to a person at once (source NULL). The apply worker never takes these
-- (redrive_deliveries_claim takes webhook redrives only), nor does an intake whose sources
-- do not include the message's.
WITH due AS (
    SELECT x.key
    FROM exception_redrives AS x
    JOIN exceptions AS e ON e.id = x.exception_id
    JOIN workflows AS w ON w.name = x.workflow
    LEFT JOIN LATERAL (
        SELECT m.source
        FROM intake_messages AS m
        WHERE m.exception_id = x.exception_id
        ORDER BY m.received_at DESC, m.source DESC, m.message_id DESC
        LIMIT 1
    ) AS newest ON true
    WHERE x.delivery_state = 'pending'
      AND x.next_delivery_at <= now()
      AND (x.delivery_locked_until IS NULL OR x.delivery_locked_until <= now())
      -- Only the current redrive of a workflow that still takes them by broker.
      AND x.result IS NULL
      AND x.version = e.version
      AND w.redrive_via = 'broker'
      AND (newest.source = ANY (:sources::text[]) OR newest.source IS NULL)
    ORDER BY x.next_delivery_at
    LIMIT :batch_size
    FOR UPDATE OF x SKIP LOCKED
),
claimed AS (
    UPDATE exception_redrives AS x
    SET delivery_attempts = x.delivery_attempts + 1,
        delivery_locked_until = now()
            + make_interval(secs => w.redrive_timeout_seconds * 2 + 10)
    FROM due, workflows AS w
    WHERE x.key = due.key AND w.name = x.workflow
    RETURNING x.*
)
SELECT c.key, c.exception_id, c.workflow, c.source_record_id, c.version,
       c.delivery_attempts, k.changes, w.redrive_max_attempts, w.redrive_timeout_seconds,
       m.source, m.message_id, m.broker, m.origin, m.body, m.headers
FROM claimed AS c
JOIN exception_corrections AS k
    ON k.workflow = c.workflow AND k.source_record_id = c.source_record_id
   AND k.version = c.version
JOIN workflows AS w ON w.name = c.workflow
LEFT JOIN LATERAL (
    SELECT m.source, m.message_id, m.broker, m.origin, m.body, m.headers
    FROM intake_messages AS m
    WHERE m.exception_id = c.exception_id
    ORDER BY m.received_at DESC, m.source DESC, m.message_id DESC
    LIMIT 1
) AS m ON true;
