-- QA sampling (migration 0021): the result of a check, and what reads it. The copies are
-- written by the decision statements (db/queries/decisions.sql, casework_qa_copy).

-- name: qa_result_record
-- Records a QA reviewer's agree or disagree on a sampled decision, in one statement: the
-- append-only qa_results row, the QA copy decided (lease cleared), a `qa_checked` row on the
-- timeline of the item whose decision was checked (the note as its body), and a `decided`
-- hint for the copy in the QA queue, naming the decision's queue among its queues.
-- Nothing goes on the apply work list: a check has no effect to carry out.
-- Fence: every condition sits in the WHERE clause of the UPDATE `checked`: a live lease of
-- the caller with this token on a pending QA copy, in a queue the caller's token covers; the
-- caller is not the reviewer of the decision checked; a reason code of the QA queue's
-- catalogue allowed for the answer (verdict approve: may be given when agreeing; reject:
-- when disagreeing), with a note that says something if the code requires one. If any
-- fails, nothing is written and no row comes back.
WITH checked AS (
    UPDATE review_items AS i
    SET state = 'decided', decided_at = now(),
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
        assigned_to = NULL, assigned_until = NULL,
        updated_at = now()
    FROM review_decisions AS d
    WHERE d.id = i.qa_of
      AND i.id = :item_id
      AND i.kind = 'qa'
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND i.queue = ANY (:queue_scope::text[])
      AND d.reviewer <> :actor
      AND EXISTS (SELECT 1 FROM reason_codes AS r
                  WHERE r.queue = i.queue AND r.code = :reason_code
                    AND (CASE WHEN :agrees::boolean THEN 'approve' ELSE 'reject' END)
                        = ANY (r.verdicts)
                    AND (NOT r.requires_note OR casework_has_text(:note)))
    RETURNING i.id, i.queue, i.qa_of, i.lease_started_at, d.item_id AS checked_item_id,
              d.queue AS decision_queue
),
recorded AS (
    INSERT INTO qa_results
        (decision_id, qa_item_id, queue, decision_queue, agrees, reason_code, note, reviewer,
         reviewer_role, lease_token, lease_started_at, traceparent, authentication_id)
    SELECT c.qa_of, c.id, c.queue, c.decision_queue, :agrees::boolean, :reason_code,
           :note::text, :actor, :actor_role, :lease_token, c.lease_started_at, :traceparent,
           :authentication_id
    FROM checked AS c
    RETURNING *
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, body, detail,
                             authentication_id)
    SELECT c.checked_item_id, c.decision_queue, 'qa_checked', :actor, :actor_role, :note::text,
           jsonb_build_object('decision_id', c.qa_of, 'qa_item_id', c.id,
                              'agrees', :agrees::boolean, 'reason_code', :reason_code::text),
           :authentication_id
    FROM checked AS c
)
SELECT r.*, hint.notification
FROM recorded AS r,
     casework_hint(kind => 'decided', queue => r.queue, item_id => r.qa_item_id,
                   other_queues => ARRAY[r.decision_queue]) AS hint (notification);

-- name: qa_result_record_diagnose
-- Read-only: why did qa_result_record write nothing? Runs only on that failure path.
-- `decider`: the reviewer of the decision the copy checks (NULL: not a QA copy);
-- `reason_allowed`: the QA queue's catalogue allows the code for this answer;
-- `note_missing`: the code requires a note and this one says nothing.
-- The result already recorded on this copy under this very lease, if any (decision_id,
-- agrees, reason_code, note, reviewer, ...): a console whose answer was lost retries with
-- the same token, and is answered with it.
SELECT i.id, i.queue, i.state, i.kind, i.lease_token, i.lease_owner,
       i.lease_expires_at > now() AS lease_live,
       d.reviewer AS decider,
       r.code IS NOT NULL AS reason_allowed,
       coalesce(r.requires_note AND NOT casework_has_text(:note), false) AS note_missing,
       p.decision_id, p.qa_item_id, p.agrees, p.reason_code, p.note, p.reviewer, p.recorded_at
FROM review_items AS i
LEFT JOIN review_decisions AS d ON d.id = i.qa_of
LEFT JOIN qa_results AS p ON p.qa_item_id = i.id AND p.lease_token = :lease_token
LEFT JOIN reason_codes AS r
    ON r.queue = i.queue AND r.code = :reason_code
   AND (CASE WHEN :agrees::boolean THEN 'approve' ELSE 'reject' END) = ANY (r.verdicts)
WHERE i.id = :item_id;

-- name: qa_get_by_decision_ids
-- For each sampled decision among :decision_ids: its QA copy, and the result if one was
-- recorded. A decision without a row here was not sampled. Reads review_items by
-- review_items_one_qa_copy_each and qa_results by its decision.
SELECT c.qa_of AS decision_id, c.id AS qa_item_id, c.queue AS qa_queue,
       r.agrees, r.reason_code, r.note, r.reviewer, r.recorded_at
FROM review_items AS c
LEFT JOIN qa_results AS r ON r.decision_id = c.qa_of
WHERE c.qa_of = ANY (:decision_ids::bigint[]);
