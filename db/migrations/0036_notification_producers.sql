-- Notifications to owners (issue 28): who produces them.
--
-- A notification is a delivery of an outbox event (0031) to a rule's channel (0034). So a
-- rule is a subscriber of the one outbox, beside webhook endpoints: casework_outbox_wanted
-- answers true when an enabled rule (of an enabled channel) wants the event for that queue
-- or workflow, and casework_outbox_emit then writes, in the caller's transaction, one
-- notification_deliveries row per such rule. (rule_id, event_id) is unique, and each
-- occurrence is one event (time-based ones under a dedupe key), so a rule is told of one
-- occurrence once, whichever producer gets there first and however often it runs.
--
-- Which events reach which rules (casework_notification_event):
--
--   item.overdue              OVERDUE            queue      the sweep, or the overdue move
--   exception.overdue         OVERDUE            workflow   a claim's overdue escalation
--   item.escalated            ESCALATED          queue      (the queue it left)
--   item.unclaimed            UNCLAIMED          queue      the unclaimed sweep (below)
--   exception.needs_approval  NEEDS_APPROVAL     workflow
--   decision.failed           APPLICATION_FAILED queue      a decision's effect failed for good
--
-- exception.overdue and item.unclaimed are for rules only: no endpoint subscribes to them
-- (they are not in the event catalogue). decision.failed is in the catalogue.
--
-- Where a deadline passing is recorded: nothing changes when an item's due time passes,
-- so the first durable record of it is the item.overdue event the sweep writes (or the
-- overdue move, when it gets there first), and its notification rows are written with it.
-- The sweep now runs for queues a rule watches too (integration_sweeps.sql).

-- The notification a rule of `event` is told of, for an outbox event type (NULL: none).
CREATE FUNCTION casework_notification_event(event_type text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE $1
               WHEN 'item.overdue' THEN 'OVERDUE'
               WHEN 'exception.overdue' THEN 'OVERDUE'
               WHEN 'item.escalated' THEN 'ESCALATED'
               WHEN 'item.unclaimed' THEN 'UNCLAIMED'
               WHEN 'exception.needs_approval' THEN 'NEEDS_APPROVAL'
               WHEN 'decision.failed' THEN 'APPLICATION_FAILED'
           END
$$;

-- The outbox event types a rule is told of, kept beside its event so that the probe below
-- reads like an endpoint's (`&&` on the types), with no mapping on the way.
ALTER TABLE notification_rules ADD COLUMN event_types text[] GENERATED ALWAYS AS (
    CASE event
        WHEN 'OVERDUE' THEN '{item.overdue,exception.overdue}'::text[]
        WHEN 'ESCALATED' THEN '{item.escalated}'::text[]
        WHEN 'UNCLAIMED' THEN '{item.unclaimed}'::text[]
        WHEN 'NEEDS_APPROVAL' THEN '{exception.needs_approval}'::text[]
        WHEN 'APPLICATION_FAILED' THEN '{decision.failed}'::text[]
    END) STORED;

-- Whether an enabled rule, of an enabled channel, wants any of `types` for this queue or
-- workflow. UNCLAIMED rules are served by their sweep alone.
--
-- Both probes are PL/pgSQL, not SQL: a trigger asks on every decision, and PL/pgSQL keeps
-- each probe's plan for the session, where a SQL function calling another was planned again
-- on every call (bench/outbox_trigger_cost.py: 255 us per decision, against 9 us before
-- rules existed and about 12 us now).
CREATE FUNCTION casework_notification_wanted(types text[], queue text, workflow text)
RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (
        SELECT 1 FROM notification_rules AS r
        JOIN notification_channels AS c ON c.id = r.channel_id
        WHERE r.enabled AND c.enabled AND r.event <> 'UNCLAIMED'
          AND r.event_types && casework_notification_wanted.types
          AND (casework_notification_wanted.queue = ANY (r.queues)
               OR casework_notification_wanted.workflow = ANY (r.workflows)));
END
$$;

CREATE OR REPLACE FUNCTION casework_outbox_wanted(types text[], queue text, workflow text)
RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (
               SELECT 1 FROM webhook_endpoints AS e
               WHERE e.enabled AND e.event_types && casework_outbox_wanted.types
                 AND (casework_outbox_wanted.queue = ANY (e.queues)
                      OR casework_outbox_wanted.workflow = ANY (e.workflows)))
        OR EXISTS (
               SELECT 1 FROM notification_rules AS r
               JOIN notification_channels AS c ON c.id = r.channel_id
               WHERE r.enabled AND c.enabled AND r.event <> 'UNCLAIMED'
                 AND r.event_types && casework_outbox_wanted.types
                 AND (casework_outbox_wanted.queue = ANY (r.queues)
                      OR casework_outbox_wanted.workflow = ANY (r.workflows)));
END
$$;

-- As 0031's, and then one notification per rule that wants the event.
CREATE OR REPLACE FUNCTION casework_outbox_emit(
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
    IF NOT casework_outbox_wanted(ARRAY[casework_outbox_emit.event_type],
                                  casework_outbox_emit.queue, casework_outbox_emit.workflow) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('outbox ' || subject_key, 0));
    INSERT INTO outbox_events AS o (message_id, event_type, item_id, exception_id, queue,
                                    workflow, data, dedupe_key)
    VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), casework_outbox_emit.event_type,
            casework_outbox_emit.item_id, casework_outbox_emit.exception_id,
            casework_outbox_emit.queue, casework_outbox_emit.workflow, casework_outbox_emit.data,
            casework_outbox_emit.dedupe_key)
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
    INSERT INTO notification_deliveries (event_id, rule_id, channel_id, item_id)
    SELECT event_id, r.id, r.channel_id,
           coalesce(casework_outbox_emit.item_id,
                    (SELECT x.item_id FROM exceptions AS x
                     WHERE x.id = casework_outbox_emit.exception_id))
    FROM notification_rules AS r
    JOIN notification_channels AS c ON c.id = r.channel_id
    WHERE r.enabled AND c.enabled AND r.event <> 'UNCLAIMED'
      AND r.event = casework_notification_event(casework_outbox_emit.event_type)
      AND (casework_outbox_emit.queue = ANY (r.queues)
           OR casework_outbox_emit.workflow = ANY (r.workflows))
    -- By the constraint's name: `(event_id)` would be ambiguous with the variable.
    ON CONFLICT ON CONSTRAINT notification_deliveries_rule_id_event_id_key DO NOTHING;
    RETURN event_id;
END;
$$;

-- The probes of 0033's triggers asked webhook_endpoints alone: they ask both now.
CREATE OR REPLACE FUNCTION casework_emit_decision_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    decision review_decisions;
BEGIN
    IF NOT casework_outbox_wanted('{decision.effective,decision.overturned,item.escalated}',
                                  NEW.queue, NULL) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO STRICT decision FROM review_decisions AS d WHERE d.id = NEW.decision_id;
    PERFORM casework_outbox_emit(
        CASE WHEN decision.verdict = 'overturn' THEN 'decision.overturned'
             ELSE 'decision.effective' END,
        decision.item_id, NULL, NEW.queue, NULL, casework_decision_event_data(decision.id));
    IF decision.verdict = 'escalate' THEN
        PERFORM casework_outbox_emit(
            'item.escalated', decision.item_id, NULL, NEW.queue, NULL,
            casework_escalation_event_data(
                decision.item_id, decision.queue,
                (SELECT i.queue FROM review_items AS i WHERE i.id = decision.item_id),
                'verdict', decision.reviewer, decision.id, decision.reason_code,
                decision.decided_at));
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION casework_emit_item_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    cause text;
    due_at timestamptz;
BEGIN
    IF NOT casework_outbox_wanted('{lease.lapsed,item.overdue,item.escalated}', NEW.queue, NULL)
    THEN
        RETURN NULL;
    END IF;
    IF NEW.kind = 'lapsed' THEN
        PERFORM casework_outbox_emit(
            'lease.lapsed', NEW.item_id, NULL, NEW.queue, NULL,
            casework_lapse_event_data(NEW.item_id, NEW.queue, NEW.actor, NEW.lease_started_at,
                                      NEW.at),
            'lease.lapsed:' || NEW.lease_token::text);
        RETURN NULL;
    END IF;
    cause := coalesce(NEW.detail ->> 'cause', 'abandoned');
    IF cause = 'abandoned' THEN
        PERFORM casework_outbox_emit(
            'lease.lapsed', l.item_id, NULL, l.queue, NULL,
            casework_lapse_event_data(l.item_id, l.queue, l.actor, l.lease_started_at, l.at),
            'lease.lapsed:' || l.lease_token::text)
        FROM item_events AS l
        WHERE l.item_id = NEW.item_id AND l.id > NEW.id AND l.kind = 'lapsed';
    END IF;
    IF cause = 'overdue' THEN
        due_at := (NEW.detail ->> 'due_at')::timestamptz;
        PERFORM casework_outbox_emit(
            'item.overdue', NEW.item_id, NULL, NEW.queue, NULL,
            casework_overdue_event_data(NEW.item_id, NEW.queue, due_at),
            'item.overdue:' || NEW.item_id || ':' || casework_event_micros(due_at));
    END IF;
    PERFORM casework_outbox_emit(
        'item.escalated', NEW.item_id, NULL, NEW.queue, NULL,
        casework_escalation_event_data(
            NEW.item_id, coalesce(NEW.detail ->> 'from_queue', NEW.queue),
            NEW.detail ->> 'to_queue', cause, NEW.actor, NULL, NULL, NEW.at));
    RETURN NULL;
END
$$;

-- decision.failed: a decision's effect failed for good (its attempts ran out, or the
-- target refused for good). The data is decision.effective's with `attempts` and
-- `failedAt`; not the last error, which quotes the target's answer. A redrive of the decision that fails again is a new occurrence
-- (the key names the attempts made).
CREATE FUNCTION casework_emit_decision_failed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT casework_outbox_wanted('{decision.failed}', NEW.queue, NULL) THEN
        RETURN NULL;
    END IF;
    PERFORM casework_outbox_emit(
        'decision.failed', d.item_id, NULL, NEW.queue, NULL,
        casework_decision_event_data(d.id) || jsonb_build_object(
            'attempts', NEW.attempts,
            'failedAt', casework_event_time(NEW.updated_at)),
        'decision.failed:' || d.id || ':' || NEW.attempts)
    FROM review_decisions AS d
    WHERE d.id = NEW.decision_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER decision_applications_emit_failed
    AFTER UPDATE OF state ON decision_applications
    FOR EACH ROW WHEN (NEW.state = 'failed' AND OLD.state IS DISTINCT FROM 'failed')
    EXECUTE FUNCTION casework_emit_decision_failed();

-- exception.overdue (rules only): a claim moved an exception waiting past its due time to
-- its escalation owner (exceptions_escalate_overdue): that move is where its deadline
-- passing is recorded.
CREATE FUNCTION casework_emit_exception_overdue() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT casework_notification_wanted('{exception.overdue}', NULL, NEW.workflow) THEN
        RETURN NULL;
    END IF;
    PERFORM casework_outbox_emit(
        'exception.overdue', NULL, x.id, NULL, x.workflow,
        jsonb_build_object(
            'exceptionId', x.id,
            'workflow', x.workflow,
            'sourceRecordId', x.source_record_id,
            'reasonCode', x.reason_code,
            'itemId', x.item_id::text,
            'fromOwnerRole', NEW.data ->> 'fromOwnerRole',
            'ownerRole', NEW.data ->> 'toOwnerRole',
            'dueAt', casework_event_time(x.due_at)),
        'exception.overdue:' || x.id || ':' || casework_event_micros(x.due_at))
    FROM exceptions AS x
    WHERE x.id = NEW.exception_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER exception_events_emit_overdue
    AFTER INSERT ON exception_events
    FOR EACH ROW WHEN (NEW.kind = 'escalated' AND NEW.actor = 'casework')
    EXECUTE FUNCTION casework_emit_exception_overdue();

-- Retention keeps an event while a notification of it is pending, as it does while a
-- webhook delivery is.
CREATE OR REPLACE FUNCTION casework_outbox_prune(keep_for interval, batch_size integer)
RETURNS integer
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
          AND NOT EXISTS (SELECT 1 FROM notification_deliveries AS n
                          WHERE n.event_id = o.id AND n.state = 'pending')
        ORDER BY o.id
        LIMIT batch_size
        FOR UPDATE SKIP LOCKED
    )
    DELETE FROM outbox_events AS o USING old WHERE o.id = old.id;
    GET DIAGNOSTICS pruned = ROW_COUNT;
    RETURN pruned;
END;
$$;

-- The unclaimed sweep (db/queries/notifications.sql) finds, per enabled UNCLAIMED rule,
-- pending items of its queues that nobody holds (no live lease, no hold) and that have
-- waited since their enqueue, or since their last lease or hold ended or they last moved,
-- longer than the rule's bound. The
-- moment they wait since is part of the occurrence's key, so one wait is told once per
-- rule, and a new wait (claimed, then released) again.
CREATE FUNCTION casework_unclaimed_since(item_id bigint) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT greatest(
               i.created_at,
               CASE WHEN i.lease_expires_at <= now() THEN i.lease_expires_at END,
               CASE WHEN i.held_until <= now() THEN i.held_until END,
               (SELECT max(e.at) FROM item_events AS e
                WHERE e.item_id = i.id
                  AND e.kind IN ('released', 'lapsed', 'revoked', 'escalated', 'moved',
                                 'resumed', 'reuploaded', 'unassigned')))
    FROM review_items AS i
    WHERE i.id = $1
$$;

GRANT EXECUTE ON FUNCTION casework_notification_event(text),
    casework_notification_wanted(text[], text, text),
    casework_unclaimed_since(bigint)
    TO casework_app;
