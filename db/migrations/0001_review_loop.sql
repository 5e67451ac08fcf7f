-- The review loop: queues, their reason-code catalogues, review items under leases,
-- the append-only decision log, and bearer tokens.
--
-- Tables belong to the migration role (whoever runs `casework migrate`). The service
-- itself connects as casework_app, which gets only the privileges granted at the end.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'casework_app') THEN
        CREATE ROLE casework_app LOGIN;
    END IF;
END
$$;

CREATE TABLE queues (
    name                      text PRIMARY KEY
                              CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    lease_ttl_seconds         integer NOT NULL DEFAULT 300
                              CHECK (lease_ttl_seconds BETWEEN 1 AND 86400),
    max_abandons              integer NOT NULL DEFAULT 3 CHECK (max_abandons BETWEEN 1 AND 100),
    escalation_queue          text REFERENCES queues (name),
    escalation_priority_boost integer NOT NULL DEFAULT 100
                              CHECK (escalation_priority_boost BETWEEN 0 AND 1000000),
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now()
);

-- The closed catalogue of reasons a reviewer may give, per queue and per verdict.
CREATE TABLE reason_codes (
    queue      text NOT NULL REFERENCES queues (name),
    code       text NOT NULL CHECK (code ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    label      text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
    verdicts   text[] NOT NULL
               CHECK (cardinality(verdicts) > 0
                      AND verdicts <@ ARRAY['approve', 'reject', 'escalate']::text[]),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, code)
);

CREATE TABLE review_items (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Where the item was enqueued: the idempotency scope of external_key. It never changes,
    -- while `queue` follows the item through escalations.
    origin_queue     text NOT NULL REFERENCES queues (name),
    queue            text NOT NULL REFERENCES queues (name),
    external_key     text NOT NULL CHECK (length(external_key) BETWEEN 1 AND 200),
    priority         integer NOT NULL DEFAULT 0,
    payload          jsonb NOT NULL,
    evidence_hash    text NOT NULL CHECK (evidence_hash ~ '^[0-9a-f]{64}$'),
    state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'decided')),
    lease_owner      text,
    lease_token      uuid,
    lease_expires_at timestamptz,
    lease_count      integer NOT NULL DEFAULT 0,
    -- Lapsed leases since the item last moved queue; reset on escalation.
    abandon_count    integer NOT NULL DEFAULT 0,
    escalation_count integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    decided_at       timestamptz,
    UNIQUE (origin_queue, external_key),
    CHECK ((lease_token IS NULL) = (lease_owner IS NULL)
           AND (lease_token IS NULL) = (lease_expires_at IS NULL)),
    CHECK (state = 'pending' OR lease_token IS NULL),
    CHECK ((state = 'decided') = (decided_at IS NOT NULL))
);

-- The claim walks this index; decided items leave it, so a claim costs what the backlog
-- costs, not what the history costs.
CREATE INDEX review_items_claimable
    ON review_items (queue, priority DESC, created_at)
    WHERE state = 'pending';

CREATE INDEX review_items_queue_id ON review_items (queue, id);

-- Append-only: the application role may only INSERT and SELECT here.
CREATE TABLE review_decisions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id       bigint NOT NULL REFERENCES review_items (id),
    queue         text NOT NULL,
    -- What the reviewer did: a verdict, or an overturn of an earlier row.
    verdict       text NOT NULL CHECK (verdict IN ('approve', 'reject', 'escalate', 'overturn')),
    -- What the row means for the subject now: for an overturn, the reversed outcome.
    outcome       text NOT NULL CHECK (outcome IN ('approve', 'reject', 'escalate')),
    reason_code   text NOT NULL,
    note          text CHECK (length(note) <= 4000),
    reviewer      text NOT NULL,
    reviewer_role text NOT NULL,
    evidence_hash text NOT NULL CHECK (evidence_hash ~ '^[0-9a-f]{64}$'),
    -- The lease a verdict was made under; one verdict per lease at most.
    lease_token   uuid UNIQUE,
    supersedes    bigint UNIQUE REFERENCES review_decisions (id),
    decided_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (queue, reason_code) REFERENCES reason_codes (queue, code),
    CHECK ((verdict = 'overturn') = (supersedes IS NOT NULL)),
    CHECK ((verdict = 'overturn') = (lease_token IS NULL)),
    CHECK (verdict = 'overturn' OR verdict = outcome)
);

CREATE INDEX review_decisions_item ON review_decisions (item_id, id);
CREATE INDEX review_decisions_queue_id ON review_decisions (queue, id);

CREATE TABLE api_tokens (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- SHA-256 of the token; the token itself is shown once and never stored.
    token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    user_name  text NOT NULL CHECK (length(user_name) BETWEEN 1 AND 200),
    role       text NOT NULL
               CHECK (role IN ('reviewer', 'approver', 'admin', 'manager', 'integration')),
    queues     text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    revoked_at timestamptz
);

REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO casework_app;
GRANT SELECT, INSERT, UPDATE ON queues, reason_codes, review_items TO casework_app;
GRANT SELECT, INSERT ON review_decisions TO casework_app;
GRANT SELECT ON api_tokens TO casework_app;
