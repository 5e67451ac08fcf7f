-- Standard Webhooks on today's webhooks (issue 27): decision effects and redrive webhooks.
--
-- Every decision and redrive webhook now carries webhook-id, webhook-timestamp and
-- webhook-signature. A target configured before this migration keeps getting
-- Casework-Signature and Idempotency-Key beside them (its receiver verifies the old way
-- until it moves), so the setting is turned on for every webhook target that exists now;
-- a target configured afterwards gets the Standard headers only, unless an admin asks.

ALTER TABLE queues
    ADD COLUMN effect_legacy_headers boolean NOT NULL DEFAULT false;
ALTER TABLE workflows
    ADD COLUMN redrive_legacy_headers boolean NOT NULL DEFAULT false;

UPDATE queues SET effect_legacy_headers = true WHERE effect_kind = 'webhook';
UPDATE workflows SET redrive_legacy_headers = true WHERE redrive_via = 'webhook';

-- A rotated-out signing secret of a queue's effect or a workflow's redrive webhook: it keeps
-- signing beside the current one (queues.effect_secret, workflows.redrive_secret) until
-- expires_at, so that a receiver holding either secret verifies during the overlap. Rows
-- past expires_at sign nothing; the next rotation of the same target deletes them.
CREATE TABLE retiring_webhook_secrets (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue      text REFERENCES queues (name) ON DELETE CASCADE,
    workflow   text REFERENCES workflows (name) ON DELETE CASCADE,
    secret     text NOT NULL,
    retired_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    CONSTRAINT retiring_webhook_secrets_one_target CHECK (num_nonnulls(queue, workflow) = 1),
    CONSTRAINT retiring_webhook_secrets_after_retiring CHECK (expires_at > retired_at)
);

CREATE INDEX retiring_webhook_secrets_queue
    ON retiring_webhook_secrets (queue, expires_at) WHERE queue IS NOT NULL;
CREATE INDEX retiring_webhook_secrets_workflow
    ON retiring_webhook_secrets (workflow, expires_at) WHERE workflow IS NOT NULL;

GRANT SELECT, INSERT, DELETE ON retiring_webhook_secrets TO casework_app;
