-- Personal data (issue 25): a payload policy per queue, opt-in. A queue without one behaves
-- exactly as before, on the same statements.
--
-- - `privacy_policies`: versions of a queue's policy, append-only; `queues.privacy_policy_version`
--   names the one in force. Each payload path has a class (public, personal, sensitive,
--   reference); paths it does not list are dropped or refuse the enqueue; `secret` paths
--   always refuse it and are never stored, so a policy only records them by name.
-- - `privacy_subject_keys`: one data key per subject (the integration's `subjectRef`), wrapped
--   by a key-encryption key the database never sees. Erasure destroys the wrapped key.
-- - `item_fields`: every field of a policy item: its class and salted digest (kept for ever,
--   so decisions stay verifiable), its salt, and for personal and sensitive values the
--   AES-GCM ciphertext. Public and reference values stay in `review_items.payload`.
-- - `privacy_log`: every privacy action (policy change, reveal, hold, erasure request,
--   approval, execution, relationship end, key rotation). Append-only: the application role
--   may only INSERT and SELECT.
-- - `retention_classes`, `privacy_holds`, `privacy_hold_releases`, `erasure_requests`,
--   `erasure_outcomes`, `decision_disclosures`: see each table.

-- A compliance officer: places and releases holds, requests and approves erasure, reports a
-- relationship's end, and reads restricted data. No review work.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
    CHECK (role IN ('reviewer', 'approver', 'admin', 'manager', 'integration', 'compliance'));

-- How long the personal data of a queue's items is kept, from which moment. Before its end an
-- erasure request is deferred (the data is restricted meanwhile); at its end the worker erases.
CREATE TABLE retention_classes (
    name         text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    keep_seconds bigint NOT NULL CHECK (keep_seconds > 0),
    anchor       text NOT NULL CHECK (anchor IN ('enqueued', 'decided', 'relationship_ended')),
    -- The legal basis a deferral cites (e.g. "EU AMLR Art. 77: five years after the end of
    -- the business relationship").
    basis        text NOT NULL CHECK (length(basis) BETWEEN 1 AND 500),
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE privacy_policies (
    queue           text NOT NULL REFERENCES queues (name),
    version         integer NOT NULL CHECK (version > 0),
    -- {"applicant.name": "personal", "document": "reference", "password": "secret", ...}
    fields          jsonb NOT NULL CHECK (jsonb_typeof(fields) = 'object'),
    unlisted        text NOT NULL CHECK (unlisted IN ('drop', 'refuse')),
    -- {"reviewer": ["public", "personal"], "manager": ["public"], ...}: the classes each role
    -- sees without a reveal. `sensitive` is never among them.
    visible         jsonb NOT NULL CHECK (jsonb_typeof(visible) = 'object'),
    -- The roles that may reveal a sensitive value (with a reason).
    reveal_roles    text[] NOT NULL,
    retention_class text REFERENCES retention_classes (name),
    created_by      text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, version)
);

ALTER TABLE queues ADD COLUMN privacy_policy_version integer;
ALTER TABLE queues ADD CONSTRAINT queues_privacy_policy
    FOREIGN KEY (name, privacy_policy_version) REFERENCES privacy_policies (queue, version);

-- Items of a policy queue: who the data is about, and the policy version that split them.
ALTER TABLE review_items ADD COLUMN subject_ref text CHECK (length(subject_ref) BETWEEN 1 AND 200);
ALTER TABLE review_items ADD COLUMN policy_version integer;
CREATE INDEX review_items_subject ON review_items (subject_ref) WHERE subject_ref IS NOT NULL;

CREATE TABLE privacy_subjects (
    subject_ref           text PRIMARY KEY CHECK (length(subject_ref) BETWEEN 1 AND 200),
    -- reportRelationshipEnded: the anchor of `relationship_ended` retention.
    relationship_ended_at timestamptz,
    -- GDPR Art. 18: set while an erasure waits on a hold or a retention period; the data is
    -- then shown to compliance roles only.
    restricted_at         timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE privacy_subject_keys (
    subject_ref text NOT NULL REFERENCES privacy_subjects (subject_ref),
    key_version integer NOT NULL CHECK (key_version > 0),
    -- Which key-encryption key wrapped it (the key file's id, or a KMS key's).
    kek_id      text CHECK (length(kek_id) BETWEEN 1 AND 200),
    wrapped_key bytea,
    created_at  timestamptz NOT NULL DEFAULT now(),
    shredded_at timestamptz,
    PRIMARY KEY (subject_ref, key_version),
    CHECK ((shredded_at IS NULL) = (wrapped_key IS NOT NULL AND kek_id IS NOT NULL))
);

CREATE TABLE item_fields (
    item_id       bigint NOT NULL REFERENCES review_items (id),
    -- The upload the field belongs to: a re-upload adds rows under its new evidence hash, so
    -- no row is ever rewritten by the application; the item's current fields are those of
    -- its current evidence hash.
    evidence_hash sha256_hex NOT NULL,
    path          text NOT NULL CHECK (length(path) BETWEEN 1 AND 500),
    class         text NOT NULL CHECK (class IN ('public', 'personal', 'sensitive', 'reference')),
    -- Whose data key derived the salt and sealed the value: the unit of erasure.
    subject_ref   text NOT NULL,
    -- SHA-256 of salt ‖ path ‖ 0x00 ‖ the value's canonical JSON: kept after erasure.
    digest        sha256_hex NOT NULL,
    salt          bytea CHECK (length(salt) = 16),
    -- personal and sensitive: the data key's version, the nonce and the AES-GCM ciphertext.
    key_version   integer,
    nonce         bytea CHECK (length(nonce) = 12),
    ciphertext    bytea,
    erased_at     timestamptz,
    PRIMARY KEY (item_id, evidence_hash, path),
    CHECK ((erased_at IS NULL) = (salt IS NOT NULL)),
    CHECK (erased_at IS NOT NULL
           OR (class IN ('personal', 'sensitive')) = (ciphertext IS NOT NULL))
);
CREATE INDEX item_fields_subject ON item_fields (subject_ref) WHERE erased_at IS NULL;

-- A note written on a policy item: its body is sealed under the subject's key (the timeline
-- row in item_events keeps no body), and cleared by erasure with the item's fields.
CREATE TABLE sealed_notes (
    event_id    bigint PRIMARY KEY REFERENCES item_events (id),
    item_id     bigint NOT NULL REFERENCES review_items (id),
    subject_ref text NOT NULL,
    key_version integer NOT NULL,
    nonce       bytea CHECK (length(nonce) = 12),
    ciphertext  bytea,
    erased_at   timestamptz,
    CHECK ((erased_at IS NULL) = (ciphertext IS NOT NULL AND nonce IS NOT NULL))
);
CREATE INDEX sealed_notes_subject ON sealed_notes (subject_ref) WHERE erased_at IS NULL;

-- Every privacy action, for ever. Reveals are the access log: written before a value leaves.
CREATE TABLE privacy_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    action      text NOT NULL CHECK (action IN (
        'policy_set', 'retention_class_set', 'reveal', 'hold_placed', 'hold_released',
        'relationship_ended', 'erasure_requested', 'erasure_approved', 'erasure_deferred',
        'erasure_executed', 'retention_erased', 'key_rotated', 'erasure_replayed')),
    actor       text NOT NULL,
    actor_role  text NOT NULL,
    queue       text,
    item_id     bigint,
    subject_ref text,
    path        text,
    reason      text CHECK (length(reason) <= 2000),
    detail      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object')
);
CREATE INDEX privacy_log_item ON privacy_log (item_id, id) WHERE item_id IS NOT NULL;
CREATE INDEX privacy_log_queue_reveals ON privacy_log (queue, at) WHERE action = 'reveal';
CREATE INDEX privacy_log_subject ON privacy_log (subject_ref, id) WHERE subject_ref IS NOT NULL;

-- Holds (litigation, investigation, regulator): nothing under one is erased. Append-only; a
-- release is a row of its own.
CREATE TABLE privacy_holds (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject_ref text CHECK (length(subject_ref) BETWEEN 1 AND 200),
    item_ids    bigint[],
    basis       text NOT NULL CHECK (length(basis) BETWEEN 1 AND 2000),
    until       timestamptz,
    placed_by   text NOT NULL,
    placed_at   timestamptz NOT NULL DEFAULT now(),
    CHECK ((subject_ref IS NULL) <> (item_ids IS NULL))
);
CREATE INDEX privacy_holds_subject ON privacy_holds (subject_ref) WHERE subject_ref IS NOT NULL;
CREATE INDEX privacy_holds_items ON privacy_holds USING gin (item_ids) WHERE item_ids IS NOT NULL;

CREATE TABLE privacy_hold_releases (
    hold_id     bigint PRIMARY KEY REFERENCES privacy_holds (id),
    released_by text NOT NULL,
    released_at timestamptz NOT NULL DEFAULT now(),
    reason      text NOT NULL CHECK (length(reason) BETWEEN 1 AND 2000)
);

-- Erasure on request: one person asks, another approves (four-eyes).
CREATE TABLE erasure_requests (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject_ref  text NOT NULL REFERENCES privacy_subjects (subject_ref),
    basis        text NOT NULL CHECK (length(basis) BETWEEN 1 AND 2000),
    requested_by text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX erasure_requests_subject ON erasure_requests (subject_ref);

-- What became of a request: approved and deferred (with the basis and the date it ends),
-- approved and executed (with the receipt), or declined. A deferred request gets a second
-- outcome when the worker carries it out.
CREATE TABLE erasure_outcomes (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id   bigint NOT NULL REFERENCES erasure_requests (id),
    outcome      text NOT NULL CHECK (outcome IN ('deferred', 'executed', 'declined')),
    decided_by   text NOT NULL,
    decided_at   timestamptz NOT NULL DEFAULT now(),
    deferred_basis text CHECK (length(deferred_basis) <= 2000),
    deferred_until timestamptz,
    receipt      jsonb CHECK (jsonb_typeof(receipt) = 'object')
);
CREATE INDEX erasure_outcomes_request ON erasure_outcomes (request_id, id);
CREATE UNIQUE INDEX erasure_outcomes_executed_once ON erasure_outcomes (request_id)
    WHERE outcome = 'executed';

-- What a reviewer was shown when they decided: the paths visible to their role by default
-- and those they revealed. Written in the decision's transaction (trigger below).
CREATE TABLE decision_disclosures (
    decision_id bigint PRIMARY KEY REFERENCES review_decisions (id),
    shown       text[] NOT NULL,
    revealed    text[] NOT NULL
);

GRANT SELECT, INSERT ON retention_classes, privacy_policies, privacy_log, privacy_holds,
    privacy_hold_releases, erasure_requests, erasure_outcomes, decision_disclosures,
    sealed_notes TO casework_app;
GRANT SELECT, INSERT, UPDATE ON privacy_subjects TO casework_app;
-- The application adds keys and re-wraps them (rotation: kek_id and wrapped_key only);
-- shredding is casework_erase_subject's.
GRANT SELECT, INSERT ON privacy_subject_keys TO casework_app;
GRANT UPDATE (kek_id, wrapped_key) ON privacy_subject_keys TO casework_app;
-- Erasure (clearing salts and ciphertexts) is casework_erase_subject's alone.
GRANT SELECT, INSERT ON item_fields TO casework_app;
