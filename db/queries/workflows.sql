-- name: workflow_upsert
-- Creates a workflow or changes its settings (NULL leaves one as it is; the redrive route,
-- target and secret change together). :clear_reviewer_minutes and :clear_approver_minutes
-- unset those minutes (NULL: capacity unknown). Its approval queue becomes a queue
-- approvers work. Step-up (migration 0023): :require_auth_within_seconds 0 and
-- :require_acr '' clear them, NULL leaves them.
-- Standard Webhooks (migration 0032): :redrive_legacy_headers also sends Casework-Signature
-- and Idempotency-Key (NULL leaves it; a new webhook starts without; a route that is not a
-- webhook never has it). A new route (:redrive_via given) replaces the secret at once: any
-- rotated-out secret still in its overlap stops signing.
WITH overlap_ended AS (
    DELETE FROM retiring_webhook_secrets AS r
    WHERE r.workflow = :name AND :redrive_via::text IS NOT NULL
),
upserted AS (
    INSERT INTO workflows AS w (name, approval_queue, redrive_via, redrive_target,
                                redrive_secret, redrive_max_attempts, redrive_timeout_seconds,
                                reviewer_minutes_per_day, approver_minutes_per_day,
                                require_auth_within_seconds, require_acr,
                                redrive_legacy_headers)
    VALUES (:name, :approval_queue, coalesce(:redrive_via, 'subscription'), :redrive_target,
            :redrive_secret, coalesce(:redrive_max_attempts, 8),
            coalesce(:redrive_timeout_seconds::double precision, 10),
            :reviewer_minutes_per_day::double precision,
            :approver_minutes_per_day::double precision,
            nullif(:require_auth_within_seconds::integer, 0), nullif(:require_acr::text, ''),
            coalesce(:redrive_via::text, 'subscription') = 'webhook'
                AND coalesce(:redrive_legacy_headers::boolean, false))
    ON CONFLICT (name) DO UPDATE
        SET approval_queue = coalesce(:approval_queue, w.approval_queue),
            redrive_via = coalesce(:redrive_via, w.redrive_via),
            redrive_target = CASE WHEN :redrive_via IS NULL THEN w.redrive_target ELSE :redrive_target END,
            redrive_secret = CASE WHEN :redrive_via IS NULL THEN w.redrive_secret ELSE :redrive_secret END,
            redrive_max_attempts = coalesce(:redrive_max_attempts, w.redrive_max_attempts),
            redrive_timeout_seconds = coalesce(:redrive_timeout_seconds::double precision, w.redrive_timeout_seconds),
            reviewer_minutes_per_day =
                CASE WHEN :clear_reviewer_minutes::boolean THEN NULL
                     ELSE coalesce(:reviewer_minutes_per_day::double precision,
                                   w.reviewer_minutes_per_day) END,
            approver_minutes_per_day =
                CASE WHEN :clear_approver_minutes::boolean THEN NULL
                     ELSE coalesce(:approver_minutes_per_day::double precision,
                                   w.approver_minutes_per_day) END,
            require_auth_within_seconds =
                CASE WHEN :require_auth_within_seconds::integer IS NULL
                     THEN w.require_auth_within_seconds
                     ELSE nullif(:require_auth_within_seconds::integer, 0) END,
            require_acr = CASE WHEN :require_acr::text IS NULL THEN w.require_acr
                               ELSE nullif(:require_acr::text, '') END,
            redrive_legacy_headers = coalesce(:redrive_via::text, w.redrive_via) = 'webhook'
                AND coalesce(:redrive_legacy_headers::boolean,
                             w.redrive_legacy_headers AND w.redrive_via = 'webhook'),
            updated_at = now()
    RETURNING w.*
),
approvers AS (
    UPDATE queues AS q SET holder_role = 'approver', updated_at = now()
    FROM upserted AS u
    WHERE q.name = u.approval_queue AND q.holder_role <> 'approver'
),
-- A workflow that stops taking redrives by webhook or broker takes its undelivered ones by
-- its new route (the owning system still sees them in exceptionEvents and exception
-- queries); between webhook and broker they stay due, for the new route to deliver.
undelivered AS (
    UPDATE exception_redrives AS x
    SET delivery_state = NULL, next_delivery_at = NULL, delivery_locked_until = NULL
    FROM upserted AS u
    WHERE x.workflow = u.name AND u.redrive_via NOT IN ('webhook', 'broker')
      AND x.delivery_state = 'pending'
)
SELECT u.* FROM upserted AS u;

-- name: workflows_get_by_names
SELECT w.* FROM workflows AS w WHERE w.name = ANY (:names::text[]);

-- name: workflows_list
SELECT w.* FROM workflows AS w ORDER BY w.name;

-- name: workflow_redrive_secret_rotate
-- Rotates the signing secret of a workflow whose redrives go by webhook, as
-- queue_effect_secret_rotate does for a queue's effect. No row: no such workflow, or its
-- redrives do not go by webhook.
WITH target AS (
    SELECT w.name, w.redrive_secret
    FROM workflows AS w
    WHERE w.name = :workflow AND w.redrive_via = 'webhook'
    FOR UPDATE
),
pruned AS (
    DELETE FROM retiring_webhook_secrets AS r
    USING target AS t
    WHERE r.workflow = t.name AND r.expires_at <= now()
),
retired AS (
    INSERT INTO retiring_webhook_secrets (workflow, secret, expires_at)
    SELECT t.name, t.redrive_secret, now() + make_interval(secs => :overlap_seconds)
    FROM target AS t
    WHERE :overlap_seconds::double precision > 0
    RETURNING expires_at
),
rotated AS (
    UPDATE workflows AS w
    SET redrive_secret = :secret, updated_at = now()
    FROM target AS t
    WHERE w.name = t.name
    RETURNING w.*
)
SELECT r.*,
       greatest((SELECT max(x.expires_at) FROM retiring_webhook_secrets AS x
                 WHERE x.workflow = r.name AND x.expires_at > now()),
                (SELECT max(n.expires_at) FROM retired AS n)) AS overlap_ends_at
FROM rotated AS r;

-- name: workflow_redrive_secret_overlaps
SELECT r.workflow, max(r.expires_at) AS overlap_ends_at
FROM retiring_webhook_secrets AS r
WHERE r.workflow = ANY (:workflows::text[]) AND r.expires_at > now()
GROUP BY r.workflow;
