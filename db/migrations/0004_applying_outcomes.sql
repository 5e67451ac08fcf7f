-- Applying outcomes: every decision is carried out afterwards, once, by a worker.
-- `decision_applications` is the work list and its state; `applied_decisions` the
-- append-only proof of application, keyed by the decision id (the idempotency key);
-- `apply_attempts` the history an operator reads.

ALTER TABLE queues
    ADD COLUMN effect_kind text NOT NULL DEFAULT 'none'
        CHECK (effect_kind IN ('none', 'webhook', 'handler')),
    -- A webhook URL, or the name of a handler registered under `casework.effects`.
    ADD COLUMN effect_target text,
    -- The HMAC-SHA256 key a webhook is signed with.
    ADD COLUMN effect_secret text,
    ADD COLUMN effect_max_attempts integer NOT NULL DEFAULT 8
        CHECK (effect_max_attempts BETWEEN 1 AND 100),
    ADD COLUMN effect_timeout_seconds double precision NOT NULL DEFAULT 10
        CHECK (effect_timeout_seconds > 0 AND effect_timeout_seconds <= 300),
    ADD CHECK ((effect_kind = 'none') = (effect_target IS NULL));

CREATE TABLE decision_applications (
    decision_id     bigint PRIMARY KEY REFERENCES review_decisions (id),
    queue           text NOT NULL,
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'applied', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- A worker's claim on the attempt in progress. A worker killed mid-attempt leaves it
    -- to lapse, and another worker takes the decision up again.
    locked_until    timestamptz,
    last_error      text,
    decided_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX decision_applications_due
    ON decision_applications (next_attempt_at)
    WHERE state = 'pending';

CREATE INDEX decision_applications_queue_pending
    ON decision_applications (queue, decided_at)
    WHERE state <> 'applied';

CREATE TABLE applied_decisions (
    decision_id bigint PRIMARY KEY REFERENCES review_decisions (id),
    applied_at  timestamptz NOT NULL DEFAULT now(),
    note        text
);

CREATE TABLE apply_attempts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    decision_id   bigint NOT NULL REFERENCES review_decisions (id),
    attempt       integer NOT NULL,
    worker        text NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    outcome       text NOT NULL CHECK (outcome IN ('applied', 'transient', 'permanent')),
    error         text CHECK (length(error) <= 1000),
    next_retry_at timestamptz
);

CREATE INDEX apply_attempts_decision ON apply_attempts (decision_id, id);

-- Recording a decision puts it on the work list in the same transaction.
CREATE FUNCTION decision_applications_enlist() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO decision_applications (decision_id, queue, decided_at)
    VALUES (NEW.id, NEW.queue, NEW.decided_at);
    RETURN NEW;
END
$$;

CREATE TRIGGER review_decisions_enlist
    AFTER INSERT ON review_decisions
    FOR EACH ROW EXECUTE FUNCTION decision_applications_enlist();

GRANT SELECT, INSERT, UPDATE ON decision_applications TO casework_app;
GRANT SELECT, INSERT ON applied_decisions, apply_attempts TO casework_app;
