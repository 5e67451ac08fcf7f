-- Dead-letter intake (issue 28): `casework intake` drains brokers' dead-letter queues.
--
-- Each message it takes is recorded here, keyed by the intake source's name and the
-- broker's message id, in the same transaction as the exception it raises (or the item it
-- enqueues). The message is acknowledged only after that commits; a crash between the two
-- brings the message back, finds its key here, and is acknowledged without raising again.
--
-- A workflow may redrive by publishing the corrected message back to where it failed
-- (redrive_via = 'broker'): the origin and the original message are kept here for that.

CREATE TABLE intake_messages (
    -- The [[source]] name in the intake's configuration, and the broker's message id.
    source       text NOT NULL CHECK (length(source) BETWEEN 1 AND 100),
    message_id   text NOT NULL CHECK (length(message_id) BETWEEN 1 AND 500),
    broker       text NOT NULL CHECK (broker IN ('rabbitmq', 'nats', 'sqs')),
    -- What it became: an exception of a workflow, or a review item of a queue.
    exception_id text REFERENCES exceptions (id),
    item_id      bigint REFERENCES review_items (id),
    -- Where it failed (server/intake/sources.py Origin), so a redrive can publish back.
    origin       jsonb NOT NULL,
    -- The message as the broker held it, for the redrive; NULL when the intake did not keep
    -- it (docs/integrations.md says when).
    body         bytea,
    headers      jsonb NOT NULL DEFAULT '{}',
    -- What the broker said of the failure (x-death, the max-deliveries advisory, the
    -- receive count).
    failure      jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, message_id),
    CHECK (num_nonnulls(exception_id, item_id) = 1)
);

CREATE INDEX intake_messages_exception ON intake_messages (exception_id, received_at)
    WHERE exception_id IS NOT NULL;
CREATE INDEX intake_messages_item ON intake_messages (item_id) WHERE item_id IS NOT NULL;

ALTER TABLE workflows DROP CONSTRAINT workflows_redrive_via_check;
ALTER TABLE workflows
    ADD CONSTRAINT workflows_redrive_via_check
        CHECK (redrive_via IN ('subscription', 'webhook', 'casework', 'broker'));

GRANT SELECT, INSERT ON intake_messages TO casework_app;
