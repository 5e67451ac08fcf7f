-- Exceptions: automated work that could not finish and needs a person to correct or judge
-- it. An exception rides on a review item (kind 'exception'), so claiming, leases and the
-- lease-token fence are the review loop's own. The exception row holds the state machine;
-- `exception_events` is its append-only history; `exception_corrections` the immutable
-- correction versions; `exception_redrives` the keyed requests to re-enter the workflow.

-- Approval queues are worked by approvers, every other queue by reviewers.
ALTER TABLE queues
    ADD COLUMN holder_role text NOT NULL DEFAULT 'reviewer'
        CHECK (holder_role IN ('reviewer', 'approver'));

-- `parked`: an exception's item while nobody can act under a lease (a redrive is pending,
-- or the exception is closed). It is outside the claim index, like a decided item.
ALTER TABLE review_items DROP CONSTRAINT review_items_state_check;
ALTER TABLE review_items
    ADD CONSTRAINT review_items_state_check CHECK (state IN ('pending', 'decided', 'parked')),
    ADD COLUMN kind text NOT NULL DEFAULT 'review' CHECK (kind IN ('review', 'exception')),
    ADD CHECK (state <> 'parked' OR kind = 'exception');

CREATE TABLE workflows (
    name           text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    -- Where corrections wait for an approver (four-eyes).
    approval_queue text NOT NULL REFERENCES queues (name),
    -- How the owning system learns of a redrive: it follows exceptionEvents (subscription),
    -- or Casework carries the redrive out itself (apply_decision re-applies a decision).
    redrive_via    text NOT NULL DEFAULT 'subscription'
                   CHECK (redrive_via IN ('subscription', 'casework')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- The closed catalogue of reasons per workflow. An owner role is a team, and a team is the
-- queue its members' tokens list: the exception waits there to be claimed.
CREATE TABLE exception_reasons (
    workflow             text NOT NULL REFERENCES workflows (name),
    code                 text NOT NULL CHECK (code ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    label                text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
    owner_role           text NOT NULL REFERENCES queues (name),
    escalation_role      text NOT NULL REFERENCES queues (name),
    allowed_actions      text[] NOT NULL
                         CHECK (cardinality(allowed_actions) > 0
                                AND allowed_actions <@ ARRAY[
                                    'attach_evidence', 'submit_correction',
                                    'approve_correction', 'reject_correction',
                                    'request_redrive', 'report_redrive_result',
                                    'close_exception', 'reopen_exception']::text[]),
    -- How long a person has, by consequence level.
    due_low_seconds      integer NOT NULL CHECK (due_low_seconds > 0),
    due_medium_seconds   integer NOT NULL CHECK (due_medium_seconds > 0),
    due_high_seconds     integer NOT NULL CHECK (due_high_seconds > 0),
    due_critical_seconds integer NOT NULL CHECK (due_critical_seconds > 0),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow, code)
);

CREATE FUNCTION exception_due_seconds(r exception_reasons, consequence text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE consequence
               WHEN 'low' THEN r.due_low_seconds
               WHEN 'medium' THEN r.due_medium_seconds
               WHEN 'high' THEN r.due_high_seconds
               ELSE r.due_critical_seconds
           END
$$;

CREATE TABLE exceptions (
    -- Stable and opaque: 'exc_' and 20 Crockford base32 characters (time, then random).
    id               text PRIMARY KEY CHECK (id ~ '^exc_[0-9A-HJKMNP-TV-Z]{20}$'),
    workflow         text NOT NULL,
    source_record_id text NOT NULL CHECK (length(source_record_id) BETWEEN 1 AND 200),
    reason_code      text NOT NULL,
    detail           text NOT NULL CHECK (length(detail) BETWEEN 1 AND 4000),
    -- The step that could not run, and the steps that had completed before it.
    blocked_step     text CHECK (length(blocked_step) <= 200),
    completed_steps  text[] NOT NULL DEFAULT '{}',
    -- Completed steps the current correction says must run again.
    stale_steps      text[] NOT NULL DEFAULT '{}',
    -- References (URIs, document ids), never the documents.
    evidence         text[] NOT NULL DEFAULT '{}',
    context          jsonb NOT NULL DEFAULT '{}',
    consequence      text NOT NULL CHECK (consequence IN ('low', 'medium', 'high', 'critical')),
    state            text NOT NULL DEFAULT 'needs_review'
                     CHECK (state IN ('needs_review', 'awaiting_approval', 'redrive_pending',
                                      'closed')),
    closure          text CHECK (closure IN ('corrected', 'rejected', 'duplicate', 'obsolete')),
    owner_role       text NOT NULL REFERENCES queues (name),
    escalation_role  text NOT NULL REFERENCES queues (name),
    escalated_at     timestamptz,
    due_at           timestamptz NOT NULL,
    -- Tries at the automated work: the original one, then one per failed redrive.
    attempts         integer NOT NULL DEFAULT 1,
    recurrences      integer NOT NULL DEFAULT 0,
    reopen_count     integer NOT NULL DEFAULT 0,
    -- The latest correction version (0: none yet).
    version          integer NOT NULL DEFAULT 0,
    last_rejection   text,
    item_id          bigint NOT NULL UNIQUE REFERENCES review_items (id),
    -- For the apply_decision workflow: the decision whose effect was refused.
    decision_id      bigint REFERENCES review_decisions (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    closed_at        timestamptz,
    FOREIGN KEY (workflow, reason_code) REFERENCES exception_reasons (workflow, code),
    CHECK ((state = 'closed') = (closure IS NOT NULL)),
    CHECK ((state = 'closed') = (closed_at IS NOT NULL))
);

-- Raising is idempotent while an exception is open: the same workflow, record and reason
-- is one exception, and a repeat counts as a recurrence.
CREATE UNIQUE INDEX exceptions_open_once
    ON exceptions (workflow, source_record_id, reason_code)
    WHERE state <> 'closed';

-- Overdue escalation looks from both ends: the owner's queue and the escalation queue.
CREATE INDEX exceptions_overdue_by_owner
    ON exceptions (owner_role, due_at)
    WHERE state = 'needs_review' AND escalated_at IS NULL;
CREATE INDEX exceptions_overdue_by_escalation
    ON exceptions (escalation_role, due_at)
    WHERE state = 'needs_review' AND escalated_at IS NULL;

CREATE INDEX exceptions_workflow_id ON exceptions (workflow, id);
CREATE INDEX exceptions_source ON exceptions (workflow, source_record_id);

-- Correction versions are numbered per source record, not per exception, so that
-- `workflow:source_record_id:v<version>` names one correction even when a record has had
-- several exceptions.
CREATE TABLE exception_corrections (
    workflow         text NOT NULL,
    source_record_id text NOT NULL,
    version          integer NOT NULL CHECK (version > 0),
    exception_id     text NOT NULL REFERENCES exceptions (id),
    reason_code      text NOT NULL,
    changes          jsonb NOT NULL,
    stale_steps      text[] NOT NULL DEFAULT '{}',
    evidence         text[] NOT NULL CHECK (cardinality(evidence) > 0),
    note             text CHECK (length(note) <= 4000),
    corrected_by     text NOT NULL,
    submitted_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow, source_record_id, version),
    UNIQUE (exception_id, version)
);

CREATE TABLE exception_redrives (
    key              text PRIMARY KEY,
    exception_id     text NOT NULL REFERENCES exceptions (id),
    workflow         text NOT NULL,
    source_record_id text NOT NULL,
    version          integer NOT NULL,
    -- Where the workflow resumes: after this step (NULL: from the start).
    resume_after     text,
    stale_steps      text[] NOT NULL DEFAULT '{}',
    requested_by     text NOT NULL,
    requested_at     timestamptz NOT NULL DEFAULT now(),
    result           text CHECK (result IN ('succeeded', 'failed')),
    result_detail    text CHECK (length(result_detail) <= 4000),
    reported_by      text,
    reported_at      timestamptz,
    FOREIGN KEY (workflow, source_record_id, version)
        REFERENCES exception_corrections (workflow, source_record_id, version),
    UNIQUE (exception_id, version),
    CHECK (key = workflow || ':' || source_record_id || ':v' || version),
    CHECK ((result IS NULL) = (reported_at IS NULL))
);

-- Append-only, like review_decisions: the application role may only INSERT and SELECT.
CREATE TABLE exception_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    exception_id text NOT NULL REFERENCES exceptions (id),
    workflow     text NOT NULL,
    -- The writing transaction, for a commit-ordered, resumable exceptionEvents stream.
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    kind         text NOT NULL
                 CHECK (kind IN ('raised', 'recurred', 'evidence_attached',
                                 'correction_submitted', 'correction_approved',
                                 'correction_rejected', 'redrive_requested',
                                 'redrive_succeeded', 'redrive_failed', 'closed', 'reopened',
                                 'escalated')),
    actor        text NOT NULL,
    actor_role   text NOT NULL,
    from_state   text,
    to_state     text NOT NULL,
    version      integer NOT NULL,
    evidence     text[] NOT NULL DEFAULT '{}',
    detail       text CHECK (length(detail) <= 4000),
    data         jsonb,
    at           timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX exception_events_exception ON exception_events (exception_id, id);
CREATE INDEX exception_events_stream ON exception_events (workflow, txid, id);

-- A decision re-applied by a redrive: the redrive it answers, and the attempts made before
-- it, so the queue's attempt budget starts afresh.
ALTER TABLE decision_applications
    ADD COLUMN redrive_key text REFERENCES exception_redrives (key),
    ADD COLUMN attempts_before_redrive integer NOT NULL DEFAULT 0;

-- Where a redrive resumes: after the last completed step, or, when steps were marked stale,
-- after the last completed step before the first stale one (NULL: from the start).
CREATE FUNCTION exception_resume_after(completed text[], stale text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN f.first_stale IS NULL THEN completed[cardinality(completed)]
                ELSE completed[f.first_stale - 1] END
    FROM (SELECT min(s.n) AS first_stale
          FROM unnest(completed) WITH ORDINALITY AS s (step, n)
          WHERE s.step = ANY (stale)) AS f
$$;

CREATE FUNCTION casework_new_exception_id() RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    alphabet constant text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    millis bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    random_bytes bytea := uuid_send(gen_random_uuid());
    id text := '';
BEGIN
    -- 10 characters of milliseconds (sortable by time), 10 of randomness (50 bits).
    FOR n IN REVERSE 9..0 LOOP
        id := id || substr(alphabet, ((millis >> (5 * n)) & 31)::int + 1, 1);
    END LOOP;
    FOR n IN 0..9 LOOP
        id := id || substr(alphabet, (get_byte(random_bytes, n) & 31) + 1, 1);
    END LOOP;
    RETURN 'exc_' || id;
END
$$;

-- Raises an exception, or counts a recurrence of the open one for the same workflow,
-- record and reason. One function, so the API and the apply worker raise the same way.
-- A concurrent raise of the same exception loses on exceptions_open_once and becomes a
-- recurrence of the winner's.
CREATE FUNCTION casework_raise_exception(
    p_workflow text, p_source_record_id text, p_reason_code text, p_detail text,
    p_blocked_step text, p_completed_steps text[], p_evidence text[], p_context jsonb,
    p_consequence text, p_actor text, p_actor_role text, p_decision_id bigint
) RETURNS TABLE (exception_id text, created boolean, item_id bigint, queue text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    reason exception_reasons;
    existing exceptions;
    new_id text;
    new_item bigint;
BEGIN
    SELECT * INTO STRICT reason
    FROM exception_reasons AS r
    WHERE r.workflow = p_workflow AND r.code = p_reason_code;
    LOOP
        -- New references join the record; the repeat's detail stays in its event.
        UPDATE exceptions AS e
        SET recurrences = e.recurrences + 1,
            evidence = e.evidence || coalesce(
                (SELECT array_agg(t.reference ORDER BY t.n)
                 FROM unnest(p_evidence) WITH ORDINALITY AS t (reference, n)
                 WHERE NOT t.reference = ANY (e.evidence)), '{}'),
            updated_at = now()
        WHERE e.workflow = p_workflow AND e.source_record_id = p_source_record_id
          AND e.reason_code = p_reason_code AND e.state <> 'closed'
        RETURNING e.* INTO existing;
        IF FOUND THEN
            INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role,
                                          from_state, to_state, version, evidence, detail)
            VALUES (existing.id, p_workflow, 'recurred', p_actor, p_actor_role,
                    existing.state, existing.state, existing.version, p_evidence, p_detail);
            SELECT i.queue INTO queue FROM review_items AS i WHERE i.id = existing.item_id;
            RETURN QUERY SELECT existing.id, false, existing.item_id, queue;
            RETURN;
        END IF;
        new_id := casework_new_exception_id();
        BEGIN
            INSERT INTO review_items (origin_queue, queue, external_key, priority, payload,
                                      evidence_hash, kind)
            VALUES (reason.owner_role, reason.owner_role, new_id,
                    CASE p_consequence WHEN 'critical' THEN 300 WHEN 'high' THEN 200
                                       WHEN 'medium' THEN 100 ELSE 0 END,
                    jsonb_build_object('exceptionId', new_id),
                    -- The canonical form of that payload, as server/domain/evidence.py hashes.
                    encode(sha256(convert_to('{"exceptionId":"' || new_id || '"}', 'UTF8')),
                           'hex'),
                    'exception')
            RETURNING id INTO new_item;
            INSERT INTO exceptions (id, workflow, source_record_id, reason_code, detail,
                                    blocked_step, completed_steps, evidence, context,
                                    consequence, owner_role, escalation_role, due_at, item_id,
                                    decision_id)
            VALUES (new_id, p_workflow, p_source_record_id, p_reason_code, p_detail,
                    p_blocked_step, p_completed_steps, p_evidence, p_context, p_consequence,
                    reason.owner_role, reason.escalation_role,
                    now() + make_interval(secs => exception_due_seconds(reason, p_consequence)),
                    new_item, p_decision_id);
        EXCEPTION WHEN unique_violation THEN
            -- Only exceptions_open_once can clash: a concurrent raise won. Count this one
            -- as a recurrence of it (its item insert is undone with this block).
            CONTINUE;
        END;
        INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role,
                                      from_state, to_state, version, evidence, detail, data)
        VALUES (new_id, p_workflow, 'raised', p_actor, p_actor_role, NULL, 'needs_review', 0,
                p_evidence, p_detail,
                jsonb_build_object('completedSteps', p_completed_steps,
                                   'blockedStep', p_blocked_step,
                                   'consequence', p_consequence));
        RETURN QUERY SELECT new_id, true, new_item, reason.owner_role;
        RETURN;
    END LOOP;
END
$$;

-- The workflow Casework itself raises into when a decision's effect is refused for good.
INSERT INTO queues (name, holder_role) VALUES
    ('apply_decision', 'reviewer'),
    ('apply_decision.escalations', 'reviewer'),
    ('apply_decision.approvals', 'approver');
INSERT INTO workflows (name, approval_queue, redrive_via)
VALUES ('apply_decision', 'apply_decision.approvals', 'casework');
INSERT INTO exception_reasons (workflow, code, label, owner_role, escalation_role,
                               allowed_actions, due_low_seconds, due_medium_seconds,
                               due_high_seconds, due_critical_seconds)
SELECT 'apply_decision', code, label, 'apply_decision', 'apply_decision.escalations',
       ARRAY['attach_evidence', 'submit_correction', 'approve_correction',
             'reject_correction', 'request_redrive', 'report_redrive_result',
             'close_exception', 'reopen_exception'],
       259200, 86400, 14400, 3600
FROM (VALUES ('effect_refused', 'The owning system refused the effect for good'),
             ('attempts_exhausted', 'Every attempt allowed failed')) AS r (code, label);

GRANT SELECT, INSERT, UPDATE ON workflows, exception_reasons, exceptions, exception_redrives
    TO casework_app;
GRANT SELECT, INSERT ON exception_corrections, exception_events TO casework_app;
GRANT EXECUTE ON FUNCTION casework_new_exception_id(), casework_raise_exception(
    text, text, text, text, text, text[], text[], jsonb, text, text, text, bigint),
    exception_due_seconds(exception_reasons, text), exception_resume_after(text[], text[])
    TO casework_app;
