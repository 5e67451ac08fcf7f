-- name: decision_submit
-- Records a verdict made under a lease, in one statement. Fence: every condition of it
-- sits in the WHERE clause of `target`: a live lease of the caller with this token on a
-- pending item, the evidence the reviewer saw, and a reason code the queue's catalogue
-- allows for this verdict (with a note that says something, if the code requires one), in
-- a queue the caller's token covers. If any fails, nothing is written and no row comes
-- back.
-- An escalation returns the item to `pending` in the escalation queue, priority boosted.
-- The row keeps when its lease began, the item's lease count and when the item was
-- enqueued, for the queue's measures.
WITH target AS (
    SELECT i.id, i.queue, coalesce(q.escalation_queue, q.name) AS escalation_queue,
           q.escalation_priority_boost, i.lease_started_at, i.lease_count, i.created_at
    FROM review_items AS i
    JOIN queues AS q ON q.name = i.queue
    WHERE i.id = :item_id
      AND i.lease_token = :lease_token
      AND i.lease_owner = :actor
      AND i.state = 'pending'
      AND i.lease_expires_at > now()
      AND i.evidence_hash = :evidence_hash
      AND i.kind = 'review'
      AND i.queue = ANY (:queue_scope::text[])
      AND EXISTS (SELECT 1 FROM reason_codes AS r
                  WHERE r.queue = i.queue AND r.code = :reason_code AND :verdict = ANY (r.verdicts)
                    AND (NOT r.requires_note OR casework_has_text(:note)))
    FOR UPDATE OF i
),
moved AS (
    UPDATE review_items AS i
    SET state            = CASE WHEN :verdict = 'escalate' THEN 'pending' ELSE 'decided' END,
        decided_at       = CASE WHEN :verdict = 'escalate' THEN NULL ELSE now() END,
        queue            = CASE WHEN :verdict = 'escalate' THEN t.escalation_queue ELSE i.queue END,
        priority         = CASE WHEN :verdict = 'escalate' THEN i.priority + t.escalation_priority_boost
                                ELSE i.priority END,
        abandon_count    = CASE WHEN :verdict = 'escalate' THEN 0 ELSE i.abandon_count END,
        escalation_count = i.escalation_count + (:verdict = 'escalate')::int,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
        -- Decided, or moved on to another queue: an assignment has done its work.
        assigned_to = NULL, assigned_until = NULL,
        updated_at = now()
    FROM target AS t
    WHERE i.id = t.id
    RETURNING i.id
),
recorded AS (
    INSERT INTO review_decisions
        (item_id, queue, verdict, outcome, reason_code, note, reviewer, reviewer_role,
         evidence_hash, lease_token, lease_started_at, lease_count, item_created_at,
         traceparent)
    SELECT t.id, t.queue, :verdict, :verdict, :reason_code, :note, :actor, :actor_role,
           :evidence_hash, :lease_token, t.lease_started_at, t.lease_count, t.created_at,
           :traceparent
    FROM target AS t JOIN moved AS m ON m.id = t.id
    RETURNING *
)
SELECT r.*, hint.notification
FROM recorded AS r
JOIN target AS t ON t.id = r.item_id,
     casework_hint(
         kind => CASE WHEN :verdict = 'escalate' THEN 'escalated' ELSE 'decided' END,
         queue => CASE WHEN :verdict = 'escalate' THEN t.escalation_queue ELSE r.queue END,
         item_id => r.item_id, decision_id => r.id, from_queue => r.queue) AS hint (notification);

-- name: decision_submit_diagnose
-- Read-only: why did decision_submit write nothing? Runs only on that failure path.
-- `prior_decision_id` is the verdict already recorded on this item under this very lease:
-- a console whose answer was lost retries with the same token, and is answered with it.
-- `note_missing`: the reason code requires a note and this one says nothing.
SELECT i.id, i.queue, i.state, i.kind, i.lease_token, i.lease_owner,
       i.lease_expires_at > now() AS lease_live,
       i.evidence_hash,
       r.code IS NOT NULL AS reason_allowed,
       coalesce(r.requires_note AND NOT casework_has_text(:note), false) AS note_missing,
       d.id AS prior_decision_id
FROM review_items AS i
LEFT JOIN reason_codes AS r
    ON r.queue = i.queue AND r.code = :reason_code AND :verdict = ANY (r.verdicts)
LEFT JOIN review_decisions AS d ON d.lease_token = :lease_token AND d.item_id = i.id
WHERE i.id = :item_id;

-- name: decision_overturn
-- Writes an overturn that supersedes :decision_id.
-- Fence: :decision_id is the effective decision of its item (not superseded already, and
-- not an escalation), and the catalogue allows :reason_code for the reversed outcome (with
-- a note that says something, if the code requires one).
-- The UNIQUE constraint on `supersedes` settles two concurrent overturns of one decision.
WITH target AS (
    SELECT d.id, d.item_id, d.queue, d.evidence_hash,
           CASE d.outcome WHEN 'approve' THEN 'reject' ELSE 'approve' END AS outcome
    FROM review_decisions AS d
    WHERE d.id = :decision_id
      AND d.outcome IN ('approve', 'reject')
      AND NOT EXISTS (SELECT 1 FROM review_decisions AS s WHERE s.supersedes = d.id)
),
recorded AS (
    INSERT INTO review_decisions
        (item_id, queue, verdict, outcome, reason_code, note, reviewer, reviewer_role,
         evidence_hash, supersedes, traceparent)
    SELECT t.item_id, t.queue, 'overturn', t.outcome, :reason_code, :note, :actor, :actor_role,
           t.evidence_hash, t.id, :traceparent
    FROM target AS t
    WHERE EXISTS (SELECT 1 FROM reason_codes AS r
                  WHERE r.queue = t.queue AND r.code = :reason_code AND t.outcome = ANY (r.verdicts)
                    AND (NOT r.requires_note OR casework_has_text(:note)))
    RETURNING *
)
SELECT r.*, hint.notification
FROM recorded AS r,
     casework_hint(kind => 'overturned', queue => r.queue, item_id => r.item_id,
                   decision_id => r.id) AS hint (notification);

-- name: decision_overturn_diagnose
-- Read-only: why did decision_overturn write nothing? Runs only on that failure path.
-- `superseded_by`: a concurrent overturn won; `reason_allowed`: the catalogue allows the
-- code for the reversed outcome; `note_missing`: it requires a note and this one says nothing.
SELECT s.id AS superseded_by,
       r.code IS NOT NULL AS reason_allowed,
       coalesce(r.requires_note AND NOT casework_has_text(:note), false) AS note_missing
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
LEFT JOIN reason_codes AS r
    ON r.queue = d.queue AND r.code = :reason_code
   AND (CASE d.outcome WHEN 'approve' THEN 'reject' ELSE 'approve' END) = ANY (r.verdicts)
WHERE d.id = :decision_id;
