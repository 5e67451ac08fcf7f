-- name: workflow_upsert
-- Creates a workflow or changes its settings (NULL leaves one as it is; the redrive route,
-- target and secret change together). :clear_reviewer_minutes and :clear_approver_minutes
-- unset those minutes (NULL: capacity unknown). Its approval queue becomes a queue
-- approvers work. Step-up (migration 0023): :require_auth_within_seconds 0 and
-- :require_acr '' clear them, NULL leaves them.
WITH upserted AS (
    INSERT INTO workflows AS w (name, approval_queue, redrive_via, redrive_target,
                                redrive_secret, redrive_max_attempts, redrive_timeout_seconds,
                                reviewer_minutes_per_day, approver_minutes_per_day,
                                require_auth_within_seconds, require_acr)
    VALUES (:name, :approval_queue, coalesce(:redrive_via, 'subscription'), :redrive_target,
            :redrive_secret, coalesce(:redrive_max_attempts, 8),
            coalesce(:redrive_timeout_seconds::double precision, 10),
            :reviewer_minutes_per_day::double precision,
            :approver_minutes_per_day::double precision,
            nullif(:require_auth_within_seconds::integer, 0), nullif(:require_acr::text, ''))
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
            updated_at = now()
    RETURNING w.*
),
approvers AS (
    UPDATE queues AS q SET holder_role = 'approver', updated_at = now()
    FROM upserted AS u
    WHERE q.name = u.approval_queue AND q.holder_role <> 'approver'
),
-- A workflow that stops taking redrives by webhook takes its undelivered ones by its new
-- route (the owning system still sees them in exceptionEvents and exception queries).
undelivered AS (
    UPDATE exception_redrives AS x
    SET delivery_state = NULL, next_delivery_at = NULL, delivery_locked_until = NULL
    FROM upserted AS u
    WHERE x.workflow = u.name AND u.redrive_via <> 'webhook' AND x.delivery_state = 'pending'
)
SELECT u.* FROM upserted AS u;

-- name: workflows_get_by_names
SELECT w.* FROM workflows AS w WHERE w.name = ANY (:names::text[]);

-- name: workflows_list
SELECT w.* FROM workflows AS w ORDER BY w.name;
