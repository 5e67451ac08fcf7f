-- name: applications_claim
-- Takes up to :batch_size due applications for one attempt each, under a lock that lapses
-- if the worker dies, long enough for the queue's effect timeout; sooner, once the worker
-- (:worker_id) stops renewing its liveness (apply_worker_renew). Returns what the effect needs,
-- including the outcome an overturn reverses. Only effective decisions are ever on this
-- list: decision_submit enlists a provisional one only once decision_confirm confirms it.
-- The note of a decision on an item under a privacy policy is not sent (null): it is
-- personal data, stored sealed (server/domain/privacy/records.py), and a receiver is an
-- integration, not a reader the policy shows it to.
-- Signing (migration 0032): the queue's current secret, the rotated-out ones still in their
-- overlap (newest first), and whether the legacy headers go too.
WITH due AS (
    SELECT a.decision_id
    FROM decision_applications AS a
    WHERE a.state = 'pending'
      AND a.next_attempt_at <= now()
      AND (a.locked_until IS NULL OR a.locked_until <= now()
           -- A claim whose worker stopped renewing its liveness: taken over now. Lapsed
           -- means seen lapsed, not "not seen alive": a row claimed while this statement
           -- ran is re-checked in its new version, but this subquery still reads through
           -- the statement's older snapshot, in which a worker whose first claim that was
           -- does not exist yet. A worker's row is cleared only a day after it lapsed,
           -- long after locked_until has.
           OR EXISTS (SELECT 1 FROM apply_workers AS w
                      WHERE w.id = a.locked_by AND w.alive_until <= now()))
    ORDER BY a.next_attempt_at
    LIMIT :batch_size
    FOR UPDATE OF a SKIP LOCKED
),
-- Claiming renews the claimer's own liveness: its claims are never taken over at birth.
alive AS (
    INSERT INTO apply_workers (id, name, alive_until)
    VALUES (:worker_id, :worker, now() + make_interval(secs => :lease_seconds))
    ON CONFLICT (id) DO UPDATE SET alive_until = EXCLUDED.alive_until
),
claimed AS (
    UPDATE decision_applications AS a
    SET attempts = a.attempts + 1,
        locked_until = now() + make_interval(secs => q.effect_timeout_seconds * 2 + 10),
        locked_by = :worker_id,
        updated_at = now()
    FROM due, queues AS q
    WHERE a.decision_id = due.decision_id AND q.name = a.queue
    RETURNING a.decision_id, a.attempts, a.attempts_before_redrive, a.redrive_key
)
SELECT c.decision_id, c.attempts, c.attempts_before_redrive, c.redrive_key,
       d.item_id, d.queue, d.verdict, d.outcome, d.reason_code,
       CASE WHEN i.policy_version IS NULL THEN d.note END AS note, d.reviewer,
       d.evidence_hash, d.decided_at, s.id AS supersedes, s.outcome AS superseded_outcome,
       d.traceparent,
       i.external_key,
       q.effect_kind, q.effect_target, q.effect_secret, q.effect_max_attempts,
       q.effect_timeout_seconds, q.effect_legacy_headers,
       ARRAY(SELECT r.secret FROM retiring_webhook_secrets AS r
             WHERE r.queue = q.name AND r.expires_at > now()
             ORDER BY r.retired_at DESC, r.id DESC) AS effect_retiring_secrets
FROM claimed AS c
JOIN review_decisions AS d ON d.id = c.decision_id
JOIN review_items AS i ON i.id = d.item_id
JOIN queues AS q ON q.name = d.queue
-- Only an overturn names what it supersedes: it reverses an outcome that was carried out.
-- An override at second review supersedes a provisional decision that never was.
LEFT JOIN review_decisions AS s ON s.id = d.supersedes AND d.verdict = 'overturn';

-- name: application_record_applied
-- The proof of application, once per decision: a second recording of the same decision
-- (a lapsed lock, a concurrent worker) changes nothing and returns applied = false.
WITH proof AS (
    INSERT INTO applied_decisions (decision_id, note)
    VALUES (:decision_id, :note)
    ON CONFLICT (decision_id) DO NOTHING
    RETURNING decision_id
),
settled AS (
    UPDATE decision_applications AS a
    SET state = 'applied', locked_until = NULL, locked_by = NULL, last_error = NULL, updated_at = now()
    WHERE a.decision_id = :decision_id
    RETURNING a.decision_id
),
attempt AS (
    INSERT INTO apply_attempts (decision_id, attempt, worker, started_at, outcome, error)
    SELECT :decision_id, :attempt, :worker, :started_at, 'applied',
           CASE WHEN p.decision_id IS NULL THEN 'already applied' END
    FROM settled LEFT JOIN proof AS p ON true
    RETURNING id
)
SELECT EXISTS (SELECT 1 FROM proof) AS applied, (SELECT count(*) FROM attempt) AS recorded;

-- name: applications_record_applied
-- application_record_applied for a batch: the attempts of one worker (:worker) that ended
-- in a 2xx while its previous recording ran, in one statement instead of one each. Each
-- element is (:decision_ids[n], :notes[n], :attempts[n], :started_ats[n]); a decision is
-- in a batch at most once. The same guards as one by one: the proof is inserted once per
-- decision (a second recording of it, by whichever worker, changes nothing and says
-- applied = false), and an attempt row is written only for a decision on the work list.
-- Rows are taken in decision id order, so two batches that overlap (a takeover) lock alike.
WITH batch AS (
    SELECT b.decision_id, b.note, b.attempt, b.started_at
    FROM unnest(:decision_ids::bigint[], :notes::text[], :attempts::int[],
                :started_ats::timestamptz[]) AS b (decision_id, note, attempt, started_at)
    ORDER BY b.decision_id
),
proof AS (
    INSERT INTO applied_decisions (decision_id, note)
    SELECT b.decision_id, b.note FROM batch AS b
    ON CONFLICT (decision_id) DO NOTHING
    RETURNING decision_id
),
settled AS (
    UPDATE decision_applications AS a
    SET state = 'applied', locked_until = NULL, locked_by = NULL, last_error = NULL, updated_at = now()
    FROM batch AS b
    WHERE a.decision_id = b.decision_id
    RETURNING a.decision_id
),
attempt AS (
    INSERT INTO apply_attempts (decision_id, attempt, worker, started_at, outcome, error)
    SELECT b.decision_id, b.attempt, :worker, b.started_at, 'applied',
           CASE WHEN p.decision_id IS NULL THEN 'already applied' END
    FROM batch AS b
    JOIN settled AS s ON s.decision_id = b.decision_id
    LEFT JOIN proof AS p ON p.decision_id = b.decision_id
    ORDER BY b.decision_id
    RETURNING id
)
SELECT b.decision_id, p.decision_id IS NOT NULL AS applied,
       (SELECT count(*) FROM attempt) AS recorded
FROM batch AS b
LEFT JOIN proof AS p ON p.decision_id = b.decision_id;

-- name: application_record_failure
-- A failed attempt: retried at :next_attempt_at unless it was permanent or the last one
-- allowed (counted from the latest redrive), in which case the application is `failed` and
-- a person gets an exception to own.
-- Fence: the work list changes only if this is still the latest attempt (:attempt) of a
-- pending application (an attempt that outlived its lock must not undo the one that took
-- over); the history row is written either way.
-- The error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
WITH settled AS (
    UPDATE decision_applications AS a
    SET state = CASE WHEN :permanent OR a.attempts - a.attempts_before_redrive >= q.effect_max_attempts
                     THEN 'failed'
                     ELSE 'pending' END,
        next_attempt_at = :next_attempt_at,
        locked_until = NULL,
        locked_by = NULL,
        last_error = :error,
        updated_at = now()
    FROM queues AS q
    WHERE a.decision_id = :decision_id AND q.name = a.queue AND a.state = 'pending'
      AND a.attempts = :attempt
    RETURNING a.state
),
attempt AS (
    INSERT INTO apply_attempts
        (decision_id, attempt, worker, started_at, outcome, error, next_retry_at)
    SELECT :decision_id, :attempt, :worker, :started_at,
           CASE WHEN s.state = 'failed' OR (s.state IS NULL AND :permanent) THEN 'permanent'
                ELSE 'transient' END,
           :error, CASE WHEN s.state = 'pending' THEN :next_attempt_at END
    FROM (SELECT 1) AS one LEFT JOIN settled AS s ON true
    RETURNING id
)
SELECT s.state FROM (SELECT count(*) FROM attempt) AS recorded LEFT JOIN settled AS s ON true;

-- name: applications_get_by_decision_ids
SELECT a.*, p.applied_at, p.note AS applied_note
FROM decision_applications AS a
LEFT JOIN applied_decisions AS p ON p.decision_id = a.decision_id
WHERE a.decision_id = ANY (:decision_ids::bigint[]);

-- name: application_attempts_get_by_decision_ids
SELECT t.*
FROM apply_attempts AS t
WHERE t.decision_id = ANY (:decision_ids::bigint[])
ORDER BY t.decision_id, t.id;

-- name: applications_get_queue_lag
-- "A human decided and the system did not carry it out", for each queue of :queues:
-- unapplied decisions older than the threshold, the age of the oldest, and the failed ones.
SELECT q.name AS queue, l.unapplied, l.unapplied_late, l.oldest_unapplied_age_seconds, l.failed
FROM unnest(:queues::text[]) AS q (name)
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE a.state = 'pending') AS unapplied,
           count(*) FILTER (WHERE a.state = 'pending'
                              AND a.decided_at < now() - make_interval(secs => :threshold_seconds))
               AS unapplied_late,
           extract(epoch FROM now() - min(a.decided_at) FILTER (WHERE a.state = 'pending'))
               AS oldest_unapplied_age_seconds,
           count(*) FILTER (WHERE a.state = 'failed') AS failed
    FROM decision_applications AS a
    WHERE a.queue = q.name AND a.state <> 'applied'
) AS l;

-- name: apply_worker_renew
-- A worker's liveness, renewed every few seconds while it runs; rows of workers long gone
-- are cleared on the way (their claims, if any, are takeable either way).
WITH gone AS (
    DELETE FROM apply_workers AS w
    WHERE w.alive_until < now() - interval '1 day' AND w.id <> :worker_id
)
INSERT INTO apply_workers (id, name, alive_until)
VALUES (:worker_id, :worker, now() + make_interval(secs => :lease_seconds))
ON CONFLICT (id) DO UPDATE SET alive_until = EXCLUDED.alive_until;

-- name: apply_worker_leave
-- A worker that stopped: whatever it abandoned (cancelled, never recorded) is takeable now.
UPDATE apply_workers SET alive_until = now() WHERE id = :worker_id;
