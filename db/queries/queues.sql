-- name: queue_upsert
-- Creates a queue, or changes the settings given (a NULL leaves a setting as it is). The
-- effect's kind and target change together ($6 NULL leaves both).
-- $1 name, $2 lease ttl seconds, $3 max abandons, $4 escalation queue, $5 priority boost,
-- $6 effect kind, $7 effect target, $8 effect secret, $9 effect max attempts,
-- $10 effect timeout seconds (cast: from `coalesce($10, 10)` alone PostgreSQL infers an
-- integer, and asyncpg then truncates a timeout of 0.5 s to 0 and 2.5 s to 2)
INSERT INTO queues AS q (name, lease_ttl_seconds, max_abandons, escalation_queue,
                         escalation_priority_boost, effect_kind, effect_target, effect_secret,
                         effect_max_attempts, effect_timeout_seconds)
VALUES ($1, coalesce($2, 300), coalesce($3, 3), $4, coalesce($5, 100), coalesce($6, 'none'),
        $7, $8, coalesce($9, 8), coalesce($10::double precision, 10))
ON CONFLICT (name) DO UPDATE
    SET lease_ttl_seconds = coalesce($2, q.lease_ttl_seconds),
        max_abandons = coalesce($3, q.max_abandons),
        escalation_queue = coalesce($4, q.escalation_queue),
        escalation_priority_boost = coalesce($5, q.escalation_priority_boost),
        effect_kind = coalesce($6, q.effect_kind),
        effect_target = CASE WHEN $6 IS NULL THEN q.effect_target ELSE $7 END,
        effect_secret = CASE WHEN $6 IS NULL THEN q.effect_secret ELSE $8 END,
        effect_max_attempts = coalesce($9, q.effect_max_attempts),
        effect_timeout_seconds = coalesce($10::double precision, q.effect_timeout_seconds),
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
