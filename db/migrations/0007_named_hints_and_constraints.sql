-- Two things the code relies on by name, made explicit.
--
-- 1. Every write's live-update hint is built by one function, called with named
--    arguments, so the payload's one-letter wire keys (what server/events/channels.py
--    `parse_event` reads) are spelt in one place.
--
-- 2. The constraints the domain tells apart when a write is refused
--    (server/store/constraints.py) get names that say what they guard, instead of the
--    ones PostgreSQL generated from the table and column.

-- The hint: kind and ids only, never state. A NULL argument leaves its key out (the
-- parser reads every key but `k` and `q` as optional). The function does not bound the
-- payload: a caller passing a list bounds it (items_upsert sends at most 100 re-uploaded
-- ids and says `more`), so that the payload stays below NOTIFY's 8000 bytes.
-- LANGUAGE sql with one SELECT and each argument used once: the planner inlines it, so a
-- statement pays for json_build_object and casework_notify as before, and no more.
CREATE FUNCTION casework_hint(
    kind               text,            -- k: an EventKind value
    queue              text,            -- q: the queue the hint is routed by
    item_id            bigint  DEFAULT NULL,  -- i
    decision_id        bigint  DEFAULT NULL,  -- d
    from_queue         text    DEFAULT NULL,  -- from: the queue an item left
    created_count      bigint  DEFAULT NULL,  -- n: items a batch enqueue created
    evidence_changed   bigint[] DEFAULT NULL, -- e: items whose payload a batch replaced
    evidence_cut_short boolean DEFAULT NULL,  -- more: `e` does not list them all
    workflow           text    DEFAULT NULL,  -- w
    exception_id       text    DEFAULT NULL,  -- x
    workflows          text[]  DEFAULT NULL,  -- ws: several workflows at once
    other_queues       text[]  DEFAULT NULL   -- qs: other queues the change touched
) RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT casework_notify(json_strip_nulls(json_build_object(
        'k', kind, 'q', queue, 'i', item_id, 'd', decision_id, 'from', from_queue,
        'n', created_count, 'e', evidence_changed, 'more', evidence_cut_short,
        'w', workflow, 'x', exception_id, 'ws', workflows, 'qs', other_queues))::text)
$$;

REVOKE ALL ON FUNCTION casework_hint(text, text, bigint, bigint, text, bigint, bigint[],
                                     boolean, text, text, text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_hint(text, text, bigint, bigint, text, bigint, bigint[],
                                        boolean, text, text, text[], text[]) TO casework_app;

-- Renaming a UNIQUE or PRIMARY KEY constraint renames its index too.
-- 0001 `lease_token uuid UNIQUE`: one verdict per lease.
ALTER TABLE review_decisions
    RENAME CONSTRAINT review_decisions_lease_token_key TO review_decisions_one_per_lease;
-- 0001 `supersedes bigint UNIQUE`: a decision is overturned at most once.
ALTER TABLE review_decisions
    RENAME CONSTRAINT review_decisions_supersedes_key TO review_decisions_one_overturn_each;
-- 0005 `PRIMARY KEY (workflow, source_record_id, version)`: one correction per version of
-- a record.
ALTER TABLE exception_corrections
    RENAME CONSTRAINT exception_corrections_pkey TO exception_corrections_one_per_version;
