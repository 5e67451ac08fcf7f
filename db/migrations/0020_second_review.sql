-- Second review (issue 16, part 1): four-eyes on consequential decisions, before the effect.
--
-- A queue may say that a decision with some verdicts (optionally only at or above a
-- priority) needs a second person. decision_submit then records it as provisional: it is
-- not put on the apply work list, and its item moves, pending and unleased, to the queue's
-- second-review queue, naming the first decider as its `barred_claimer` (0019) and the
-- provisional decision in `awaiting_decision_id`. A second reviewer claims it there and
-- either confirms the decision (decision_confirm: a row of `decision_confirmations`, and
-- the decision goes on the work list) or overrides it (decision_override: a new decision
-- that supersedes it, on the work list; the provisional one never is).
--
-- Nothing here is ever updated: a decision's status is read from the append-only records.
--   PROVISIONAL  provisional, not confirmed, and nothing supersedes it
--   EFFECTIVE    not provisional, or confirmed; and nothing supersedes it
--   SUPERSEDED   an override or an overturn supersedes it

-- The queue's setting. No verdicts: no second review (the other two columns are then NULL).
-- An escalation is never second-reviewed: it is not an effect, only a move.
ALTER TABLE queues
    ADD COLUMN second_review_verdicts text[] NOT NULL DEFAULT '{}'
        CONSTRAINT queues_second_review_verdicts_known
        CHECK (second_review_verdicts <@ ARRAY['approve', 'reject']::text[]),
    ADD COLUMN second_review_min_priority integer,
    ADD COLUMN second_review_queue text REFERENCES queues (name),
    ADD CONSTRAINT queues_second_review_names_its_queue
        CHECK ((cardinality(second_review_verdicts) > 0) = (second_review_queue IS NOT NULL)),
    ADD CONSTRAINT queues_second_review_elsewhere
        CHECK (second_review_queue <> name);

-- Whether the decision needs a second review: the queue's setting applied to a verdict and
-- the item's priority at the moment of the decision. LANGUAGE sql with one expression: the
-- planner inlines it into decision_submit, where a queue without second review pays for
-- one comparison of an empty array.
CREATE FUNCTION casework_needs_second_review(q queues, verdict text, priority integer)
RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT verdict = ANY (q.second_review_verdicts)
           AND priority >= coalesce(q.second_review_min_priority, priority)
$$;

REVOKE ALL ON FUNCTION casework_needs_second_review(queues, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_needs_second_review(queues, text, integer) TO casework_app;

-- A decision recorded as needing a second review. A fact of the moment it was recorded,
-- never changed: whether it was later confirmed or overridden is read from the records
-- that say so. Adding a column with a constant default rewrites no row.
ALTER TABLE review_decisions ADD COLUMN provisional boolean NOT NULL DEFAULT false;

-- Where the lease a decision was made under was held, when that is not `queue`: an
-- override is recorded against the original queue (its catalogue, its effect, its
-- measures) but made under a lease of the second-review queue. The timeline reads it.
ALTER TABLE review_decisions ADD COLUMN review_queue text;

-- An override supersedes the provisional decision with a verdict of its own, made under a
-- lease: `supersedes` is no longer the overturn's alone. An overturn still supersedes
-- something and is made under no lease (review_decisions_check1), and only one row
-- supersedes a decision (review_decisions_one_overturn_each): an override and an overturn
-- of one decision exclude each other.
ALTER TABLE review_decisions
    DROP CONSTRAINT review_decisions_check,
    ADD CONSTRAINT review_decisions_overturn_supersedes
        CHECK (verdict <> 'overturn' OR supersedes IS NOT NULL),
    ADD CONSTRAINT review_decisions_provisional_is_a_verdict
        CHECK (NOT provisional OR (verdict IN ('approve', 'reject') AND supersedes IS NULL));

-- The item waiting for a second review names the provisional decision (NULL for every
-- other item). decision_submit sets it in the statement that records the decision, so it
-- takes the decision's id from the identity's sequence first (casework_app may use it).
ALTER TABLE review_items
    ADD COLUMN awaiting_decision_id bigint REFERENCES review_decisions (id);

GRANT USAGE ON SEQUENCE review_decisions_id_seq TO casework_app;

-- Append-only: a confirmation is never changed or removed. One per decision (the primary
-- key) and one per lease (the second reviewer's, as review_decisions_one_per_lease is).
CREATE TABLE decision_confirmations (
    decision_id       bigint PRIMARY KEY REFERENCES review_decisions (id),
    item_id           bigint NOT NULL REFERENCES review_items (id),
    -- The decision's queue: the stream (decisionEvents) of that queue delivers the decision
    -- when it is confirmed.
    queue             text NOT NULL,
    -- Where the second review happened.
    review_queue      text NOT NULL,
    confirmed_by      text NOT NULL,
    confirmed_by_role text NOT NULL,
    -- The evidence both reviewers saw (the decision's own hash, checked in the fence).
    evidence_hash     sha256_hex NOT NULL,
    lease_token       uuid NOT NULL CONSTRAINT decision_confirmations_one_per_lease UNIQUE,
    lease_started_at  timestamptz,
    confirmed_at      timestamptz NOT NULL DEFAULT now(),
    -- The confirming transaction: the decision's place in the commit-ordered stream.
    txid              xid8 NOT NULL DEFAULT pg_current_xact_id(),
    traceparent       traceparent_text
);

-- One item's confirmations (its timeline); one queue's in commit order (decisionEvents).
CREATE INDEX decision_confirmations_item ON decision_confirmations (item_id);
CREATE INDEX decision_confirmations_queue_position
    ON decision_confirmations (queue, txid, decision_id);

REVOKE ALL ON decision_confirmations FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON decision_confirmations FROM casework_app;
GRANT SELECT, INSERT ON decision_confirmations TO casework_app;
