-- name: reason_code_upsert
INSERT INTO reason_codes AS r (queue, code, label, verdicts)
VALUES (:queue, :code, :label, :verdicts)
ON CONFLICT (queue, code) DO UPDATE
    SET label = excluded.label, verdicts = excluded.verdicts
RETURNING r.*;

-- name: reason_codes_get_by_queues
SELECT r.* FROM reason_codes AS r WHERE r.queue = ANY (:queues::text[]) ORDER BY r.queue, r.code;
