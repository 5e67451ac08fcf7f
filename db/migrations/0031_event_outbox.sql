-- Event endpoints and the one outbox (issue 27).
--
-- An admin registers webhook endpoints, each subscribed to event types and scoped to queues
-- (review events) or workflows (exception events). A change that makes an event writes it
-- here in its own transaction, through casework_outbox_emit: one outbox_events row, and one
-- outbox_deliveries row per enabled endpoint that subscribes to it. When no endpoint
-- subscribes, nothing is written, so a deployment without endpoints keeps today's hot path.
-- The worker delivers each delivery at least once, in order per item (or exception) and
-- endpoint, with the event's id as `webhook-id` on every retry.

CREATE TABLE webhook_endpoints (
    id             uuid PRIMARY KEY,
    url            text NOT NULL CHECK (length(url) BETWEEN 1 AND 2000),
    description    text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    -- The catalogue's names ('decision.effective', ...), checked by casework_event_type.
    event_types    text[] NOT NULL CHECK (cardinality(event_types) > 0),
    -- Exactly one of the two scopes: review events name queues, exception events workflows.
    queues         text[],
    workflows      text[],
    -- STANDARD: Standard Webhooks, the JSON envelope {type, timestamp, data};
    -- CLOUDEVENTS: a CloudEvents 1.0 structured-mode body, signed the same way.
    format         text NOT NULL DEFAULT 'STANDARD' CHECK (format IN ('STANDARD', 'CLOUDEVENTS')),
    -- Also send Casework-Signature and Idempotency-Key (receivers written before issue 27).
    legacy_headers boolean NOT NULL DEFAULT false,
    enabled        boolean NOT NULL DEFAULT true,
    -- Why it was disabled (an admin, or a receiver's 410), and when.
    disabled_reason text,
    disabled_at    timestamptz,
    max_attempts   integer NOT NULL DEFAULT 8 CHECK (max_attempts BETWEEN 1 AND 100),
    timeout_seconds double precision NOT NULL DEFAULT 10 CHECK (timeout_seconds > 0 AND timeout_seconds <= 60),
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK ((queues IS NULL) <> (workflows IS NULL)),
    CHECK (enabled = (disabled_at IS NULL))
);

-- An endpoint's signing secrets: the newest signs alone, and a rotated-out one keeps
-- signing beside it until expires_at (the overlap), as Standard Webhooks allows.
CREATE TABLE webhook_endpoint_secrets (
    endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz,
    PRIMARY KEY (endpoint_id, created_at)
);

CREATE TABLE outbox_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The webhook-id: stable, unique, and opaque to a receiver.
    message_id  text NOT NULL UNIQUE,
    event_type  text NOT NULL,
    -- What the event is about, and the order it keeps: deliveries of one endpoint for one
    -- subject go out in id order.
    item_id      bigint,
    exception_id text,
    queue        text,
    workflow     text,
    -- The event's data as it was when the change committed: a snapshot, never re-read.
    data         jsonb NOT NULL,
    occurred_at  timestamptz NOT NULL DEFAULT now(),
    -- Time-based events (item.overdue, lease.lapsed) are found by a sweep that may run
    -- twice: the key makes the second a no-op.
    dedupe_key   text UNIQUE,
    CHECK (num_nonnulls(item_id, exception_id) = 1)
);

CREATE TABLE outbox_deliveries (
    event_id        bigint NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    -- The subject the order is kept per (item:<id> or exception:<id>), copied from the event
    -- so the claim needs no join.
    ordering_key    text NOT NULL,
    -- pending: waiting its turn, or in flight under locked_until; delivered: a 2xx came back;
    -- failed: the endpoint's max_attempts ran out, or the receiver refused for good (an admin
    -- replays it). A receiver's 410 disables the endpoint and leaves the delivery pending.
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'delivered', 'failed')),
    -- Every attempt ever made (shown to admins, and the fence: only the latest attempt's
    -- outcome is recorded). A replay or a re-enable starts a new round of max_attempts at
    -- round_start (the attempts made before it).
    attempts        integer NOT NULL DEFAULT 0,
    -- True while an earlier delivery of the same subject to the same endpoint is pending:
    -- it is not due until that one is delivered or fails (the subject's lock orders the
    -- two: see casework_outbox_emit). Only the first pending delivery of a subject is due,
    -- so a claim reads the heads of the line, not a backlog.
    waiting_turn    boolean NOT NULL DEFAULT false,
    round_start     integer NOT NULL DEFAULT 0 CHECK (round_start <= attempts),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (endpoint_id, event_id)
);

CREATE INDEX outbox_deliveries_due ON outbox_deliveries (next_attempt_at)
    WHERE state = 'pending' AND NOT waiting_turn;
-- Retention finds old events, and each event's deliveries (the cascade too).
CREATE INDEX outbox_events_occurred ON outbox_events (occurred_at);
CREATE INDEX outbox_deliveries_event ON outbox_deliveries (event_id);
CREATE INDEX outbox_deliveries_ordering ON outbox_deliveries (endpoint_id, ordering_key, event_id)
    WHERE state = 'pending';

-- Writes one event and its deliveries, in the caller's transaction. Returns the event's id,
-- or null when no enabled endpoint subscribes (or the dedupe key was seen before).
CREATE FUNCTION casework_outbox_emit(
    event_type   text,
    item_id      bigint,
    exception_id text,
    queue        text,
    workflow     text,
    data         jsonb,
    dedupe_key   text DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    event_id bigint;
    subject_key text := CASE WHEN casework_outbox_emit.item_id IS NOT NULL
                             THEN 'item:' || casework_outbox_emit.item_id
                             ELSE 'exception:' || casework_outbox_emit.exception_id END;
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM webhook_endpoints e
        WHERE e.enabled AND casework_outbox_emit.event_type = ANY (e.event_types)
          AND (casework_outbox_emit.queue = ANY (e.queues)
               OR casework_outbox_emit.workflow = ANY (e.workflows))
    ) THEN
        RETURN NULL;
    END IF;
    -- Events of one subject take their ids in the order their transactions commit, so that
    -- delivering in id order is delivering in the order the changes happened: a second
    -- transaction emitting for the same item (or exception) waits here until the first ends.
    -- The worker takes the same lock before it hands a subject's turn on (integrations.sql).
    PERFORM pg_advisory_xact_lock(hashtextextended('outbox ' || subject_key, 0));
    INSERT INTO outbox_events AS o (message_id, event_type, item_id, exception_id, queue,
                                    workflow, data, dedupe_key)
    VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), casework_outbox_emit.event_type,
            casework_outbox_emit.item_id, casework_outbox_emit.exception_id,
            casework_outbox_emit.queue, casework_outbox_emit.workflow, casework_outbox_emit.data,
            casework_outbox_emit.dedupe_key)
    -- By the constraint's name: `(dedupe_key)` would be ambiguous with the parameter.
    ON CONFLICT ON CONSTRAINT outbox_events_dedupe_key_key DO NOTHING
    RETURNING o.id INTO event_id;
    IF event_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO outbox_deliveries (event_id, endpoint_id, ordering_key, waiting_turn)
    SELECT event_id, e.id, subject_key,
           EXISTS (SELECT 1 FROM outbox_deliveries AS p
                   WHERE p.endpoint_id = e.id AND p.ordering_key = subject_key
                     AND p.state = 'pending')
    FROM webhook_endpoints e
    WHERE e.enabled AND casework_outbox_emit.event_type = ANY (e.event_types)
      AND (casework_outbox_emit.queue = ANY (e.queues)
           OR casework_outbox_emit.workflow = ANY (e.workflows));
    RETURN event_id;
END;
$$;

-- Retention: the one way events leave the record. Deletes up to batch_size events older than
-- keep_for none of whose deliveries is pending (delivered, failed, or none left because
-- the endpoint was deleted), and their deliveries. Runs as the migration role: the
-- application role may not delete events. Returns how many it deleted.
CREATE FUNCTION casework_outbox_prune(keep_for interval, batch_size integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    pruned integer;
BEGIN
    IF keep_for IS NULL OR keep_for < interval '1 hour' OR batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'casework_outbox_prune: keep_for >= 1 hour, batch_size 1..10000'
            USING ERRCODE = '22023';
    END IF;
    WITH old AS (
        SELECT o.id FROM outbox_events AS o
        WHERE o.occurred_at < now() - keep_for
          AND NOT EXISTS (SELECT 1 FROM outbox_deliveries AS d
                          WHERE d.event_id = o.id AND d.state = 'pending')
        ORDER BY o.id
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED
    )
    DELETE FROM outbox_events AS o USING old WHERE o.id = old.id;
    GET DIAGNOSTICS pruned = ROW_COUNT;
    RETURN pruned;
END;
$$;
REVOKE ALL ON FUNCTION casework_outbox_prune(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_outbox_prune(interval, integer) TO casework_app;

GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints, webhook_endpoint_secrets TO casework_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON outbox_deliveries TO casework_app;
-- Events are a record of what happened: the application inserts and reads them, never
-- rewrites them.
GRANT SELECT, INSERT ON outbox_events TO casework_app;
