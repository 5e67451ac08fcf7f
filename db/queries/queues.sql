-- name: queue_upsert
-- Creates a queue, or changes the settings given (a NULL leaves a setting as it is).
-- $1 name, $2 lease ttl seconds, $3 max abandons, $4 escalation queue, $5 priority boost
INSERT INTO queues AS q (name, lease_ttl_seconds, max_abandons, escalation_queue,
                         escalation_priority_boost)
VALUES ($1, coalesce($2, 300), coalesce($3, 3), $4, coalesce($5, 100))
ON CONFLICT (name) DO UPDATE
    SET lease_ttl_seconds = coalesce($2, q.lease_ttl_seconds),
        max_abandons = coalesce($3, q.max_abandons),
        escalation_queue = coalesce($4, q.escalation_queue),
        escalation_priority_boost = coalesce($5, q.escalation_priority_boost),
        updated_at = now()
RETURNING q.*;

-- name: queues_get_by_names
-- $1 names
SELECT q.* FROM queues AS q WHERE q.name = ANY ($1::text[]);

-- name: queues_list
SELECT q.* FROM queues AS q ORDER BY q.name;

-- name: reason_code_upsert
-- $1 queue, $2 code, $3 label, $4 verdicts
INSERT INTO reason_codes AS r (queue, code, label, verdicts)
VALUES ($1, $2, $3, $4)
ON CONFLICT (queue, code) DO UPDATE
    SET label = excluded.label, verdicts = excluded.verdicts
RETURNING r.*;

-- name: reason_codes_get_by_queues
-- $1 queue names
SELECT r.* FROM reason_codes AS r WHERE r.queue = ANY ($1::text[]) ORDER BY r.queue, r.code;
