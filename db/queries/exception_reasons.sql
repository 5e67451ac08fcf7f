-- name: exception_reason_upsert
INSERT INTO exception_reasons AS r (workflow, code, label, owner_role, escalation_role,
                                    allowed_actions, due_low_seconds, due_medium_seconds,
                                    due_high_seconds, due_critical_seconds)
VALUES (:workflow, :code, :label, :owner_role, :escalation_role, :allowed_actions,
        :due_low_seconds, :due_medium_seconds, :due_high_seconds, :due_critical_seconds)
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
SELECT r.* FROM exception_reasons AS r
WHERE r.workflow = ANY (:workflows::text[])
ORDER BY r.workflow, r.code;
