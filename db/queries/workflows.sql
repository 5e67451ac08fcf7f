-- name: workflow_upsert
-- Creates a workflow or changes its settings (NULL leaves one as it is; the redrive route,
-- target and secret change together). Its approval queue becomes a queue approvers work.
-- $1 name, $2 approval queue, $3 redrive via, $4 redrive target, $5 redrive secret,
-- $6 redrive max attempts, $7 redrive timeout seconds
WITH upserted AS (
    INSERT INTO workflows AS w (name, approval_queue, redrive_via, redrive_target,
                                redrive_secret, redrive_max_attempts, redrive_timeout_seconds)
    VALUES ($1, $2, coalesce($3, 'subscription'), $4, $5, coalesce($6, 8),
            coalesce($7::double precision, 10))
    ON CONFLICT (name) DO UPDATE
        SET approval_queue = coalesce($2, w.approval_queue),
            redrive_via = coalesce($3, w.redrive_via),
            redrive_target = CASE WHEN $3 IS NULL THEN w.redrive_target ELSE $4 END,
            redrive_secret = CASE WHEN $3 IS NULL THEN w.redrive_secret ELSE $5 END,
            redrive_max_attempts = coalesce($6, w.redrive_max_attempts),
            redrive_timeout_seconds = coalesce($7::double precision, w.redrive_timeout_seconds),
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
-- $1 names
SELECT w.* FROM workflows AS w WHERE w.name = ANY ($1::text[]);

-- name: workflows_list
SELECT w.* FROM workflows AS w ORDER BY w.name;

-- name: exception_reason_upsert
-- $1 workflow, $2 code, $3 label, $4 owner role, $5 escalation role, $6 allowed actions,
-- $7 due seconds for low, $8 medium, $9 high, $10 critical
INSERT INTO exception_reasons AS r (workflow, code, label, owner_role, escalation_role,
                                    allowed_actions, due_low_seconds, due_medium_seconds,
                                    due_high_seconds, due_critical_seconds)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (workflow, code) DO UPDATE
    SET label = excluded.label,
        owner_role = excluded.owner_role,
        escalation_role = excluded.escalation_role,
        allowed_actions = excluded.allowed_actions,
        due_low_seconds = excluded.due_low_seconds,
        due_medium_seconds = excluded.due_medium_seconds,
        due_high_seconds = excluded.due_high_seconds,
        due_critical_seconds = excluded.due_critical_seconds,
        updated_at = now()
RETURNING r.*;

-- name: exception_reasons_get_by_workflows
-- $1 workflows
SELECT r.* FROM exception_reasons AS r
WHERE r.workflow = ANY ($1::text[])
ORDER BY r.workflow, r.code;

-- name: queue_holder_roles
-- $1 queue names
SELECT q.name, q.holder_role FROM queues AS q WHERE q.name = ANY ($1::text[]);
