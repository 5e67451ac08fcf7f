-- Notifications to the owners of waiting work (issue 28): the tables.
--
-- A channel is where messages go (an e-mail list, a Slack- or Teams-style incoming webhook,
-- or any Apprise URL), with its own rate limit and, for busy queues, a digest period. A rule
-- says which waiting work, of which queues or workflows, is told to which channel.
--
-- A notification is a delivery of an outbox event (migration 0031) to a rule's channel:
-- the event is written once, in the transaction of the change that makes it (or, for the
-- time-based ones, by the sweep that finds the deadline passed, under the same dedupe key),
-- and each rule that matches it gets one row here. So a notification is de-duplicated per
-- (rule, item, occurrence) by (rule_id, event_id), and survives a restart between due and
-- sent. The producers (which events reach which rules) are in 0036; sending is in 0037 (0035 is the intake).

CREATE TABLE notification_channels (
    id              uuid PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    -- EMAIL: recipients' addresses, comma-separated; SLACK and TEAMS: the incoming
    -- webhook's URL; APPRISE: an Apprise URL. A target may hold a credential (a webhook's
    -- token, a password in an Apprise URL): the API shows it redacted.
    kind            text NOT NULL CHECK (kind IN ('EMAIL', 'SLACK', 'TEAMS', 'APPRISE')),
    target          text NOT NULL CHECK (length(target) BETWEEN 1 AND 2000),
    -- At most this many messages in any minute; the rest wait their turn, never dropped.
    rate_per_minute integer NOT NULL DEFAULT 30 CHECK (rate_per_minute BETWEEN 1 AND 600),
    -- NULL: one message per notification. N: one message per N minutes listing what waits.
    digest_minutes  integer CHECK (digest_minutes BETWEEN 1 AND 1440),
    enabled         boolean NOT NULL DEFAULT true,
    created_by      text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE notification_rules (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    -- What the owners are told of (server/domain/integrations/notification_kinds.py):
    -- OVERDUE, ESCALATED, UNCLAIMED (waits unclaimed beyond unclaimed_after_seconds),
    -- NEEDS_APPROVAL, APPLICATION_FAILED (a decision's effect failed for good).
    event       text NOT NULL CHECK (event IN ('OVERDUE', 'ESCALATED', 'UNCLAIMED',
                                                'NEEDS_APPROVAL', 'APPLICATION_FAILED')),
    -- Exactly one scope: queues (review items) or workflows (exceptions).
    queues      text[] CHECK (cardinality(queues) > 0),
    workflows   text[] CHECK (cardinality(workflows) > 0),
    unclaimed_after_seconds integer CHECK (unclaimed_after_seconds BETWEEN 60 AND 2592000),
    channel_id  uuid NOT NULL REFERENCES notification_channels (id) ON DELETE RESTRICT,
    enabled     boolean NOT NULL DEFAULT true,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((queues IS NULL) <> (workflows IS NULL)),
    CHECK ((event = 'UNCLAIMED') = (unclaimed_after_seconds IS NOT NULL))
);

CREATE INDEX notification_rules_channel ON notification_rules (channel_id);

CREATE TABLE notification_deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        bigint NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
    rule_id         uuid NOT NULL REFERENCES notification_rules (id) ON DELETE CASCADE,
    channel_id      uuid NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    -- The item whose timeline shows it (an exception's own item for exception events).
    item_id         bigint NOT NULL,
    -- pending: not yet sent (or waiting for the channel's rate or digest); sent; failed:
    -- the attempts ran out or the channel refused for good.
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'sent', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz,
    last_error      text,
    sent_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (rule_id, event_id)
);

CREATE INDEX notification_deliveries_due ON notification_deliveries (channel_id, next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX notification_deliveries_item ON notification_deliveries (item_id);
CREATE INDEX notification_deliveries_event ON notification_deliveries (event_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON notification_channels, notification_rules,
    notification_deliveries TO casework_app;
