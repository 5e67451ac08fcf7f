-- name: reading_fields_get
-- The current fields of items as a reader needs them, in one statement for a page: each
-- with the item that sealed it (a QA copy shows the fields of the decision it checks), the
-- policy that split them (that item's origin queue and policy version), whether the subject
-- is restricted, and for personal values only the ciphertext and the wrapped data key that
-- opens it. Sensitive ciphertexts are never read here: a reveal reads its one field.
SELECT i.id AS item_id, s.id AS sealed_item_id, s.origin_queue AS policy_queue,
       s.policy_version, f.path, f.class, f.subject_ref, f.digest, f.erased_at,
       ps.restricted_at IS NOT NULL AS restricted,
       CASE WHEN f.class = 'personal' THEN f.key_version END AS key_version,
       CASE WHEN f.class = 'personal' THEN f.nonce END AS nonce,
       CASE WHEN f.class = 'personal' THEN f.ciphertext END AS ciphertext,
       k.kek_id, k.wrapped_key
FROM review_items AS i
LEFT JOIN review_decisions AS d ON d.id = i.qa_of
JOIN review_items AS s ON s.id = coalesce(d.item_id, i.id)
JOIN item_fields AS f ON f.item_id = s.id AND f.evidence_hash = i.evidence_hash
LEFT JOIN privacy_subjects AS ps ON ps.subject_ref = f.subject_ref
LEFT JOIN privacy_subject_keys AS k
       ON f.class = 'personal' AND f.erased_at IS NULL
      AND k.subject_ref = f.subject_ref AND k.key_version = f.key_version
WHERE i.id = ANY (:item_ids::bigint[])
ORDER BY i.id, f.path;

-- name: reading_policies_get
-- Policy versions by (queue, version), for every item of a page at once.
SELECT p.queue, p.version, p.fields, p.unlisted, p.visible, p.reveal_roles, p.retention_class
FROM privacy_policies AS p
JOIN unnest(:queues::text[], :versions::integer[]) AS w (queue, version)
  ON p.queue = w.queue AND p.version = w.version;

-- name: reveal_target_get
-- The item a reveal names, and the field at :path if it has one: its class, the policy that
-- split it, whether it is erased or its subject restricted. No value: that is read only once
-- the reveal is logged (reveal_log_and_open).
SELECT i.id AS item_id, i.queue, s.origin_queue AS policy_queue, s.policy_version, f.path,
       f.class, f.subject_ref, f.erased_at, ps.restricted_at IS NOT NULL AS restricted
FROM review_items AS i
LEFT JOIN review_decisions AS d ON d.id = i.qa_of
JOIN review_items AS s ON s.id = coalesce(d.item_id, i.id)
LEFT JOIN item_fields AS f
       ON f.item_id = s.id AND f.evidence_hash = i.evidence_hash AND f.path = :path
LEFT JOIN privacy_subjects AS ps ON ps.subject_ref = f.subject_ref
WHERE i.id = :item_id;

-- name: reveal_log_and_open
-- A reveal, logged, then the sealed value and its subject's wrapped key, in one statement:
-- if the log row cannot be written the statement fails and no value leaves the database.
-- The value columns are null when the field was erased (or its key shredded) meanwhile.
WITH logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, queue, item_id, subject_ref, path,
                             reason, detail)
    VALUES ('reveal', :actor, :actor_role, :queue, :item_id, :subject_ref, :path, :reason,
            jsonb_build_object('class', :field_class::text,
                               'authentication_id', :authentication_id::bigint))
    RETURNING id, at
)
SELECT l.id AS log_id, l.at AS revealed_at, v.sealed_item_id, v.subject_ref, v.path,
       v.key_version, v.nonce, v.ciphertext, v.kek_id, v.wrapped_key
FROM logged AS l
LEFT JOIN (
    SELECT s.id AS sealed_item_id, f.subject_ref, f.path, f.key_version, f.nonce,
           f.ciphertext, k.kek_id, k.wrapped_key
    FROM review_items AS i
    LEFT JOIN review_decisions AS d ON d.id = i.qa_of
    JOIN review_items AS s ON s.id = coalesce(d.item_id, i.id)
    JOIN item_fields AS f
      ON f.item_id = s.id AND f.evidence_hash = i.evidence_hash AND f.path = :path
    JOIN privacy_subject_keys AS k
      ON k.subject_ref = f.subject_ref AND k.key_version = f.key_version
    WHERE i.id = :item_id AND f.erased_at IS NULL
) AS v ON true;

-- name: field_access_report
-- Reveals in a queue over a window, per reviewer and path (privacy_log_queue_reveals).
SELECT actor AS reviewer, path, count(*) AS reveals, max(at) AS last_revealed_at
FROM privacy_log
WHERE action = 'reveal' AND queue = :queue AND at >= :since AND at < :until
GROUP BY actor, path
ORDER BY actor, path
LIMIT :limit;

-- name: disclosures_by_decision_ids
-- What each decision's reviewer was shown (migration 0027's trigger writes them).
SELECT decision_id, shown, revealed
FROM decision_disclosures
WHERE decision_id = ANY (:decision_ids::bigint[]);
