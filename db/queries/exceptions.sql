-- The exception state machine. Each action is one statement: its fence (the state it may
-- start from, the reason's allowed actions, and for work under a claim the live lease of
-- the caller) sits in the WHERE clause of `target`; if any condition fails, nothing is
-- written and no row comes back. Every action appends one row to exception_events and
-- sends one hint. An action under a lease records on its event when that lease began (the
-- item's lease_started_at, read with the fence), so its hands-on time can be measured.
-- Common parameters: :actor (the token's user), :actor_role, and :queue_scope, the queues
-- the caller's token covers (NULL: every queue).

-- name: exception_raise
-- :decision_id is for the apply_decision workflow only (NULL otherwise).
SELECT x.exception_id, x.created, hint.notification
FROM casework_raise_exception(:workflow, :source_record_id, :reason_code, :detail, :blocked_step,
                              :completed_steps, :evidence, :context, :consequence, :actor,
                              :actor_role, :decision_id) AS x,
     casework_hint(kind => 'exception', queue => x.queue, item_id => x.item_id,
                   workflow => :workflow::text, exception_id => x.exception_id)
         AS hint (notification);

-- name: exception_attach_evidence
-- Adds references to the record; the state does not change.
-- Fence: needs_review or awaiting_approval, the reason allows attach_evidence, and the
-- caller's live lease (:lease_token) on the item, in :queue_scope.
WITH target AS (
    SELECT e.id, e.workflow, e.state, e.version, e.item_id, i.queue, i.lease_started_at
    FROM exceptions AS e
    JOIN review_items AS i ON i.id = e.item_id
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    WHERE e.id = :exception_id
      AND e.state IN ('needs_review', 'awaiting_approval')
      AND 'attach_evidence' = ANY (r.allowed_actions)
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF e, i
),
changed AS (
    UPDATE exceptions AS e
    SET evidence = e.evidence || :evidence::text[], updated_at = now()
    FROM target AS t
    WHERE e.id = t.id
),
logged AS (
    INSERT INTO exception_events (authentication_id, exception_id, workflow, kind, actor,
                                  actor_role, from_state,
                                  to_state, version, evidence, detail, lease_started_at)
    SELECT :authentication_id, t.id, t.workflow, 'evidence_attached', :actor, :actor_role, t.state, t.state, t.version,
           :evidence, :note, t.lease_started_at
    FROM target AS t
)
SELECT t.id, hint.notification
FROM target AS t,
     casework_hint(kind => 'exception', queue => t.queue, item_id => t.item_id,
                   workflow => t.workflow, exception_id => t.id) AS hint (notification);

-- name: exception_submit_correction
-- A correction for the exception's own reason, with evidence, becomes the record's next
-- version (numbered per source record) and goes to the workflow's approval queue.
-- Fence: needs_review, the reason allows submit_correction, :reason_code is the record's,
-- evidence given, stale steps among the completed ones, and the caller's live lease
-- (:lease_token) on the item, in :queue_scope.
WITH target AS (
    SELECT e.id, e.workflow, e.source_record_id, e.state, e.item_id, i.queue,
           i.lease_started_at, w.approval_queue
    FROM exceptions AS e
    JOIN review_items AS i ON i.id = e.item_id
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    JOIN workflows AS w ON w.name = e.workflow
    WHERE e.id = :exception_id
      AND e.state = 'needs_review'
      AND 'submit_correction' = ANY (r.allowed_actions)
      AND e.reason_code = :reason_code
      AND cardinality(:evidence::text[]) > 0
      AND :stale_steps::text[] <@ e.completed_steps
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF e, i
),
correction AS (
    INSERT INTO exception_corrections (workflow, source_record_id, version, exception_id,
                                       reason_code, changes, stale_steps, evidence, note,
                                       corrected_by)
    SELECT t.workflow, t.source_record_id,
           1 + coalesce((SELECT max(c.version) FROM exception_corrections AS c
                         WHERE c.workflow = t.workflow
                           AND c.source_record_id = t.source_record_id), 0),
           t.id, :reason_code, :changes, :stale_steps, :evidence, :note, :actor
    FROM target AS t
    RETURNING exception_id, version
),
changed AS (
    UPDATE exceptions AS e
    SET state = 'awaiting_approval', version = c.version, stale_steps = :stale_steps,
        evidence = e.evidence || :evidence::text[], last_rejection = NULL, updated_at = now()
    FROM correction AS c
    WHERE e.id = c.exception_id
),
moved AS (
    UPDATE review_items AS i
    SET queue = t.approval_queue, lease_owner = NULL, lease_token = NULL,
        lease_expires_at = NULL, abandon_count = 0, updated_at = now()
    FROM target AS t
    WHERE i.id = t.item_id
),
logged AS (
    INSERT INTO exception_events (authentication_id, exception_id, workflow, kind, actor,
                                  actor_role, from_state,
                                  to_state, version, evidence, detail, data, lease_started_at)
    SELECT :authentication_id, t.id, t.workflow, 'correction_submitted', :actor, :actor_role, t.state, 'awaiting_approval',
           c.version, :evidence, :note,
           jsonb_build_object('changes', :changes::jsonb, 'staleSteps', :stale_steps::text[]),
           t.lease_started_at
    FROM target AS t JOIN correction AS c ON c.exception_id = t.id
)
SELECT t.id, c.version, hint.notification
FROM target AS t
JOIN correction AS c ON c.exception_id = t.id,
     casework_hint(kind => 'exception', queue => t.approval_queue, from_queue => t.queue,
                   item_id => t.item_id, workflow => t.workflow, exception_id => t.id)
         AS hint (notification);

-- name: exception_approve_correction
-- Four-eyes: the approver is not whoever submitted this version. The exception then waits
-- for a redrive; its item leaves every queue.
-- Fence: awaiting_approval at :version, the reason allows approve_correction, the version
-- corrected by someone else, and the caller's live lease (:lease_token), in :queue_scope;
-- a sign-in as recent (:auth_time) and of the acr (:acr) the workflow's step-up setting
-- asks for, if it has one (migration 0023; a workflow without it pays two IS NULL tests).
WITH target AS (
    SELECT e.id, e.workflow, e.state, e.version, e.item_id, i.queue, i.lease_started_at
    FROM exceptions AS e
    JOIN review_items AS i ON i.id = e.item_id
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    JOIN workflows AS w ON w.name = e.workflow
    WHERE e.id = :exception_id
      AND casework_recent_enough(w.require_auth_within_seconds, w.require_acr,
                                 :auth_time, :acr)
      AND e.state = 'awaiting_approval'
      AND 'approve_correction' = ANY (r.allowed_actions)
      AND e.version = :version
      AND EXISTS (SELECT 1 FROM exception_corrections AS c
                  WHERE c.exception_id = e.id AND c.version = e.version
                    AND c.corrected_by <> :actor)
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF e, i
),
changed AS (
    UPDATE exceptions AS e
    SET state = 'redrive_pending', updated_at = now()
    FROM target AS t
    WHERE e.id = t.id
),
parked AS (
    UPDATE review_items AS i
    SET state = 'parked', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.item_id
),
logged AS (
    INSERT INTO exception_events (authentication_id, exception_id, workflow, kind, actor,
                                  actor_role, from_state,
                                  to_state, version, detail, lease_started_at)
    SELECT :authentication_id, t.id, t.workflow, 'correction_approved', :actor, :actor_role, t.state, 'redrive_pending',
           t.version, :note, t.lease_started_at
    FROM target AS t
)
SELECT t.id, hint.notification
FROM target AS t,
     casework_hint(kind => 'exception', queue => t.queue, item_id => t.item_id,
                   workflow => t.workflow, exception_id => t.id) AS hint (notification);

-- name: exception_approval_step_up_diagnose
-- Read-only: did exception_approve_correction write nothing because the workflow's step-up
-- setting refused the caller's sign-in? Runs only on that failure path.
SELECT w.require_auth_within_seconds, w.require_acr,
       casework_recent_enough(w.require_auth_within_seconds, w.require_acr,
                              :auth_time, :acr)
           AS recent_enough
FROM exceptions AS e
JOIN workflows AS w ON w.name = e.workflow
WHERE e.id = :exception_id;

-- name: exception_reject_correction
-- Back to the owner's queue, with the reason for the rejection kept on the record.
-- Fence: awaiting_approval, the reason allows reject_correction, and the caller's live lease
-- (:lease_token) on the item, in :queue_scope.
WITH target AS (
    SELECT e.id, e.workflow, e.state, e.version, e.item_id, e.owner_role, i.queue,
           i.lease_started_at
    FROM exceptions AS e
    JOIN review_items AS i ON i.id = e.item_id
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    WHERE e.id = :exception_id
      AND e.state = 'awaiting_approval'
      AND 'reject_correction' = ANY (r.allowed_actions)
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF e, i
),
changed AS (
    UPDATE exceptions AS e
    SET state = 'needs_review', last_rejection = :reason, updated_at = now()
    FROM target AS t
    WHERE e.id = t.id
),
moved AS (
    UPDATE review_items AS i
    SET queue = t.owner_role, lease_owner = NULL, lease_token = NULL,
        lease_expires_at = NULL, abandon_count = 0, updated_at = now()
    FROM target AS t
    WHERE i.id = t.item_id
),
logged AS (
    INSERT INTO exception_events (authentication_id, exception_id, workflow, kind, actor,
                                  actor_role, from_state,
                                  to_state, version, detail, lease_started_at)
    SELECT :authentication_id, t.id, t.workflow, 'correction_rejected', :actor, :actor_role, t.state, 'needs_review',
           t.version, :reason, t.lease_started_at
    FROM target AS t
)
SELECT t.id, hint.notification
FROM target AS t,
     casework_hint(kind => 'exception', queue => t.owner_role, from_queue => t.queue,
                   item_id => t.item_id, workflow => t.workflow, exception_id => t.id)
         AS hint (notification);

-- name: exception_close
-- Closing without a correction: rejected, duplicate or obsolete.
-- Fence: needs_review, the reason allows close_exception, a known :closure, and the
-- caller's live lease (:lease_token) on the item, in :queue_scope.
WITH target AS (
    SELECT e.id, e.workflow, e.state, e.version, e.item_id, i.queue, i.lease_started_at
    FROM exceptions AS e
    JOIN review_items AS i ON i.id = e.item_id
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    WHERE e.id = :exception_id
      AND e.state = 'needs_review'
      AND 'close_exception' = ANY (r.allowed_actions)
      AND :closure IN ('rejected', 'duplicate', 'obsolete')
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
    FOR UPDATE OF e, i
),
changed AS (
    UPDATE exceptions AS e
    SET state = 'closed', closure = :closure, closed_at = now(), updated_at = now()
    FROM target AS t
    WHERE e.id = t.id
),
parked AS (
    UPDATE review_items AS i
    SET state = 'parked', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.item_id
),
logged AS (
    INSERT INTO exception_events (authentication_id, exception_id, workflow, kind, actor,
                                  actor_role, from_state,
                                  to_state, version, detail, data, lease_started_at)
    SELECT :authentication_id, t.id, t.workflow, 'closed', :actor, :actor_role, t.state, 'closed', t.version, :note,
           jsonb_build_object('closure', :closure::text), t.lease_started_at
    FROM target AS t
)
SELECT t.id, hint.notification
FROM target AS t,
     casework_hint(kind => 'exception', queue => t.queue, item_id => t.item_id,
                   workflow => t.workflow, exception_id => t.id) AS hint (notification);

-- name: exception_request_redrive
-- Issues the redrive of the approved version, once: the key is unique, so a repeat (or a
-- concurrent request) inserts nothing and learns the key (`queued` false). No lease: no one
-- holds the exception once it is approved; the version is the fence. For a workflow that
-- Casework redrives itself (apply_decision), the failed decision goes back on the work list
-- (`nothing_to_reapply` if it is not failed: the caller answers the redrive at once).
-- Fence: redrive_pending at :version, the reason allows request_redrive, and the owner or
-- approval queue in :queue_scope.
WITH target AS (
    SELECT e.id, e.workflow, e.source_record_id, e.state, e.version, e.item_id,
           e.decision_id, e.completed_steps, e.stale_steps, e.owner_role, w.redrive_via
    FROM exceptions AS e
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    JOIN workflows AS w ON w.name = e.workflow
    WHERE e.id = :exception_id
      AND e.state = 'redrive_pending'
      AND e.version = :version
      AND 'request_redrive' = ANY (r.allowed_actions)
      AND (:queue_scope::text[] IS NULL OR e.owner_role = ANY (:queue_scope)
           OR w.approval_queue = ANY (:queue_scope))
    FOR UPDATE OF e
),
queued AS (
    INSERT INTO exception_redrives (key, exception_id, workflow, source_record_id, version,
                                    resume_after, stale_steps, requested_by, delivery_state,
                                    next_delivery_at)
    SELECT t.workflow || ':' || t.source_record_id || ':v' || t.version, t.id, t.workflow,
           t.source_record_id, t.version,
           exception_resume_after(t.completed_steps, t.stale_steps), t.stale_steps, :actor,
           -- Delivered by Casework: POSTed by the apply worker (webhook) or published by
           -- `casework intake` (broker).
           CASE WHEN t.redrive_via IN ('webhook', 'broker') THEN 'pending' END,
           CASE WHEN t.redrive_via IN ('webhook', 'broker') THEN now() END
    FROM target AS t
    ON CONFLICT DO NOTHING
    RETURNING key, exception_id, resume_after
),
reapplied AS (
    UPDATE decision_applications AS a
    SET state = 'pending', next_attempt_at = now(), locked_until = NULL, locked_by = NULL,
        redrive_key = q.key, attempts_before_redrive = a.attempts, updated_at = now()
    FROM queued AS q
    JOIN target AS t ON t.id = q.exception_id
    WHERE t.redrive_via = 'casework' AND a.decision_id = t.decision_id AND a.state = 'failed'
    RETURNING a.decision_id
),
logged AS (
    INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role, from_state,
                                  to_state, version, data)
    SELECT t.id, t.workflow, 'redrive_requested', :actor, :actor_role, t.state, t.state, t.version,
           jsonb_build_object('redriveKey', q.key, 'resumeAfter', q.resume_after,
                              'staleSteps', t.stale_steps)
    FROM target AS t JOIN queued AS q ON q.exception_id = t.id
)
SELECT t.id, t.workflow || ':' || t.source_record_id || ':v' || t.version AS key,
       q.key IS NOT NULL AS queued,
       -- Casework's own redrive with no failed decision to re-apply: it was carried out
       -- meanwhile (reopened after success, or a late attempt succeeded).
       q.key IS NOT NULL AND t.redrive_via = 'casework'
           AND NOT EXISTS (SELECT 1 FROM reapplied) AS nothing_to_reapply,
       hint.notification
FROM target AS t
LEFT JOIN queued AS q ON q.exception_id = t.id
LEFT JOIN LATERAL (
    SELECT casework_hint(kind => 'exception', queue => t.owner_role, item_id => t.item_id,
                         workflow => t.workflow, exception_id => t.id) AS notification
    WHERE q.key IS NOT NULL
) AS hint ON true;

-- name: exception_report_redrive_result
-- The owning system's durable result for the redrive it was given. Success closes the
-- exception as corrected; failure returns it to its owner with one more attempt counted
-- and a fresh due time.
-- Fence: the redrive (:redrive_key) is unanswered and current, the exception is
-- redrive_pending, the catalogue allows it (Casework's own answers aside), the owner in
-- :queue_scope, and the answer comes from whom the workflow's route allows.
WITH target AS (
    SELECT e.id, e.workflow, e.state, e.version, e.item_id, e.owner_role, x.key, i.queue,
           exception_due_seconds(r, e.consequence) AS due_seconds
    FROM exception_redrives AS x
    JOIN exceptions AS e ON e.id = x.exception_id
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    JOIN review_items AS i ON i.id = e.item_id
    JOIN workflows AS w ON w.name = e.workflow
    WHERE x.key = :redrive_key
      AND x.result IS NULL
      AND e.state = 'redrive_pending'
      AND e.version = x.version
      -- The catalogue governs people; Casework's own answers are never refused by it.
      AND ('report_redrive_result' = ANY (r.allowed_actions) OR :actor_role = 'system')
      AND (:queue_scope::text[] IS NULL OR e.owner_role = ANY (:queue_scope))
      -- Who may answer: the owning system; Casework for the redrives it carries out, and
      -- to say that a redrive could not be delivered by webhook or broker.
      AND CASE w.redrive_via
              WHEN 'casework' THEN :actor_role = 'system'
              WHEN 'webhook' THEN :actor_role <> 'system' OR NOT :succeeded::boolean
              WHEN 'broker' THEN :actor_role <> 'system' OR NOT :succeeded::boolean
              ELSE :actor_role <> 'system'
          END
    FOR UPDATE OF x, e
),
reported AS (
    UPDATE exception_redrives AS x
    SET result = CASE WHEN :succeeded::boolean THEN 'succeeded' ELSE 'failed' END,
        result_detail = :detail, reported_by = :actor, reported_at = now(),
        -- Answered: a delivery not yet made is no longer wanted.
        delivery_state = CASE WHEN x.delivery_state = 'pending' THEN NULL
                              ELSE x.delivery_state END,
        next_delivery_at = NULL, delivery_locked_until = NULL
    FROM target AS t
    WHERE x.key = t.key
),
changed AS (
    UPDATE exceptions AS e
    SET state = CASE WHEN :succeeded::boolean THEN 'closed' ELSE 'needs_review' END,
        closure = CASE WHEN :succeeded::boolean THEN 'corrected' END,
        closed_at = CASE WHEN :succeeded::boolean THEN now() END,
        attempts = e.attempts + (NOT :succeeded::boolean)::int,
        due_at = CASE WHEN :succeeded::boolean THEN e.due_at
                      ELSE now() + make_interval(secs => t.due_seconds) END,
        updated_at = now()
    FROM target AS t
    WHERE e.id = t.id
),
moved AS (
    UPDATE review_items AS i
    SET state = CASE WHEN :succeeded::boolean THEN 'parked' ELSE 'pending' END,
        queue = t.owner_role, updated_at = now()
    FROM target AS t
    WHERE i.id = t.item_id
),
logged AS (
    INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role, from_state,
                                  to_state, version, detail, data)
    SELECT t.id, t.workflow,
           CASE WHEN :succeeded::boolean THEN 'redrive_succeeded' ELSE 'redrive_failed' END, :actor, :actor_role,
           t.state, CASE WHEN :succeeded::boolean THEN 'closed' ELSE 'needs_review' END, t.version,
           :detail, jsonb_build_object('redriveKey', t.key)
    FROM target AS t
)
SELECT t.id, hint.notification
FROM target AS t,
     casework_hint(kind => 'exception', queue => t.owner_role, from_queue => t.queue,
                   item_id => t.item_id, workflow => t.workflow, exception_id => t.id)
         AS hint (notification);

-- name: exception_reopen
-- A closed exception goes back to its reason's owner with a fresh due time and a clean
-- slate for the next correction; the history stays and the reopen is counted.
-- Fence: closed (so of two reopens, one wins), the reason allows reopen_exception, and the
-- owner or approval queue in :queue_scope.
WITH target AS (
    SELECT e.id, e.workflow, e.state, e.version, e.item_id, e.closure, i.queue,
           r.owner_role, exception_due_seconds(r, e.consequence) AS due_seconds
    FROM exceptions AS e
    JOIN review_items AS i ON i.id = e.item_id
    JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
    JOIN workflows AS w ON w.name = e.workflow
    WHERE e.id = :exception_id
      AND e.state = 'closed'
      AND 'reopen_exception' = ANY (r.allowed_actions)
      AND (:queue_scope::text[] IS NULL OR r.owner_role = ANY (:queue_scope)
           OR w.approval_queue = ANY (:queue_scope))
    FOR UPDATE OF e, i
),
changed AS (
    UPDATE exceptions AS e
    SET state = 'needs_review', closure = NULL, closed_at = NULL, last_rejection = NULL,
        stale_steps = '{}', reopen_count = e.reopen_count + 1, owner_role = t.owner_role,
        escalated_at = NULL,
        due_at = now() + make_interval(secs => t.due_seconds), updated_at = now()
    FROM target AS t
    WHERE e.id = t.id
),
moved AS (
    UPDATE review_items AS i
    SET state = 'pending', queue = t.owner_role, abandon_count = 0, updated_at = now()
    FROM target AS t
    WHERE i.id = t.item_id
),
logged AS (
    INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role, from_state,
                                  to_state, version, detail, data)
    SELECT t.id, t.workflow, 'reopened', :actor, :actor_role, t.state, 'needs_review', t.version, :reason,
           jsonb_build_object('closure', t.closure)
    FROM target AS t
)
SELECT t.id, hint.notification
FROM target AS t,
     casework_hint(kind => 'exception', queue => t.owner_role, from_queue => t.queue,
                   item_id => t.item_id, workflow => t.workflow, exception_id => t.id)
         AS hint (notification);

-- name: exceptions_escalate_overdue
-- Runs from the claim path (when item_claim_next finds nothing, or says overdue exceptions
-- are waiting), so no cron job is needed: an exception waiting for review past its due
-- time moves to its escalation owner's queue, once. One under a live
-- lease stays with its holder until the lease ends. SKIP LOCKED: a concurrent claim or
-- action on the same exception is never waited for; the next claim looks again.
WITH overdue AS (
    SELECT e.id, e.workflow, e.state, e.version, e.item_id, e.owner_role, e.escalation_role,
           i.queue AS item_queue, i.lease_token, i.lease_owner, i.lease_started_at,
           i.lease_expires_at
    FROM exceptions AS e
    JOIN review_items AS i ON i.id = e.item_id
    WHERE (e.owner_role = :queue OR e.escalation_role = :queue)
      AND e.state = 'needs_review'
      AND e.escalated_at IS NULL
      AND e.due_at <= now()
      AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
    -- A bound on one claim's work; the next claim moves the rest.
    LIMIT 100
    FOR UPDATE OF e, i SKIP LOCKED
),
-- The ids as arrays: the planner cannot know how few rows `overdue` holds, and would
-- otherwise join it to a full scan of exceptions and of review_items.
changed AS (
    UPDATE exceptions AS e
    SET owner_role = o.escalation_role, escalated_at = now(), updated_at = now()
    FROM overdue AS o
    WHERE e.id = o.id AND e.id = ANY (ARRAY(SELECT d.id FROM overdue AS d))
),
moved AS (
    UPDATE review_items AS i
    SET queue = o.escalation_role, lease_owner = NULL, lease_token = NULL,
        lease_expires_at = NULL, abandon_count = 0,
        escalation_count = i.escalation_count + 1, updated_at = now()
    FROM overdue AS o
    WHERE i.id = o.item_id AND i.id = ANY (ARRAY(SELECT d.item_id FROM overdue AS d))
),
-- A lease that had run out on the item ends here: written to the item's timeline as the
-- claim that notices a lapse writes it (kind `lapsed`, when it ran out, with its owner and
-- the role that holds leases in the item's queue).
lapse AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                             lease_started_at, at)
    SELECT o.item_id, o.item_queue, 'lapsed', o.lease_owner,
           (SELECT q.holder_role FROM queues AS q WHERE q.name = o.item_queue),
           o.lease_token, o.lease_started_at, o.lease_expires_at
    FROM overdue AS o
    WHERE o.lease_token IS NOT NULL
),
logged AS (
    INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role, from_state,
                                  to_state, version, data)
    SELECT o.id, o.workflow, 'escalated', 'casework', 'system', o.state, o.state, o.version,
           jsonb_build_object('fromOwnerRole', o.owner_role, 'toOwnerRole', o.escalation_role)
    FROM overdue AS o
)
SELECT n.escalated, hint.notification
FROM (SELECT count(*) AS escalated,
             (SELECT array_agg(DISTINCT q)
              FROM overdue AS d, unnest(ARRAY[d.owner_role, d.escalation_role]) AS q) AS queues,
             (SELECT array_agg(DISTINCT d.workflow) FROM overdue AS d) AS workflows
      FROM overdue) AS n
LEFT JOIN LATERAL (
    SELECT casework_hint(kind => 'exception', queue => :queue::text,
                         other_queues => n.queues, workflows => n.workflows) AS notification
    WHERE n.escalated > 0
) AS hint ON true;
