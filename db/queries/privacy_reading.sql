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

-- name: reading_field_get
-- One field of an item, sealed value included, for a reveal (after it is logged).
SELECT i.id AS item_id, s.id AS sealed_item_id, s.origin_queue AS policy_queue,
       s.policy_version, f.path, f.class, f.subject_ref, f.digest, f.erased_at,
       ps.restricted_at IS NOT NULL AS restricted, f.key_version, f.nonce, f.ciphertext,
       k.kek_id, k.wrapped_key
FROM review_items AS i
LEFT JOIN review_decisions AS d ON d.id = i.qa_of
JOIN review_items AS s ON s.id = coalesce(d.item_id, i.id)
JOIN item_fields AS f ON f.item_id = s.id AND f.evidence_hash = i.evidence_hash
LEFT JOIN privacy_subjects AS ps ON ps.subject_ref = f.subject_ref
LEFT JOIN privacy_subject_keys AS k
       ON f.erased_at IS NULL AND k.subject_ref = f.subject_ref
      AND k.key_version = f.key_version
WHERE i.id = :item_id AND f.path = :path;

-- name: reading_policies_get
-- Policy versions by (queue, version), for every item of a page at once.
SELECT p.queue, p.version, p.fields, p.unlisted, p.visible, p.reveal_roles, p.retention_class
FROM privacy_policies AS p
JOIN unnest(:queues::text[], :versions::integer[]) AS w (queue, version)
  ON p.queue = w.queue AND p.version = w.version;
