-- Finding superseded decisions in order (issue 30): the row that supersedes a decision (an
-- override or an overturn) also records when the decision it names was made.
--
-- A search for SUPERSEDED decisions lists them in their own (decided_at, id) order, but
-- they are found through the rows that name them, which are written later and in another
-- order. 0039 walked those rows in theirs, so the walk could not stop at a page and was
-- refused over a long history. With the superseded decision's time on the superseding row,
-- one index holds the superseded decisions of each queue in their own order, and the walk
-- stops at a page as every other decision search does.
--
-- The log stays append-only: the time is written with the superseding row and never
-- changes (a decision's decided_at never does). The rows already written are filled here,
-- as the owner, once.

ALTER TABLE review_decisions ADD COLUMN supersedes_decided_at timestamptz;

UPDATE review_decisions AS s
SET supersedes_decided_at = d.decided_at
FROM review_decisions AS d
WHERE d.id = s.supersedes;

ALTER TABLE review_decisions
    ADD CONSTRAINT review_decisions_supersedes_decided_at
        CHECK ((supersedes IS NULL) = (supersedes_decided_at IS NULL));

-- `item_id > 0` holds for every row; only the search says so (as 0039 explains), so other
-- reads by `supersedes` keep the unique index made for them.
DROP INDEX review_decisions_search_superseding;
CREATE INDEX review_decisions_search_superseded
    ON review_decisions (queue, supersedes_decided_at, supersedes)
    WHERE supersedes IS NOT NULL AND item_id > 0;
