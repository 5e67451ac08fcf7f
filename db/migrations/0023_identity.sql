-- Single sign-on (issue 24): people log in with the organisation's identity provider,
-- integrations present its access tokens, and every decision says how its actor
-- authenticated.
--
-- - `principals`: the identities the provider vouched for, by issuer + subject (never by
--   e-mail). `user_name` is the handle recorded as the actor on every row; it is chosen at
--   first sight and kept, so a changed display name changes no history. `revoked_at` refuses
--   every credential issued before it: sessions, and access tokens by their `iat`.
-- - `sessions`: the console's logins. The browser holds a random id; this table holds its
--   SHA-256, the grants the rules gave at login, and what RP-initiated and back-channel logout
--   need (the provider's `sid`, the ID token as `id_token_hint`). Both never leave the server.
-- - `authentications`: how an actor authenticated, one row per distinct way (kind, issuer,
--   subject, session or token, auth_time, acr, the rules that granted the role), referenced by
--   the append-only records of what people decided. Append-only itself.
-- - `logout_tokens`: back-channel logout tokens already acted on, so a replay is refused.
-- - `principal_revocations`: who revoked whom, how and when (append-only).

CREATE TABLE principals (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    issuer       text NOT NULL CHECK (length(issuer) BETWEEN 1 AND 2000),
    subject      text NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
    user_name    text NOT NULL UNIQUE CHECK (length(user_name) BETWEEN 1 AND 200),
    display_name text CHECK (length(display_name) <= 200),
    kind         text NOT NULL CHECK (kind IN ('person', 'machine')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz,
    UNIQUE (issuer, subject)
);

CREATE TABLE sessions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash    sha256_hex NOT NULL UNIQUE,
    principal_id  bigint NOT NULL REFERENCES principals (id),
    -- [{"role": ..., "queues": [patterns], "rules": [names]}], as the rules gave them.
    grants        jsonb NOT NULL CHECK (jsonb_typeof(grants) = 'array'),
    provider_sid  text CHECK (length(provider_sid) <= 255),
    id_token      text CHECK (length(id_token) <= 16384),
    refresh_token text CHECK (length(refresh_token) <= 16384),
    auth_time     timestamptz,
    acr           text CHECK (length(acr) <= 255),
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    -- The idle timeout in force when the session began, and the absolute end.
    idle_seconds  integer NOT NULL CHECK (idle_seconds > 0),
    expires_at    timestamptz NOT NULL,
    ended_at      timestamptz,
    end_reason    text CHECK (length(end_reason) <= 200),
    CHECK ((ended_at IS NULL) = (end_reason IS NULL))
);

CREATE INDEX sessions_principal_live ON sessions (principal_id) WHERE ended_at IS NULL;
CREATE INDEX sessions_provider_sid_live ON sessions (provider_sid) WHERE ended_at IS NULL;

CREATE TABLE authentications (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- SHA-256 of every column below: one row per distinct way of authenticating.
    fingerprint sha256_hex NOT NULL UNIQUE,
    kind        text NOT NULL CHECK (kind IN ('session', 'jwt', 'cli_token')),
    user_name   text NOT NULL,
    role        text NOT NULL,
    issuer      text,
    subject     text,
    session_id  bigint REFERENCES sessions (id),
    token_id    bigint REFERENCES api_tokens (id),
    client_id   text,
    auth_time   timestamptz,
    acr         text,
    rules       text[] NOT NULL DEFAULT '{}',
    recorded_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE logout_tokens (
    issuer      text NOT NULL,
    jti         text NOT NULL CHECK (length(jti) BETWEEN 1 AND 255),
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, jti)
);

CREATE TABLE principal_revocations (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_name  text NOT NULL,
    -- 'cli' (casework user revoke), 'admin' (the revokeUser mutation), 'backchannel' (the
    -- provider's back-channel logout).
    source     text NOT NULL CHECK (source IN ('cli', 'admin', 'backchannel')),
    revoked_by text NOT NULL,
    reason     text CHECK (length(reason) <= 1000),
    sessions_ended integer NOT NULL,
    tokens_revoked integer NOT NULL,
    leases_released integer NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);

-- Provenance on the records of what people decided (NULL on rows older than this).
ALTER TABLE review_decisions ADD COLUMN authentication_id bigint REFERENCES authentications (id);
ALTER TABLE decision_confirmations
    ADD COLUMN authentication_id bigint REFERENCES authentications (id);
ALTER TABLE exception_events ADD COLUMN authentication_id bigint REFERENCES authentications (id);
ALTER TABLE item_events ADD COLUMN authentication_id bigint REFERENCES authentications (id);
ALTER TABLE qa_results ADD COLUMN authentication_id bigint REFERENCES authentications (id);

-- Step-up: a queue's decisions, or a workflow's approvals, may ask for a recent login.
ALTER TABLE queues
    ADD COLUMN require_auth_within_seconds integer CHECK (require_auth_within_seconds > 0),
    ADD COLUMN require_acr text CHECK (length(require_acr) <= 255);
ALTER TABLE workflows
    ADD COLUMN require_auth_within_seconds integer CHECK (require_auth_within_seconds > 0),
    ADD COLUMN require_acr text CHECK (length(require_acr) <= 255);

GRANT SELECT, INSERT, UPDATE ON principals, sessions TO casework_app;
GRANT SELECT, INSERT ON authentications, logout_tokens, principal_revocations TO casework_app;
-- The one revocation routine revokes a person's CLI tokens too (the revokeUser mutation).
GRANT UPDATE (revoked_at) ON api_tokens TO casework_app;
