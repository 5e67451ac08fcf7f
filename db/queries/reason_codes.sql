-- name: reason_code_upsert
-- :requires_note NULL leaves the code's setting as it is (false for a new code).
INSERT INTO reason_codes AS r (queue, code, label, verdicts, requires_note)
VALUES (:queue, :code, :label, :verdicts, coalesce(:requires_note::boolean, false))
ON CONFLICT (queue, code) DO UPDATE
    SET label = excluded.label,
        verdicts = excluded.verdicts,
        requires_note = coalesce(:requires_note::boolean, r.requires_note)
RETURNING r.*;

-- name: reason_codes_get_by_queues
SELECT r.* FROM reason_codes AS r WHERE r.queue = ANY (:queues::text[]) ORDER BY r.queue, r.code;
