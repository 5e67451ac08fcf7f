-- Bulk actions (issue 14, section 6): a manager releases, assigns, moves or holds up to 500
-- items in one statement, which sends one hint per queue the changed items were in.
--
-- Such a hint names many items, not one: casework_hint gains `item_ids` (wire key `is`),
-- bounded by the caller like `evidence_changed`, and `items_cut_short`, which says, as
-- `more` does for a re-upload, that the list does not hold them all (the listener then
-- tells every item watcher). The two lists never go together in one hint, so `more` reads
-- whichever was given. Every existing call names its arguments, so adding two with
-- defaults changes none of them; the signature changes, so the function is made anew.

DROP FUNCTION casework_hint(text, text, bigint, bigint, text, bigint, bigint[], boolean, text,
                            text, text[], text[]);

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
    other_queues       text[]  DEFAULT NULL,  -- qs: other queues the change touched
    item_ids           bigint[] DEFAULT NULL, -- is: the items a bulk action changed
    items_cut_short    boolean DEFAULT NULL   -- more: `is` does not list them all
) RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT casework_notify(json_strip_nulls(json_build_object(
        'k', kind, 'q', queue, 'i', item_id, 'd', decision_id, 'from', from_queue,
        'n', created_count, 'e', evidence_changed,
        'more', coalesce(evidence_cut_short, items_cut_short),
        'w', workflow, 'x', exception_id, 'ws', workflows, 'qs', other_queues,
        'is', item_ids))::text)
$$;

REVOKE ALL ON FUNCTION casework_hint(text, text, bigint, bigint, text, bigint, bigint[],
                                     boolean, text, text, text[], text[], bigint[], boolean)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_hint(text, text, bigint, bigint, text, bigint, bigint[],
                                        boolean, text, text, text[], text[], bigint[], boolean)
    TO casework_app;
