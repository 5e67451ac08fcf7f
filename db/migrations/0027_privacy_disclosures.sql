-- What a reviewer was shown when deciding a policy item (issue 25): `decision_disclosures`
-- (migration 0026) gets a row for each decision on an item that has fields, written by the
-- decision's own statement.
--
-- - shown: the paths of the fields under the decision's evidence hash that the reviewer's
--   role sees without a reveal under the item's policy version (not erased, and not of a
--   restricted subject unless the role is compliance), together with the paths revealed.
-- - revealed: the distinct paths that reviewer revealed on the item before deciding, from
--   privacy_log (committed before the decision's statement began).
--
-- A statement trigger over the inserted rows: one call per deciding statement, whatever it
-- records, and for items without fields one probe of item_fields' primary key per decision
-- before it returns. Decisions on queues without a policy write nothing more.
CREATE FUNCTION casework_decision_disclosures() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1
        FROM added AS d
        JOIN item_fields AS f ON f.item_id = d.item_id AND f.evidence_hash = d.evidence_hash
    ) THEN
        RETURN NULL;
    END IF;
    INSERT INTO decision_disclosures (decision_id, shown, revealed)
    SELECT d.id,
           ARRAY(SELECT DISTINCT p FROM unnest(seen.paths || told.paths) AS p ORDER BY p),
           told.paths
    FROM added AS d
    JOIN review_items AS i ON i.id = d.item_id
    LEFT JOIN privacy_policies AS pol
           ON pol.queue = i.origin_queue AND pol.version = i.policy_version
    CROSS JOIN LATERAL (
        SELECT count(*) AS fields,
               coalesce(array_agg(f.path ORDER BY f.path) FILTER (
                   WHERE f.erased_at IS NULL
                     AND f.class <> 'sensitive'
                     AND (s.restricted_at IS NULL OR d.reviewer_role = 'compliance')
                     AND coalesce((pol.visible -> d.reviewer_role) ? f.class, false)
               ), '{}') AS paths
        FROM item_fields AS f
        LEFT JOIN privacy_subjects AS s ON s.subject_ref = f.subject_ref
        WHERE f.item_id = d.item_id AND f.evidence_hash = d.evidence_hash
    ) AS seen
    CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(DISTINCT l.path ORDER BY l.path), '{}') AS paths
        FROM privacy_log AS l
        WHERE l.item_id = d.item_id AND l.action = 'reveal' AND l.actor = d.reviewer
          AND l.path IS NOT NULL
    ) AS told
    WHERE seen.fields > 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER review_decisions_disclosures
    AFTER INSERT ON review_decisions
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION casework_decision_disclosures();
