-- The producers of the event catalogue (issue 27): each event is written to the outbox
-- (casework_outbox_emit, migration 0031) in the transaction of the change that makes it, by
-- a trigger on the append-only record that change writes, so no statement of the review
-- loop or the exception machine changes, and a rolled-back change leaves no event:
--
--   decision_applications   decision.effective, decision.overturned, item.escalated (verdict)
--   item_events             lease.lapsed (noticed by a claim or a move), item.overdue and
--                           item.escalated (the overdue move, the abandons escalation)
--   exception_events        exception.raised, exception.needs_approval, exception.closed
--   exception_redrives      redrive.requested
--
-- Every trigger function first asks whether an enabled endpoint subscribes to what it could
-- emit for that queue or workflow (one probe of webhook_endpoints) and returns at once when
-- none does: that is all a deployment without endpoints pays, on the decision only.
--
-- The two time-based events (item.overdue, lease.lapsed) have no change that makes them:
-- a due time or a lease end simply passes. A sweep run by the apply worker finds them
-- (server/domain/integrations/sweeps.py, db/queries/integration_sweeps.sql), bounded per
-- round, from a mark per (event type, queue) it keeps below; a dedupe key per occurrence
-- makes the sweep and the triggers above (which see the same lapse or overdue when a claim
-- or the overdue move gets there first) write each one once.

-- Times in event data: ISO 8601 in UTC with microseconds, whatever the session's TimeZone.
CREATE FUNCTION casework_event_time(moment timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_char(moment AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+00:00'
$$;

-- A dedupe key's time part: microseconds since the epoch, exact.
CREATE FUNCTION casework_event_micros(moment timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (extract(epoch FROM moment) * 1000000)::bigint::text
$$;

-- Whether an enabled endpoint subscribes to any of `types` for this queue or workflow.
CREATE FUNCTION casework_outbox_wanted(types text[], queue text, workflow text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM webhook_endpoints AS e
        WHERE e.enabled AND e.event_types && $1
          AND ($2 = ANY (e.queues) OR $3 = ANY (e.workflows)))
$$;

-- The decision webhook's body (server/domain/review/apply.py DueApplication.payload)
-- without `attempt` and `redriveKey`: an event is one occurrence, not one delivery. The
-- note of an item under a privacy policy is null, as applications_claim sends it.
CREATE FUNCTION casework_decision_event_data(decision_id bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'decisionId', d.id::text,
               'itemId', d.item_id::text,
               'externalKey', i.external_key,
               'queue', d.queue,
               'verdict', upper(d.outcome),
               'isOverturn', d.verdict = 'overturn',
               'supersedes', CASE WHEN s.id IS NOT NULL
                                  THEN jsonb_build_object('decisionId', s.id::text,
                                                          'verdict', upper(s.outcome)) END,
               'reasonCode', d.reason_code,
               'note', CASE WHEN i.policy_version IS NULL THEN d.note END,
               'reviewer', d.reviewer,
               'evidenceHash', d.evidence_hash,
               'decidedAt', casework_event_time(d.decided_at))
    FROM review_decisions AS d
    JOIN review_items AS i ON i.id = d.item_id
    -- Only an overturn names what it supersedes (an override's provisional decision never
    -- took effect), as applications_claim does.
    LEFT JOIN review_decisions AS s ON s.id = d.supersedes AND d.verdict = 'overturn'
    WHERE d.id = $1
$$;

-- item.escalated's data, from any of its three causes: `verdict` (a reviewer's ESCALATE),
-- `overdue` (the overdue move), `abandoned` (too many lapsed leases, moved by a claim).
CREATE FUNCTION casework_escalation_event_data(
    item_id bigint, from_queue text, to_queue text, cause text, actor text,
    decision_id bigint, reason_code text, escalated_at timestamptz
) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    -- Parameters by position: a column of review_items would hide a parameter's name.
    SELECT jsonb_build_object(
               'itemId', i.id::text,
               'externalKey', i.external_key,
               'fromQueue', $2,
               'toQueue', $3,
               'cause', $4,
               'actor', $5,
               'decisionId', $6::text,
               'reasonCode', $7,
               'escalatedAt', casework_event_time($8))
    FROM review_items AS i
    WHERE i.id = $1
$$;

CREATE FUNCTION casework_lapse_event_data(
    item_id bigint, queue text, lease_owner text, lease_started_at timestamptz,
    lapsed_at timestamptz
) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'itemId', i.id::text,
               'externalKey', i.external_key,
               'queue', $2,
               'leaseOwner', $3,
               'leaseStartedAt', casework_event_time($4),
               'lapsedAt', casework_event_time($5))
    FROM review_items AS i
    WHERE i.id = $1
$$;

CREATE FUNCTION casework_overdue_event_data(item_id bigint, queue text, due_at timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'itemId', i.id::text,
               'externalKey', i.external_key,
               'queue', $2,
               'dueAt', casework_event_time($3))
    FROM review_items AS i
    WHERE i.id = $1
$$;

-- decision.effective or decision.overturned for every decision that goes on the apply work
-- list: decision_submit (unless provisional), decision_confirm, decision_override,
-- decision_overturn each enlist the decision when, and only when, it takes effect. A
-- redrive puts a decision back on the list by an UPDATE: no second event.
CREATE FUNCTION casework_emit_decision_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    decision review_decisions;
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM webhook_endpoints AS e
        WHERE e.enabled AND NEW.queue = ANY (e.queues)
          AND e.event_types && '{decision.effective,decision.overturned,item.escalated}'::text[]
    ) THEN
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

CREATE TRIGGER decision_applications_emit_events
    AFTER INSERT ON decision_applications
    FOR EACH ROW EXECUTE FUNCTION casework_emit_decision_events();

-- From the item's timeline: a lapse that a claim, a move or a revocation noticed, and an
-- escalation without a verdict. The overdue move is also the item's item.overdue, with
-- the key the sweep uses, so it is written once whichever gets there first.
CREATE FUNCTION casework_emit_item_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    cause text;
    due_at timestamptz;
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM webhook_endpoints AS e
        WHERE e.enabled AND NEW.queue = ANY (e.queues)
          AND e.event_types && '{lease.lapsed,item.overdue,item.escalated}'::text[]
    ) THEN
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
    -- A claim that moves an item abandoned too often writes its last lapse and the move in
    -- one statement, the move's row first: the lapse's event goes first, under its key, so
    -- the item's events keep the order things happened in (the lapse's own row then finds
    -- its event written). Rows of this item after this one are this statement's: the item
    -- is locked by it.
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

CREATE TRIGGER item_events_emit_events
    AFTER INSERT ON item_events
    FOR EACH ROW WHEN (NEW.kind IN ('lapsed', 'escalated'))
    EXECUTE FUNCTION casework_emit_item_events();

-- From the exception's history: raised (not a recurrence: that is the same open exception),
-- a correction submitted (it waits for an approver), and closed (by a person, or by a
-- redrive's success).
CREATE FUNCTION casework_emit_exception_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    x exceptions;
    event_type text;
    data jsonb;
BEGIN
    event_type := CASE WHEN NEW.kind = 'raised' THEN 'exception.raised'
                       WHEN NEW.kind = 'correction_submitted' THEN 'exception.needs_approval'
                       ELSE 'exception.closed' END;
    IF NOT casework_outbox_wanted(ARRAY[event_type], NULL, NEW.workflow) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO STRICT x FROM exceptions AS e WHERE e.id = NEW.exception_id;
    data := jsonb_build_object(
        'exceptionId', x.id,
        'workflow', x.workflow,
        'sourceRecordId', x.source_record_id,
        'reasonCode', x.reason_code,
        'consequence', x.consequence,
        'state', NEW.to_state,
        'version', NEW.version,
        'ownerRole', x.owner_role,
        'actor', NEW.actor,
        'at', casework_event_time(NEW.at));
    IF NEW.kind = 'raised' THEN
        data := data || jsonb_build_object(
            'blockedStep', x.blocked_step,
            'completedSteps', to_jsonb(x.completed_steps),
            'escalationRole', x.escalation_role,
            'dueAt', casework_event_time(x.due_at));
    ELSIF NEW.kind = 'correction_submitted' THEN
        data := data || jsonb_build_object(
            'approvalQueue', (SELECT w.approval_queue FROM workflows AS w
                              WHERE w.name = x.workflow),
            'staleSteps', to_jsonb(x.stale_steps));
    ELSE
        data := data || jsonb_build_object(
            'closure', x.closure,
            'redriveKey', NEW.data ->> 'redriveKey');
    END IF;
    PERFORM casework_outbox_emit(event_type, NULL, x.id, NULL, x.workflow, data);
    RETURN NULL;
END
$$;

CREATE TRIGGER exception_events_emit_events
    AFTER INSERT ON exception_events
    FOR EACH ROW WHEN (NEW.kind IN ('raised', 'correction_submitted') OR NEW.to_state = 'closed')
    EXECUTE FUNCTION casework_emit_exception_events();

-- redrive.requested: the redrive webhook's body (server/domain/exceptions/redrive_delivery.py
-- DueDelivery.payload) without `attempt`, for every workflow, however it takes redrives.
CREATE FUNCTION casework_emit_redrive_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT casework_outbox_wanted('{redrive.requested}', NULL, NEW.workflow) THEN
        RETURN NULL;
    END IF;
    PERFORM casework_outbox_emit(
        'redrive.requested', NULL, NEW.exception_id, NULL, NEW.workflow,
        (SELECT jsonb_build_object(
                    'redriveKey', NEW.key,
                    'exceptionId', NEW.exception_id,
                    'workflow', NEW.workflow,
                    'sourceRecordId', NEW.source_record_id,
                    'version', NEW.version,
                    'reasonCode', e.reason_code,
                    'completedSteps', to_jsonb(e.completed_steps),
                    'blockedStep', e.blocked_step,
                    'resumeAfter', NEW.resume_after,
                    'staleSteps', to_jsonb(NEW.stale_steps),
                    'changes', k.changes,
                    'evidence', to_jsonb(k.evidence),
                    'correctedBy', k.corrected_by,
                    'requestedBy', NEW.requested_by,
                    'requestedAt', casework_event_time(NEW.requested_at))
         FROM exceptions AS e
         JOIN exception_corrections AS k
             ON k.workflow = NEW.workflow AND k.source_record_id = NEW.source_record_id
            AND k.version = NEW.version
         WHERE e.id = NEW.exception_id));
    RETURN NULL;
END
$$;

CREATE TRIGGER exception_redrives_emit_event
    AFTER INSERT ON exception_redrives
    FOR EACH ROW EXECUTE FUNCTION casework_emit_redrive_event();

-- Where the time-event sweep has got to, per event type and queue: the (time, item id) of
-- the last occurrence it wrote. A queue gets its mark when an endpoint first subscribes to
-- the type for it, at that moment: a new endpoint is not sent what fell due before it.
CREATE TABLE outbox_sweep_marks (
    event_type    text NOT NULL CHECK (event_type IN ('item.overdue', 'lease.lapsed')),
    queue         text NOT NULL,
    swept_until   timestamptz NOT NULL,
    swept_item_id bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (event_type, queue)
);

GRANT SELECT, INSERT, UPDATE ON outbox_sweep_marks TO casework_app;
GRANT EXECUTE ON FUNCTION casework_event_time(timestamptz), casework_event_micros(timestamptz),
    casework_outbox_wanted(text[], text, text), casework_decision_event_data(bigint),
    casework_escalation_event_data(bigint, text, text, text, text, bigint, text, timestamptz),
    casework_lapse_event_data(bigint, text, text, timestamptz, timestamptz),
    casework_overdue_event_data(bigint, text, timestamptz)
    TO casework_app;
