-- Redrives by webhook: Casework delivers each redrive to the owning system as it delivers
-- decision effects (a signed POST, retried with backoff), with the redrive key as the
-- idempotency key. Delivery is not completion: the owning system still reports the
-- durable result with reportRedriveResult. A redrive that cannot be delivered at all goes
-- back to a person as a failed redrive.

ALTER TABLE workflows DROP CONSTRAINT workflows_redrive_via_check;
ALTER TABLE workflows
    ADD CONSTRAINT workflows_redrive_via_check
        CHECK (redrive_via IN ('subscription', 'webhook', 'casework')),
    ADD COLUMN redrive_target text,
    -- The HMAC-SHA256 key redrive bodies are signed with.
    ADD COLUMN redrive_secret text,
    ADD COLUMN redrive_max_attempts integer NOT NULL DEFAULT 8
        CHECK (redrive_max_attempts BETWEEN 1 AND 100),
    ADD COLUMN redrive_timeout_seconds double precision NOT NULL DEFAULT 10
        CHECK (redrive_timeout_seconds > 0 AND redrive_timeout_seconds <= 300),
    ADD CONSTRAINT workflows_redrive_webhook
        CHECK ((redrive_via = 'webhook') = (redrive_target IS NOT NULL)
               AND (redrive_target IS NULL) = (redrive_secret IS NULL));

-- NULL delivery_state: the redrive is not delivered by webhook.
ALTER TABLE exception_redrives
    ADD COLUMN delivery_state text CHECK (delivery_state IN ('pending', 'delivered', 'failed')),
    ADD COLUMN delivery_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN next_delivery_at timestamptz,
    -- A worker's claim on the delivery in progress; it lapses if the worker dies.
    ADD COLUMN delivery_locked_until timestamptz,
    ADD COLUMN last_delivery_error text CHECK (length(last_delivery_error) <= 1000),
    ADD COLUMN delivered_at timestamptz,
    ADD CHECK ((delivery_state = 'pending') = (next_delivery_at IS NOT NULL));

CREATE INDEX exception_redrives_deliverable
    ON exception_redrives (next_delivery_at)
    WHERE delivery_state = 'pending';
