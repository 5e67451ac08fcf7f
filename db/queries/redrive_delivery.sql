-- Delivering redrives by webhook. Like applications_claim and friends (applications.sql): claim
-- due deliveries under a lock that lapses, attempt outside any transaction, record.

-- name: redrive_deliveries_claim
-- Takes up to :batch_size due deliveries for one attempt each, with what the owning system
-- needs: the key, where to resume, and the approved correction; and how to sign it (the
-- workflow's current secret, the rotated-out ones still in their overlap, newest first,
-- and whether the legacy headers go too: migration 0032).
WITH due AS (
    SELECT x.key
    FROM exception_redrives AS x
    JOIN exceptions AS e ON e.id = x.exception_id
    JOIN workflows AS w ON w.name = x.workflow
    WHERE x.delivery_state = 'pending'
      AND x.next_delivery_at <= now()
      AND (x.delivery_locked_until IS NULL OR x.delivery_locked_until <= now())
      -- Only the current redrive of a workflow that still takes them by webhook.
      AND x.result IS NULL
      AND x.version = e.version
      AND w.redrive_via = 'webhook'
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
SELECT c.key, c.exception_id, c.workflow, c.source_record_id, c.version, c.resume_after,
       c.stale_steps, c.requested_by, c.requested_at, c.delivery_attempts,
       e.completed_steps, e.blocked_step, e.reason_code,
       k.changes, k.evidence AS correction_evidence, k.corrected_by,
       w.redrive_target, w.redrive_secret, w.redrive_max_attempts, w.redrive_timeout_seconds,
       w.redrive_legacy_headers,
       ARRAY(SELECT r.secret FROM retiring_webhook_secrets AS r
             WHERE r.workflow = w.name AND r.expires_at > now()
             ORDER BY r.retired_at DESC, r.id DESC) AS redrive_retiring_secrets
FROM claimed AS c
JOIN exceptions AS e ON e.id = c.exception_id
JOIN exception_corrections AS k
    ON k.workflow = c.workflow AND k.source_record_id = c.source_record_id
   AND k.version = c.version
JOIN workflows AS w ON w.name = c.workflow;

-- name: redrive_delivery_record_delivered
-- Fence: only the latest attempt (:attempt) of a pending delivery counts (one that outlived
-- its lock must not undo the one that took over).
UPDATE exception_redrives AS x
SET delivery_state = 'delivered', delivered_at = now(), next_delivery_at = NULL,
    delivery_locked_until = NULL, last_delivery_error = NULL
WHERE x.key = :redrive_key AND x.delivery_state = 'pending' AND x.delivery_attempts = :attempt
RETURNING x.key;

-- name: redrive_delivery_record_failure
-- Retried at :next_attempt_at unless permanent or the last attempt allowed: then `failed`,
-- and the caller reports the redrive failed in the same transaction.
-- Fence: as for redrive_delivery_record_delivered.
-- :error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
UPDATE exception_redrives AS x
SET delivery_state = CASE WHEN :permanent OR x.delivery_attempts >= w.redrive_max_attempts
                          THEN 'failed' ELSE 'pending' END,
    next_delivery_at = CASE WHEN :permanent OR x.delivery_attempts >= w.redrive_max_attempts
                            THEN NULL ELSE :next_attempt_at::timestamptz END,
    delivery_locked_until = NULL,
    last_delivery_error = :error
FROM workflows AS w
WHERE w.name = x.workflow AND x.key = :redrive_key AND x.delivery_state = 'pending'
  AND x.delivery_attempts = :attempt
RETURNING x.delivery_state;
