-- Cheaper decisions (issue 15): less work per recorded decision, the same guarantees.
--
-- 1. A decision is put on the apply work list by the statement that records it
--    (decision_submit, decision_overturn: an `enlisted` step beside the INSERT), no longer
--    by a row trigger. The trigger ran a PL/pgSQL function and a nested INSERT for every
--    decision; the statement's own INSERT does the same write in the same transaction.
--    Those two statements are the only writers of review_decisions (the application role
--    may only INSERT there, and only they do), so every decision still gets exactly one
--    application: decision_applications' primary key is the decision id, and its foreign
--    key to the decision stays.
DROP TRIGGER review_decisions_enlist ON review_decisions;
DROP FUNCTION decision_applications_enlist();

-- 2. "A decision is overturned at most once" holds only among overturns: every other row
--    has no `supersedes`. A UNIQUE constraint indexes those NULLs as well, one entry per
--    decision that nothing reads; a unique index over the overturns alone enforces the
--    same rule with the same name (a violation still names
--    review_decisions_one_overturn_each) and serves the lookups by `supersedes`, which
--    always look for a value.
ALTER TABLE review_decisions DROP CONSTRAINT review_decisions_one_overturn_each;
CREATE UNIQUE INDEX review_decisions_one_overturn_each
    ON review_decisions (supersedes)
    WHERE supersedes IS NOT NULL;
