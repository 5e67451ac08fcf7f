-- QA sampling (issue 16, part 2): a share of a queue's decisions is checked after the effect.
--
-- - The queue settings `qa_sample_rate` (0 to 1; 0: off, the default) and `qa_queue` (where
--   the copies go; a queue of its own, worked by reviewers).
-- - The draw: casework_qa_draw(decision_id), a pure function of the decision's id, in
--   [0, 1). A decision is sampled iff its draw is below its queue's rate when it is made.
--   The id comes from the table's identity sequence at insert, so the reviewer cannot
--   choose it, and anyone can recompute which decisions were sampled.
-- - The copy: a review_items row of kind 'qa' in the QA queue, with the item's payload and
--   evidence hash as decided, the item's priority, `barred_claimer` the decider (0019: the
--   claim never hands it to them) and `qa_of` the decision it checks. decision_submit
--   writes it in the statement that records the decision; the decision goes on the apply
--   work list exactly as before, so QA never holds up the effect. A copy is never put on
--   the work list: only decision_submit and decision_overturn write decision_applications,
--   and a QA copy is decided by qa_result_record, which writes a qa_results row instead.
-- - The result: `qa_results`, append-only (the application role may only INSERT and
--   SELECT), one per sampled decision.

ALTER TABLE queues
    ADD COLUMN qa_sample_rate double precision NOT NULL DEFAULT 0
        CHECK (qa_sample_rate >= 0 AND qa_sample_rate <= 1),
    ADD COLUMN qa_queue text REFERENCES queues (name);

-- The draw: the first 52 bits of SHA-256 over the id's 8 bytes (big-endian, as int8send
-- writes them), divided by 2^52: exact in a double, uniform in [0, 1). IMMUTABLE and
-- inlined: the decision statement pays for one hash, and only in a queue with a rate.
-- In Python: int(sha256(id.to_bytes(8, "big", signed=True)).hexdigest()[:13], 16) / 2**52.
CREATE FUNCTION casework_qa_draw(decision_id bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || left(encode(sha256(int8send(decision_id)), 'hex'), 13))::bit(52)::bigint
           / 4503599627370496.0::double precision
$$;

REVOKE ALL ON FUNCTION casework_qa_draw(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_qa_draw(bigint) TO casework_app;

-- A QA copy is an item of its own kind: submitDecision, the claim controls, bulk actions
-- and notes (all `kind = 'review'`) leave it alone; the claim hands it out like any item.
ALTER DOMAIN review_item_kind DROP CONSTRAINT review_item_kind_is_known;
ALTER DOMAIN review_item_kind
    ADD CONSTRAINT review_item_kind_is_known CHECK (VALUE IN ('review', 'exception', 'qa'));

-- The decision a QA copy checks; NULL on every other item. At most one copy per decision.
-- No CHECK ties it to `kind` (a table CHECK is evaluated on every write of review_items,
-- the claim's and the decision's included: see 0018); decision_submit is its only writer.
ALTER TABLE review_items ADD COLUMN qa_of bigint REFERENCES review_decisions (id);
CREATE UNIQUE INDEX review_items_one_qa_copy_each ON review_items (qa_of) WHERE qa_of IS NOT NULL;

-- Append-only, like review_decisions. `queue` is the QA queue, whose catalogue the reason
-- code belongs to; `decision_queue` the queue of the decision checked.
CREATE TABLE qa_results (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    decision_id      bigint NOT NULL REFERENCES review_decisions (id),
    qa_item_id       bigint NOT NULL REFERENCES review_items (id),
    queue            text NOT NULL,
    decision_queue   text NOT NULL,
    agrees           boolean NOT NULL,
    reason_code      text NOT NULL,
    note             note_text,
    reviewer         short_text NOT NULL,
    reviewer_role    text NOT NULL,
    -- The QA reviewer's lease on the copy, and when it began.
    lease_token      uuid NOT NULL,
    lease_started_at timestamptz,
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    traceparent      traceparent_text,
    CONSTRAINT qa_results_one_per_decision UNIQUE (decision_id),
    FOREIGN KEY (queue, reason_code) REFERENCES reason_codes (queue, code)
);

GRANT SELECT, INSERT ON qa_results TO casework_app;
REVOKE UPDATE, DELETE, TRUNCATE ON qa_results FROM casework_app;

-- One more kind of the item timeline, on the item whose decision was checked: `qa_checked`
-- (written with the result, the QA note as its body; its detail names the decision and the
-- copy). That the decision was sampled is read from the copy (`qa_of`), as decisions are
-- read from review_decisions: the decision statement writes no timeline row.
ALTER TABLE item_events DROP CONSTRAINT item_events_kind;
ALTER TABLE item_events ADD CONSTRAINT item_events_kind CHECK (kind IN (
    'enqueued', 'reuploaded', 'renewed', 'released', 'lapsed', 'revoked', 'escalated',
    'moved', 'held', 'resumed', 'assigned', 'unassigned', 'noted',
    'qa_checked'    -- a QA reviewer recorded agree or disagree
));
