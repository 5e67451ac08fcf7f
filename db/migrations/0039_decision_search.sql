-- Finding cases (issue 30): the indexes that serve the decision search
-- (db/queries/search_decisions.sql), the exceptions list's order by latest activity and the
-- look-up of an exception by its source record id (db/queries/exceptions_read.sql).
--
-- review_decisions is append-only, so an index there costs only its share of each insert:
-- no row is ever updated, none ever becomes dead. Every decision index leads with the queue,
-- because a search walks each queue of the caller's scope on its own (the scope is a list of
-- queues, and a walk per queue keeps each in (decided_at, id) order for the keyset), then
-- holds the filter it serves, then the order. Status is not a column (it is read from the
-- rows that supersede and confirm a decision), so it is served by the partial indexes below.

CREATE INDEX review_decisions_search_queue ON review_decisions (queue, decided_at, id);
CREATE INDEX review_decisions_search_reviewer
    ON review_decisions (queue, reviewer, decided_at, id);
CREATE INDEX review_decisions_search_reason
    ON review_decisions (queue, reason_code, decided_at, id);
CREATE INDEX review_decisions_search_verdict ON review_decisions (queue, outcome, decided_at, id);
-- PROVISIONAL: only a provisional row can be; the confirmation is checked by its key.
CREATE INDEX review_decisions_search_provisional
    ON review_decisions (queue, decided_at, id) WHERE provisional;
-- SUPERSEDED: a decision is superseded by the one row that names it (an override or an
-- overturn, always recorded in the superseded decision's queue), never earlier than it.
CREATE INDEX review_decisions_search_superseding
    ON review_decisions (queue, decided_at, supersedes) WHERE supersedes IS NOT NULL;

-- The exceptions list newest or oldest activity first, and an exception by its source
-- record id in any workflow (exceptions_source serves it within one).
CREATE INDEX exceptions_activity ON exceptions (updated_at, id);
CREATE INDEX exceptions_source_record ON exceptions (source_record_id);
