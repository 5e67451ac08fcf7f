-- Erasure of a subject's personal data (issue 25): the one way values, salts and data keys
-- are destroyed. The application role may not UPDATE item_fields or sealed_notes, nor clear a
-- data key; it may call this function, which runs as the migration role (SECURITY DEFINER)
-- and does exactly one thing: erase what no live hold covers, and log it.
--
-- - The personal and sensitive fields of the subject's items (all uploads of each item) lose
--   their salt, nonce and ciphertext; their digests stay, so the evidence hash a decision
--   pinned still verifies from the digests, and the value can neither be read nor confirmed
--   by guessing. Public and reference fields keep their salts: their values are in the
--   payload, not personal, and each still verifies on its own.
-- - Sealed notes on those items lose their body.
-- - The subject's data keys are shredded once nothing sealed under them remains.
-- - A hold (on the subject, or naming the item) that is not released and has not run out
--   keeps its items untouched. Judged against the database's clock.
-- - The same call again erases nothing and says so: every count is zero.

-- The scope an erasure request was made in: the queues of the compliance officer who asked
-- (NULL: every queue). The approver must cover it; the erasure reaches no other queue.
ALTER TABLE erasure_requests ADD COLUMN queues text[];

-- One live erasure of a subject at a time, and the worker finds unerased fields by item.
CREATE INDEX item_fields_unerased_item ON item_fields (item_id)
    WHERE erased_at IS NULL AND class IN ('personal', 'sensitive');

CREATE FUNCTION casework_erase_subject(
    p_subject_ref text,
    -- NULL: every item of the subject (in p_queues); else only these (retention, replay).
    p_item_ids bigint[],
    -- NULL: every queue; else items whose current queue is one of these.
    p_queues text[],
    p_request_id bigint,
    p_actor text,
    p_actor_role text,
    -- The privacy_log action: erasure_executed (a request), retention_erased (the worker),
    -- erasure_replayed (`casework privacy replay` after a restore).
    p_reason_kind text
) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_now timestamptz := now();
    v_items jsonb;
    v_fields integer;
    v_notes integer;
    v_keys integer := 0;
    v_held jsonb;
    v_held_ids bigint[];
    v_result jsonb;
BEGIN
    IF p_reason_kind NOT IN ('erasure_executed', 'retention_erased', 'erasure_replayed') THEN
        RAISE EXCEPTION 'casework_erase_subject: unknown reason kind %', p_reason_kind
            USING ERRCODE = '22023';
    END IF;
    IF p_actor IS NULL OR p_actor_role IS NULL THEN
        RAISE EXCEPTION 'casework_erase_subject: an erasure names its actor'
            USING ERRCODE = '22023';
    END IF;
    -- Erasures of one subject queue up behind each other (holds placed on it too).
    PERFORM 1 FROM privacy_subjects WHERE subject_ref = p_subject_ref FOR UPDATE;

    SELECT coalesce(array_agg(DISTINCT f.item_id), '{}')
    INTO v_held_ids
    FROM item_fields AS f
    JOIN privacy_holds AS h
      ON h.subject_ref = f.subject_ref OR f.item_id = ANY (h.item_ids)
    WHERE f.subject_ref = p_subject_ref
      AND NOT EXISTS (SELECT 1 FROM privacy_hold_releases AS r WHERE r.hold_id = h.id)
      AND (h.until IS NULL OR h.until > v_now);

    WITH erased AS (
        UPDATE item_fields AS f
        SET salt = NULL, nonce = NULL, ciphertext = NULL, erased_at = v_now
        FROM review_items AS i
        WHERE i.id = f.item_id
          AND f.subject_ref = p_subject_ref
          AND f.erased_at IS NULL
          AND f.class IN ('personal', 'sensitive')
          AND (p_item_ids IS NULL OR f.item_id = ANY (p_item_ids))
          AND (p_queues IS NULL OR i.queue = ANY (p_queues))
          AND NOT f.item_id = ANY (v_held_ids)
        RETURNING f.item_id, f.path
    ),
    per_item AS (
        SELECT item_id, array_agg(DISTINCT path ORDER BY path) AS paths, count(*) AS n
        FROM erased GROUP BY item_id
    )
    SELECT coalesce(jsonb_agg(jsonb_build_object('item_id', item_id, 'paths', to_jsonb(paths))
                              ORDER BY item_id), '[]'::jsonb),
           coalesce(sum(n), 0)::integer
    INTO v_items, v_fields
    FROM per_item;

    WITH erased AS (
        UPDATE sealed_notes AS n
        SET ciphertext = NULL, nonce = NULL, erased_at = v_now
        FROM review_items AS i
        WHERE i.id = n.item_id
          AND n.subject_ref = p_subject_ref
          AND n.erased_at IS NULL
          AND (p_item_ids IS NULL OR n.item_id = ANY (p_item_ids))
          AND (p_queues IS NULL OR i.queue = ANY (p_queues))
          AND NOT n.item_id = ANY (v_held_ids)
        RETURNING n.event_id
    )
    SELECT count(*)::integer INTO v_notes FROM erased;

    -- The keys go once nothing sealed under them is left (other queues' items, held items
    -- and items outside p_item_ids keep them alive).
    IF NOT EXISTS (
        SELECT 1 FROM item_fields AS f
        WHERE f.subject_ref = p_subject_ref AND f.erased_at IS NULL
          AND f.class IN ('personal', 'sensitive')
    ) AND NOT EXISTS (
        SELECT 1 FROM sealed_notes AS n
        WHERE n.subject_ref = p_subject_ref AND n.erased_at IS NULL
    ) THEN
        WITH shredded AS (
            UPDATE privacy_subject_keys AS k
            SET wrapped_key = NULL, kek_id = NULL, shredded_at = v_now
            WHERE k.subject_ref = p_subject_ref AND k.shredded_at IS NULL
            RETURNING k.key_version
        )
        SELECT count(*)::integer INTO v_keys FROM shredded;
    END IF;

    -- What a hold kept: items in scope with personal values left.
    SELECT coalesce(jsonb_agg(DISTINCT f.item_id), '[]'::jsonb)
    INTO v_held
    FROM item_fields AS f
    JOIN review_items AS i ON i.id = f.item_id
    WHERE f.item_id = ANY (v_held_ids)
      AND f.subject_ref = p_subject_ref AND f.erased_at IS NULL
      AND f.class IN ('personal', 'sensitive')
      AND (p_item_ids IS NULL OR f.item_id = ANY (p_item_ids))
      AND (p_queues IS NULL OR i.queue = ANY (p_queues));

    v_result := jsonb_build_object(
        'subject_ref', p_subject_ref,
        'request_id', p_request_id,
        'erased_at', v_now,
        'items', v_items,
        'fields_erased', v_fields,
        'notes_erased', v_notes,
        'keys_shredded', v_keys,
        'held_item_ids', v_held
    );
    IF v_fields + v_notes + v_keys > 0 OR p_reason_kind = 'erasure_replayed' THEN
        INSERT INTO privacy_log (action, actor, actor_role, subject_ref, detail)
        VALUES (p_reason_kind, p_actor, p_actor_role, p_subject_ref, v_result);
    END IF;
    RETURN v_result;
END
$$;

REVOKE ALL ON FUNCTION casework_erase_subject(text, bigint[], text[], bigint, text, text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_erase_subject(text, bigint[], text[], bigint, text, text, text)
    TO casework_app;
