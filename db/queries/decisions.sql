-- name: decision_submit
-- Records a verdict made under a lease, in one statement. Fence: every condition of it
-- sits in the WHERE clause of the UPDATE `moved`: a live lease of the caller with this token on a
-- pending item, the evidence the reviewer saw, and a reason code the queue's catalogue
-- allows for this verdict (with a note that says something, if the code requires one), in
-- a queue the caller's token covers, on an item that is not waiting for a second review
-- (that one is confirmed or overridden: decision_confirm, decision_override). If any
-- fails, nothing is written and no row comes back. The fence is the UPDATE's own
-- condition, not a SELECT ... FOR UPDATE before it: an UPDATE that meets a row another
-- transaction changed waits, and rechecks the whole condition on the row as it now is (as
-- FOR UPDATE did), without a separate row lock to write first.
-- The decision goes on the apply work list (decision_applications) in the same statement,
-- unless it needs a second review.
-- An escalation returns the item to `pending` in the escalation queue, priority boosted.
-- Second review (migration 0020): a verdict the queue's setting names, at or above its
-- minimum priority (casework_needs_second_review), is recorded as provisional and not
-- enlisted; the item returns to `pending` in the second-review queue, unleased, naming the
-- decider as the one person who may not claim it (`barred_claimer`) and the decision as
-- the one it waits on (`awaiting_decision_id`, whose id is taken from the sequence here so
-- that the item and the decision can name each other in one statement). The hint is
-- `second_review`, routed to both queues. A queue without second review pays one
-- comparison against its empty list.
-- The row keeps when its lease began, the item's lease count and when the item was
-- enqueued, for the queue's measures, and how the reviewer authenticated
-- (:authentication_id, migration 0023).
-- Step-up (migrations 0023, 0025): a queue with require_auth_within_seconds (or require_acr)
-- takes decisions only from a login at most that old (:auth_time; NULL, as for a CLI
-- token, never passes) with that acr; a queue without them pays two IS NULL tests.
-- QA sampling (migration 0021): an approve or reject in a queue with a qaSampleRate whose
-- draw (casework_qa_draw of the decision's id) falls below the rate is copied to the QA
-- queue (casework_qa_copy, called in the hint's arguments), and the hint names the QA queue
-- among its queues (`qs`) so its backlog subscribers re-read. The item's timeline reads
-- QA_SAMPLED from the copy: no timeline row is written here. The decision goes on the
-- apply work list all the same: QA never holds up the effect. In a queue without a rate
-- the step costs a comparison on the row `moved` returned: the copy's INSERT is the
-- function's (migration 0037), not a CTE set up on every decision.
WITH moved AS (
    UPDATE review_items AS i
    SET state            = CASE WHEN :verdict = 'escalate'
                                  OR casework_needs_second_review(q, :verdict, i.priority)
                                THEN 'pending' ELSE 'decided' END,
        decided_at       = CASE WHEN :verdict = 'escalate'
                                  OR casework_needs_second_review(q, :verdict, i.priority)
                                THEN NULL ELSE now() END,
        queue            = CASE WHEN :verdict = 'escalate' THEN coalesce(q.escalation_queue, q.name)
                                WHEN casework_needs_second_review(q, :verdict, i.priority)
                                THEN q.second_review_queue
                                ELSE i.queue END,
        priority         = CASE WHEN :verdict = 'escalate' THEN i.priority + q.escalation_priority_boost
                                ELSE i.priority END,
        abandon_count    = CASE WHEN :verdict = 'escalate'
                                  OR casework_needs_second_review(q, :verdict, i.priority)
                                THEN 0 ELSE i.abandon_count END,
        escalation_count = i.escalation_count + (:verdict = 'escalate')::int,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
        -- Decided, or moved on to another queue: an assignment has done its work.
        assigned_to = NULL, assigned_until = NULL,
        barred_claimer   = CASE WHEN casework_needs_second_review(q, :verdict, i.priority)
                                THEN :actor ELSE i.barred_claimer END,
        awaiting_decision_id = CASE WHEN casework_needs_second_review(q, :verdict, i.priority)
                                    THEN nextval('review_decisions_id_seq') END,
        updated_at = now()
    FROM queues AS q
    WHERE q.name = i.queue
      AND i.id = :item_id
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND i.evidence_hash = :evidence_hash
      AND i.kind = 'review'
      AND i.awaiting_decision_id IS NULL
      AND i.queue = ANY (:queue_scope::text[])
      AND EXISTS (SELECT 1 FROM reason_codes AS r
                  WHERE r.queue = i.queue AND r.code = :reason_code AND :verdict = ANY (r.verdicts)
                    AND (NOT r.requires_note OR casework_has_text(:note)))
      AND casework_recent_enough(q.require_auth_within_seconds, q.require_acr,
                                 :auth_time, :acr)
    -- `q` is the row joined to the item as it was: q.name is the queue the item left. The
    -- decision does not change the lease's start, the lease count or the enqueue time.
    -- The payload, priority and QA settings are for the QA copy (the item as decided).
    RETURNING i.id, q.name AS decided_in, i.queue AS now_in, i.lease_started_at, i.lease_count,
              i.created_at, i.awaiting_decision_id, i.payload, i.priority, q.qa_sample_rate,
              q.qa_queue
),
recorded AS (
    -- The id is the identity's own next value, or the one the item already names.
    INSERT INTO review_decisions
        (id, item_id, queue, verdict, outcome, reason_code, note, reviewer, reviewer_role,
         evidence_hash, lease_token, lease_started_at, lease_count, item_created_at,
         traceparent, provisional, authentication_id)
    OVERRIDING SYSTEM VALUE
    SELECT coalesce(m.awaiting_decision_id, nextval('review_decisions_id_seq')),
           m.id, m.decided_in, :verdict, :verdict, :reason_code, :note, :actor, :actor_role,
           :evidence_hash, :lease_token, m.lease_started_at, m.lease_count, m.created_at,
           :traceparent, m.awaiting_decision_id IS NOT NULL, :authentication_id
    FROM moved AS m
    RETURNING *
),
-- On the apply work list in the same statement (migration 0017), if it is effective now.
enlisted AS (
    INSERT INTO decision_applications (decision_id, queue, decided_at)
    SELECT r.id, r.queue, r.decided_at FROM recorded AS r WHERE NOT r.provisional
)
SELECT r.*, hint.notification
FROM recorded AS r
JOIN moved AS m ON m.id = r.item_id,
     casework_hint(
         kind => CASE WHEN :verdict = 'escalate' THEN 'escalated'
                      WHEN r.provisional THEN 'second_review'
                      ELSE 'decided' END,
         queue => m.now_in, item_id => r.item_id, decision_id => r.id, from_queue => r.queue,
         -- QA sampling: the draw, and the copy only for a decision drawn (migration 0037).
         other_queues => CASE WHEN m.qa_sample_rate > 0
                                   AND m.qa_queue IS NOT NULL
                                   AND r.verdict IN ('approve', 'reject')
                                   AND NOT r.provisional
                                   AND casework_qa_draw(r.id) < m.qa_sample_rate
                              THEN casework_qa_copy(
                                       decision_id => r.id, qa_queue => m.qa_queue,
                                       priority => m.priority, payload => m.payload,
                                       evidence_hash => r.evidence_hash::text,
                                       decider => r.reviewer)
                         END)
         AS hint (notification);

-- name: decision_submit_diagnose
-- Read-only: why did decision_submit write nothing? Runs only on that failure path.
-- `prior_decision_id` is the verdict already recorded on this item under this very lease:
-- a console whose answer was lost retries with the same token, and is answered with it.
-- `note_missing`: the reason code requires a note and this one says nothing.
SELECT i.id, i.queue, i.state, i.kind, i.lease_token, i.lease_owner,
       i.lease_expires_at > now() AS lease_live,
       i.evidence_hash, i.awaiting_decision_id,
       r.code IS NOT NULL AS reason_allowed,
       coalesce(r.requires_note AND NOT casework_has_text(:note), false) AS note_missing,
       d.id AS prior_decision_id,
       q.require_auth_within_seconds, q.require_acr,
       casework_recent_enough(q.require_auth_within_seconds, q.require_acr,
                              :auth_time, :acr)
           AS recent_enough
FROM review_items AS i
JOIN queues AS q ON q.name = i.queue
LEFT JOIN reason_codes AS r
    ON r.queue = i.queue AND r.code = :reason_code AND :verdict = ANY (r.verdicts)
LEFT JOIN review_decisions AS d ON d.lease_token = :lease_token AND d.item_id = i.id
WHERE i.id = :item_id;

-- name: decision_overturn
-- Writes an overturn that supersedes :decision_id.
-- Fence: :decision_id is the effective decision of its item (not superseded already, not
-- an escalation, and not a provisional decision still waiting for its second review), and
-- the catalogue allows :reason_code for the reversed outcome (with
-- a note that says something, if the code requires one).
-- The UNIQUE constraint on `supersedes` settles two concurrent overturns of one decision.
WITH target AS (
    SELECT d.id, d.item_id, d.queue, d.evidence_hash, d.decided_at,
           CASE d.outcome WHEN 'approve' THEN 'reject' ELSE 'approve' END AS outcome
    FROM review_decisions AS d
    JOIN queues AS q ON q.name = d.queue
    WHERE d.id = :decision_id
      AND d.outcome IN ('approve', 'reject')
      AND casework_recent_enough(q.require_auth_within_seconds, q.require_acr,
                                 :auth_time, :acr)
      AND NOT EXISTS (SELECT 1 FROM review_decisions AS s WHERE s.supersedes = d.id)
      AND (NOT d.provisional
           OR EXISTS (SELECT 1 FROM decision_confirmations AS c WHERE c.decision_id = d.id))
),
recorded AS (
    INSERT INTO review_decisions
        (item_id, queue, verdict, outcome, reason_code, note, reviewer, reviewer_role,
         evidence_hash, supersedes, supersedes_decided_at, traceparent, authentication_id)
    -- :note is text, as casework_has_text reads it below; the column's domain (note_text,
    -- migration 0018) checks it on the way in. Without the cast the parameter would take
    -- the domain from this list first and then conflict with the function's text.
    SELECT t.item_id, t.queue, 'overturn', t.outcome, :reason_code, :note::text, :actor,
           :actor_role, t.evidence_hash, t.id, t.decided_at, :traceparent, :authentication_id
    FROM target AS t
    WHERE EXISTS (SELECT 1 FROM reason_codes AS r
                  WHERE r.queue = t.queue AND r.code = :reason_code AND t.outcome = ANY (r.verdicts)
                    AND (NOT r.requires_note OR casework_has_text(:note)))
    RETURNING *
),
-- An overturn is applied too: on the work list in the same statement (migration 0017).
enlisted AS (
    INSERT INTO decision_applications (decision_id, queue, decided_at)
    SELECT r.id, r.queue, r.decided_at FROM recorded AS r
)
SELECT r.*, hint.notification
FROM recorded AS r,
     casework_hint(kind => 'overturned', queue => r.queue, item_id => r.item_id,
                   decision_id => r.id) AS hint (notification);

-- name: decision_overturn_diagnose
-- Read-only: why did decision_overturn write nothing? Runs only on that failure path.
-- `superseded_by`: a concurrent overturn won; `awaits_review`: a provisional decision
-- nobody has confirmed (migration 0020); `reason_allowed`: the catalogue allows the
-- code for the reversed outcome; `note_missing`: it requires a note and this one says nothing.
SELECT s.id AS superseded_by,
       d.provisional AND NOT EXISTS (SELECT 1 FROM decision_confirmations AS c
                                     WHERE c.decision_id = d.id) AS awaits_review,
       r.code IS NOT NULL AS reason_allowed,
       coalesce(r.requires_note AND NOT casework_has_text(:note), false) AS note_missing,
       q.require_auth_within_seconds, q.require_acr,
       casework_recent_enough(q.require_auth_within_seconds, q.require_acr,
                              :auth_time, :acr)
           AS recent_enough
FROM review_decisions AS d
JOIN queues AS q ON q.name = d.queue
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
LEFT JOIN reason_codes AS r
    ON r.queue = d.queue AND r.code = :reason_code
   AND (CASE d.outcome WHEN 'approve' THEN 'reject' ELSE 'approve' END) = ANY (r.verdicts)
WHERE d.id = :decision_id;

-- name: decision_confirm
-- A second reviewer confirms the provisional decision an item waits on (migration 0020).
-- Fence: every condition sits in the WHERE clause of the UPDATE `moved`: a live lease of
-- the caller with this token on a pending review item, in a queue the caller's token
-- covers; the item waits on a decision (`awaiting_decision_id`) that the caller did not
-- make (four-eyes: the first decider is refused even holding a lease); and :evidence_hash
-- is both the item's evidence now and the evidence the decision was made on (pinned: if
-- the evidence changed since, the decision cannot be confirmed). If any fails, nothing is
-- written and no row comes back.
-- In the same statement: the item is decided and leaves no lease; the confirmation row
-- (append-only) records who, under which lease, on which evidence; the decision goes on
-- the apply work list, so the worker carries it out from now on; one hint, `decided`, in
-- the item's queue and the decision's (other_queues: decisionEvents of the decision's
-- queue delivers it now). The timeline reads the confirmation from its row.
WITH moved AS (
    UPDATE review_items AS i
    SET state = 'decided', decided_at = now(),
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
        assigned_to = NULL, assigned_until = NULL,
        awaiting_decision_id = NULL,
        updated_at = now()
    FROM review_decisions AS d, queues AS q
    WHERE d.id = i.awaiting_decision_id
      AND q.name = d.queue
      AND i.id = :item_id
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND i.kind = 'review'
      AND i.queue = ANY (:queue_scope::text[])
      AND d.reviewer <> :actor
      AND casework_recent_enough(q.require_auth_within_seconds, q.require_acr,
                                 :auth_time, :acr)
      AND i.evidence_hash = :evidence_hash
      AND d.evidence_hash = :evidence_hash
    -- The decider, payload, priority and the decision queue's QA settings are for the QA
    -- copy (the item as decided).
    RETURNING i.id, i.queue AS review_queue, d.id AS decision_id, d.queue,
              i.lease_started_at, d.reviewer AS decided_by, d.evidence_hash, i.payload,
              i.priority, q.qa_sample_rate, q.qa_queue
),
confirmed AS (
    INSERT INTO decision_confirmations
        (decision_id, item_id, queue, review_queue, confirmed_by, confirmed_by_role,
         evidence_hash, lease_token, lease_started_at, traceparent, authentication_id)
    SELECT m.decision_id, m.id, m.queue, m.review_queue, :actor, :actor_role,
           :evidence_hash, :lease_token, m.lease_started_at, :traceparent, :authentication_id
    FROM moved AS m
    RETURNING *
),
-- Effective now: on the apply work list, decided (for the lag measures) when confirmed.
enlisted AS (
    INSERT INTO decision_applications (decision_id, queue, decided_at)
    SELECT c.decision_id, c.queue, c.confirmed_at FROM confirmed AS c
)
-- QA sampling (migration 0021), as in decision_submit: this statement makes the decision
-- effective, so the draw of its id decides here whether it is copied to the QA queue of
-- the decision's queue, barred to its decider. A provisional decision is always an approve
-- or a reject.
SELECT d.*, c.confirmed_by, c.confirmed_at, hint.notification
FROM confirmed AS c
JOIN moved AS m ON m.decision_id = c.decision_id
JOIN review_decisions AS d ON d.id = c.decision_id,
     casework_hint(kind => 'decided', queue => c.review_queue, item_id => c.item_id,
                   decision_id => c.decision_id,
                   other_queues => ARRAY[c.queue]::text[]
                                   || CASE WHEN m.qa_sample_rate > 0
                                                AND m.qa_queue IS NOT NULL
                                                AND casework_qa_draw(m.decision_id)
                                                    < m.qa_sample_rate
                                           THEN casework_qa_copy(
                                                    decision_id => m.decision_id,
                                                    qa_queue => m.qa_queue,
                                                    priority => m.priority,
                                                    payload => m.payload,
                                                    evidence_hash => m.evidence_hash::text,
                                                    decider => m.decided_by)
                                      END)
         AS hint (notification);

-- name: decision_override
-- A second reviewer overrides the provisional decision an item waits on with a decision of
-- their own (migration 0020), which supersedes it: effective at once, while the provisional
-- one is never applied.
-- Fence: every condition sits in the WHERE clause of the UPDATE `moved`: a live lease of
-- the caller with this token on a pending review item, in a queue the caller's token
-- covers; the item waits on a decision the caller did not make (four-eyes); the evidence
-- the caller saw is the item's now; the verdict is approve or reject (an escalation is not
-- a decision on the subject); and the catalogue of the decision's own queue allows the
-- reason code for the verdict (with a note that says something, if the code requires
-- one). If any fails, nothing is written and no row comes back.
-- The override is recorded against the decision's queue (its catalogue, its effect, its
-- measures and its stream), with the second-review queue the lease was held in as
-- `review_queue`. One verdict per lease (review_decisions_one_per_lease) and one row
-- superseding a decision (review_decisions_one_overturn_each) hold here too.
WITH moved AS (
    UPDATE review_items AS i
    SET state = 'decided', decided_at = now(),
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
        assigned_to = NULL, assigned_until = NULL,
        awaiting_decision_id = NULL,
        updated_at = now()
    FROM review_decisions AS d, queues AS q
    WHERE d.id = i.awaiting_decision_id
      AND q.name = d.queue
      AND i.id = :item_id
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND i.kind = 'review'
      AND i.queue = ANY (:queue_scope::text[])
      AND d.reviewer <> :actor
      AND casework_recent_enough(q.require_auth_within_seconds, q.require_acr,
                                 :auth_time, :acr)
      AND i.evidence_hash = :evidence_hash
      AND :verdict IN ('approve', 'reject')
      AND EXISTS (SELECT 1 FROM reason_codes AS r
                  WHERE r.queue = d.queue AND r.code = :reason_code AND :verdict = ANY (r.verdicts)
                    AND (NOT r.requires_note OR casework_has_text(:note)))
    -- The payload, priority and the decision queue's QA settings are for the QA copy.
    RETURNING i.id, i.queue AS review_queue, d.id AS superseded_id, d.queue AS decided_in,
              d.decided_at AS superseded_decided_at,
              i.lease_started_at, i.lease_count, i.created_at, i.payload, i.priority,
              q.qa_sample_rate, q.qa_queue
),
recorded AS (
    INSERT INTO review_decisions
        (item_id, queue, verdict, outcome, reason_code, note, reviewer, reviewer_role,
         evidence_hash, lease_token, lease_started_at, lease_count, item_created_at,
         supersedes, supersedes_decided_at, review_queue, traceparent, authentication_id)
    SELECT m.id, m.decided_in, :verdict, :verdict, :reason_code, :note, :actor, :actor_role,
           :evidence_hash, :lease_token, m.lease_started_at, m.lease_count, m.created_at,
           m.superseded_id, m.superseded_decided_at, m.review_queue, :traceparent,
           :authentication_id
    FROM moved AS m
    RETURNING *
),
enlisted AS (
    INSERT INTO decision_applications (decision_id, queue, decided_at)
    SELECT r.id, r.queue, r.decided_at FROM recorded AS r
)
-- QA sampling (migration 0021), as in decision_submit. The override is the effective
-- decision, its decider the second reviewer.
SELECT r.*, hint.notification
FROM recorded AS r
JOIN moved AS m ON m.id = r.item_id,
     casework_hint(kind => 'decided', queue => m.review_queue, item_id => r.item_id,
                   decision_id => r.id,
                   other_queues => ARRAY[r.queue]::text[]
                                   || CASE WHEN m.qa_sample_rate > 0
                                                AND m.qa_queue IS NOT NULL
                                                AND r.verdict IN ('approve', 'reject')
                                                AND NOT r.provisional
                                                AND casework_qa_draw(r.id) < m.qa_sample_rate
                                           THEN casework_qa_copy(
                                                    decision_id => r.id,
                                                    qa_queue => m.qa_queue,
                                                    priority => m.priority,
                                                    payload => m.payload,
                                                    evidence_hash => r.evidence_hash::text,
                                                    decider => r.reviewer)
                                      END)
         AS hint (notification);

-- name: second_review_diagnose
-- Read-only: why did decision_confirm or decision_override write nothing? Runs only on that
-- failure path. `first_decider`, `decided_on`, `decided_in`: the provisional decision the
-- item waits on, if any. `confirmed_here` and `decided_here`: what was recorded on this
-- item under this very lease already (a confirmation, an override), so that a retry after
-- a lost answer is answered with it. :verdict and :reason_code are NULL for a confirmation.
SELECT i.id, i.queue, i.state, i.kind, i.lease_token, i.lease_owner,
       i.lease_expires_at > now() AS lease_live,
       i.evidence_hash, i.awaiting_decision_id,
       d.reviewer AS first_decider, d.evidence_hash AS decided_on, d.queue AS decided_in,
       r.code IS NOT NULL AS reason_allowed,
       coalesce(r.requires_note AND NOT casework_has_text(:note), false) AS note_missing,
       c.decision_id AS confirmed_here, c.confirmed_by, c.evidence_hash AS confirmed_on,
       o.id AS decided_here,
       q.require_auth_within_seconds, q.require_acr,
       casework_recent_enough(q.require_auth_within_seconds, q.require_acr,
                              :auth_time, :acr)
           AS recent_enough
FROM review_items AS i
LEFT JOIN review_decisions AS d ON d.id = i.awaiting_decision_id
LEFT JOIN queues AS q ON q.name = d.queue
LEFT JOIN reason_codes AS r
    ON r.queue = d.queue AND r.code = :reason_code AND :verdict::text = ANY (r.verdicts)
LEFT JOIN decision_confirmations AS c ON c.lease_token = :lease_token AND c.item_id = i.id
LEFT JOIN review_decisions AS o ON o.lease_token = :lease_token AND o.item_id = i.id
WHERE i.id = :item_id;
