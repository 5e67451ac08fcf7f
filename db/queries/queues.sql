-- name: queue_upsert
-- Creates a queue, or changes the settings given (a NULL leaves a setting as it is). The
-- effect's kind and target change together (:effect_kind NULL leaves both).
-- :effect_timeout_seconds is cast: from `coalesce(:effect_timeout_seconds, 10)` alone
-- PostgreSQL infers an integer, and asyncpg then truncates a timeout of 0.5 s to 0.
-- The claim controls can also be cleared: a lease limit or due time of 0 and an
-- overdue queue of '' mean "none" (:due_seconds_by_priority '[]' clears that list).
-- Second review (migration 0020): :second_review_verdicts NULL leaves the three settings
-- as they are; a list sets all three (an empty one turns second review off, and the queue
-- and minimum priority go with it). The second-review queue is created here, with the
-- defaults (worked by reviewers), when it does not exist yet: its foreign key is checked
-- at the end of the statement, after that insert.
-- QA sampling (migration 0021): :qa_queue names the queue the sampled decisions are copied
-- to; it is created here (holder role reviewer, every other setting its default) when it
-- does not exist yet. The foreign key is checked at the end of the statement, so the new
-- row satisfies it.
-- Step-up (migration 0023): :require_auth_within_seconds 0 and :require_acr '' clear them.
-- Standard Webhooks (migration 0032): :effect_legacy_headers also sends Casework-Signature and
-- Idempotency-Key (NULL leaves it; a new webhook starts without; an effect that is not a
-- webhook never has it). A new effect (:effect_kind given) replaces the secret at once: any
-- rotated-out secret still in its overlap stops signing (a rotation is the way to change
-- the secret of the same receiver without a gap).
WITH review_queue AS (
    INSERT INTO queues (name)
    SELECT :second_review_queue::text
    WHERE :second_review_queue::text IS NOT NULL
    ON CONFLICT (name) DO NOTHING
),
qa_queue_made AS (
    INSERT INTO queues (name)
    SELECT :qa_queue::text WHERE :qa_queue::text IS NOT NULL
    ON CONFLICT (name) DO NOTHING
),
overlap_ended AS (
    DELETE FROM retiring_webhook_secrets AS r
    WHERE r.queue = :name AND :effect_kind::text IS NOT NULL
)
INSERT INTO queues AS q (name, lease_ttl_seconds, max_abandons, escalation_queue,
                         escalation_priority_boost, effect_kind, effect_target, effect_secret,
                         effect_max_attempts, effect_timeout_seconds,
                         reviewer_minutes_per_day, max_leases_per_reviewer, due_seconds,
                         due_seconds_by_priority, hold_pauses_due, overdue_queue,
                         overdue_priority_boost, second_review_verdicts,
                         second_review_min_priority, second_review_queue, qa_sample_rate,
                         qa_queue, require_auth_within_seconds, require_acr,
                         effect_legacy_headers)
VALUES (:name, coalesce(:lease_ttl_seconds, 300), coalesce(:max_abandons, 3), :escalation_queue,
        coalesce(:escalation_priority_boost, 100), coalesce(:effect_kind, 'none'),
        :effect_target, :effect_secret, coalesce(:effect_max_attempts, 8),
        coalesce(:effect_timeout_seconds::double precision, 10),
        :reviewer_minutes_per_day::double precision,
        nullif(:max_leases_per_reviewer::integer, 0), nullif(:due_seconds::integer, 0),
        coalesce(:due_seconds_by_priority::jsonb, '[]'),
        coalesce(:hold_pauses_due::boolean, false), nullif(:overdue_queue::text, ''),
        coalesce(:overdue_priority_boost::integer, 100),
        coalesce(:second_review_verdicts::text[], '{}'), :second_review_min_priority::integer,
        :second_review_queue::text, coalesce(:qa_sample_rate::double precision, 0),
        :qa_queue::text, nullif(:require_auth_within_seconds::integer, 0),
        nullif(:require_acr::text, ''),
        coalesce(:effect_kind::text, 'none') = 'webhook'
            AND coalesce(:effect_legacy_headers::boolean, false))
ON CONFLICT (name) DO UPDATE
    SET lease_ttl_seconds = coalesce(:lease_ttl_seconds, q.lease_ttl_seconds),
        max_abandons = coalesce(:max_abandons, q.max_abandons),
        escalation_queue = coalesce(:escalation_queue, q.escalation_queue),
        escalation_priority_boost = coalesce(:escalation_priority_boost, q.escalation_priority_boost),
        effect_kind = coalesce(:effect_kind, q.effect_kind),
        effect_target = CASE WHEN :effect_kind IS NULL THEN q.effect_target ELSE :effect_target END,
        effect_secret = CASE WHEN :effect_kind IS NULL THEN q.effect_secret ELSE :effect_secret END,
        effect_max_attempts = coalesce(:effect_max_attempts, q.effect_max_attempts),
        effect_timeout_seconds = coalesce(:effect_timeout_seconds::double precision, q.effect_timeout_seconds),
        reviewer_minutes_per_day = coalesce(:reviewer_minutes_per_day::double precision,
                                            q.reviewer_minutes_per_day),
        max_leases_per_reviewer = CASE WHEN :max_leases_per_reviewer::integer IS NULL
                                       THEN q.max_leases_per_reviewer
                                       ELSE nullif(:max_leases_per_reviewer::integer, 0) END,
        due_seconds = CASE WHEN :due_seconds::integer IS NULL THEN q.due_seconds
                           ELSE nullif(:due_seconds::integer, 0) END,
        due_seconds_by_priority = coalesce(:due_seconds_by_priority::jsonb,
                                           q.due_seconds_by_priority),
        hold_pauses_due = coalesce(:hold_pauses_due::boolean, q.hold_pauses_due),
        overdue_queue = CASE WHEN :overdue_queue::text IS NULL THEN q.overdue_queue
                             ELSE nullif(:overdue_queue::text, '') END,
        overdue_priority_boost = coalesce(:overdue_priority_boost::integer,
                                          q.overdue_priority_boost),
        second_review_verdicts = coalesce(:second_review_verdicts::text[],
                                          q.second_review_verdicts),
        second_review_min_priority = CASE WHEN :second_review_verdicts::text[] IS NULL
                                          THEN q.second_review_min_priority
                                          ELSE :second_review_min_priority::integer END,
        second_review_queue = CASE WHEN :second_review_verdicts::text[] IS NULL
                                   THEN q.second_review_queue
                                   ELSE :second_review_queue::text END,
        qa_sample_rate = coalesce(:qa_sample_rate::double precision, q.qa_sample_rate),
        qa_queue = coalesce(:qa_queue::text, q.qa_queue),
        require_auth_within_seconds = CASE WHEN :require_auth_within_seconds::integer IS NULL
                                           THEN q.require_auth_within_seconds
                                           ELSE nullif(:require_auth_within_seconds::integer, 0)
                                      END,
        require_acr = CASE WHEN :require_acr::text IS NULL THEN q.require_acr
                           ELSE nullif(:require_acr::text, '') END,
        effect_legacy_headers = coalesce(:effect_kind::text, q.effect_kind) = 'webhook'
            AND coalesce(:effect_legacy_headers::boolean,
                         q.effect_legacy_headers AND q.effect_kind = 'webhook'),
        updated_at = now()
RETURNING q.*;

-- name: queues_get_by_names
SELECT q.* FROM queues AS q WHERE q.name = ANY (:names::text[]);

-- name: queues_list
SELECT q.* FROM queues AS q ORDER BY q.name;

-- name: queues_get_holder_roles
SELECT q.name, q.holder_role FROM queues AS q WHERE q.name = ANY (:names::text[]);

-- name: queues_get_backlog
-- The figures a backlog subscriber sees, for each queue of :queues: pending (claimable now:
-- under no live lease and not held), leased, and the age of the oldest pending item; and,
-- for Queue.stats, held (parked until a time), assigned (reserved for a named reviewer,
-- leased or not) and overdue (past its due time, leased or held or not). Pending, leased
-- and held add up to every waiting item. Walks the claim index only.
SELECT q.name AS queue, b.pending, b.leased, b.oldest_pending_age_seconds, b.held, b.assigned,
       b.overdue
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
                              AND (i.held_until IS NULL OR i.held_until <= now()))
               AS pending,
           count(*) FILTER (WHERE i.lease_expires_at > now()) AS leased,
           extract(epoch FROM now() - min(i.created_at)
                   FILTER (WHERE (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
                             AND (i.held_until IS NULL OR i.held_until <= now())))
               AS oldest_pending_age_seconds,
           count(*) FILTER (WHERE i.held_until > now()) AS held,
           count(*) FILTER (WHERE i.assigned_to IS NOT NULL
                              AND (i.assigned_until IS NULL OR i.assigned_until > now()))
               AS assigned,
           count(*) FILTER (WHERE i.due_at <= now()) AS overdue
    FROM review_items AS i
    WHERE i.queue = q.name AND i.state = 'pending'
) AS b;

-- name: queue_effect_secret_rotate
-- Rotates the signing secret of a queue whose effect is a webhook: :secret becomes the
-- current one, and the one it replaces keeps signing beside it for :overlap_seconds (0: it
-- stops at once). Rotated-out secrets already past their overlap are deleted on the way.
-- No row: the queue does not exist or its effect is not a webhook.
WITH target AS (
    SELECT q.name, q.effect_secret
    FROM queues AS q
    WHERE q.name = :queue AND q.effect_kind = 'webhook'
    FOR UPDATE
),
pruned AS (
    DELETE FROM retiring_webhook_secrets AS r
    USING target AS t
    WHERE r.queue = t.name AND r.expires_at <= now()
),
retired AS (
    INSERT INTO retiring_webhook_secrets (queue, secret, expires_at)
    SELECT t.name, t.effect_secret, now() + make_interval(secs => :overlap_seconds)
    FROM target AS t
    WHERE :overlap_seconds::double precision > 0
    RETURNING expires_at
),
rotated AS (
    UPDATE queues AS q
    SET effect_secret = :secret, updated_at = now()
    FROM target AS t
    WHERE q.name = t.name
    RETURNING q.*
)
SELECT r.*,
       greatest((SELECT max(x.expires_at) FROM retiring_webhook_secrets AS x
                 WHERE x.queue = r.name AND x.expires_at > now()),
                (SELECT max(n.expires_at) FROM retired AS n)) AS overlap_ends_at
FROM rotated AS r;

-- name: queue_effect_secret_overlaps
-- When the overlap of each queue's rotated-out effect secrets ends (the queues of :queues
-- that have one still signing).
SELECT r.queue, max(r.expires_at) AS overlap_ends_at
FROM retiring_webhook_secrets AS r
WHERE r.queue = ANY (:queues::text[]) AND r.expires_at > now()
GROUP BY r.queue;
