-- A lean claim+decide cycle (issue 29): what a queue does not use stays off its path.
--
-- A data-modifying CTE costs its statement even when it writes nothing: PostgreSQL sets
-- up every INSERT of a statement before the first row (it opens the table and every index
-- of it, builds the RETURNING and ON CONFLICT machinery), on every execution of a prepared
-- plan. The claim carried two such INSERTs for the timeline (a lapse the claim takes
-- over, an abandons escalation) and the decision one for QA sampling (a copy of the item,
-- with ON CONFLICT, into review_items and its eleven indexes), so a fresh claim in a
-- queue without QA paid for three writes it never made. Each write is now a function the
-- statement calls only when there is something to write: the statement's plan no longer
-- holds the INSERT, and the function's own plan is kept by PL/pgSQL for the session.
-- What is written, by whom, in which order and in which transaction is unchanged.

-- The timeline rows a claim writes when it takes over a lapsed lease, or when that lapse
-- is the abandonment that escalates the item instead. One INSERT, the escalation first:
-- the rows get their ids in that order, as they did from the claim's two CTEs, and the
-- escalation's outbox trigger (0036) finds the lapse by a larger id; both rows' triggers
-- fire when the INSERT ends, after both are written.
CREATE FUNCTION casework_claim_timeline(
    item_id bigint, queue text, actor text, actor_role text, escalates boolean,
    escalation_queue text, lapsed boolean, lapsed_owner text, lapsed_token uuid,
    lapsed_started_at timestamptz, lapsed_at timestamptz
) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    written integer;
BEGIN
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, detail, lease_token,
                             lease_started_at, at)
    SELECT e.item_id, e.queue, e.kind, e.actor, e.actor_role, e.detail, e.lease_token,
           e.lease_started_at, e.at
    FROM (SELECT 1 AS position, casework_claim_timeline.item_id, casework_claim_timeline.queue,
                 'escalated' AS kind, casework_claim_timeline.actor,
                 casework_claim_timeline.actor_role,
                 jsonb_build_object('from_queue', casework_claim_timeline.queue,
                                    'to_queue', casework_claim_timeline.escalation_queue)
                     AS detail,
                 NULL::uuid AS lease_token, NULL::timestamptz AS lease_started_at,
                 now() AS at
          WHERE casework_claim_timeline.escalates
          UNION ALL
          SELECT 2, casework_claim_timeline.item_id, casework_claim_timeline.queue, 'lapsed',
                 casework_claim_timeline.lapsed_owner, casework_claim_timeline.actor_role,
                 NULL::jsonb, casework_claim_timeline.lapsed_token,
                 casework_claim_timeline.lapsed_started_at, casework_claim_timeline.lapsed_at
          WHERE casework_claim_timeline.lapsed) AS e
    ORDER BY e.position;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END
$$;

-- QA sampling's copy (0021) of a decision that was drawn: a review_items row of kind 'qa'
-- in the QA queue, with the item's payload, priority and the evidence decided on, barred
-- to its decider. The statements that make an approve or reject effective
-- (decision_submit, decision_confirm, decision_override) draw, and call this only for a
-- decision drawn in a queue with a rate. ON CONFLICT DO NOTHING: a key an integration took
-- in the QA queue costs the copy, never the decision. Returns the queues to name in the
-- decision's hint (`qs`): the QA queue, or NULL when no copy was written.
CREATE FUNCTION casework_qa_copy(
    decision_id bigint, qa_queue text, priority integer, payload jsonb, evidence_hash text,
    decider text
) RETURNS text[]
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    copied_to text;
BEGIN
    INSERT INTO review_items AS c
        (origin_queue, queue, external_key, priority, payload, evidence_hash, kind,
         barred_claimer, qa_of)
    VALUES (casework_qa_copy.qa_queue, casework_qa_copy.qa_queue,
            'qa-of-decision-' || casework_qa_copy.decision_id, casework_qa_copy.priority,
            casework_qa_copy.payload, casework_qa_copy.evidence_hash, 'qa',
            casework_qa_copy.decider, casework_qa_copy.decision_id)
    ON CONFLICT DO NOTHING
    RETURNING c.queue INTO copied_to;
    RETURN CASE WHEN copied_to IS NOT NULL THEN ARRAY[copied_to] END;
END
$$;

REVOKE ALL ON FUNCTION casework_claim_timeline(bigint, text, text, text, boolean, text,
                                               boolean, text, uuid, timestamptz, timestamptz),
    casework_qa_copy(bigint, text, integer, jsonb, text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_claim_timeline(bigint, text, text, text, boolean, text,
                                                  boolean, text, uuid, timestamptz,
                                                  timestamptz),
    casework_qa_copy(bigint, text, integer, jsonb, text, text)
    TO casework_app;
