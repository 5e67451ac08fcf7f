-- name: policy_get_current
-- The policy in force on a queue, if it has one.
SELECT p.queue, p.version, p.fields, p.unlisted, p.visible, p.reveal_roles, p.retention_class
FROM queues q
JOIN privacy_policies p ON p.queue = q.name AND p.version = q.privacy_policy_version
WHERE q.name = :queue;

-- name: policy_get_version
SELECT queue, version, fields, unlisted, visible, reveal_roles, retention_class
FROM privacy_policies
WHERE queue = :queue AND version = :version;

-- name: subject_ensure
INSERT INTO privacy_subjects (subject_ref) VALUES (:subject_ref)
ON CONFLICT (subject_ref) DO NOTHING;

-- name: subject_key_get_current
-- The newest data key of a subject that is not shredded.
SELECT key_version, kek_id, wrapped_key
FROM privacy_subject_keys
WHERE subject_ref = :subject_ref AND shredded_at IS NULL
ORDER BY key_version DESC
LIMIT 1;

-- name: subject_key_get
SELECT key_version, kek_id, wrapped_key
FROM privacy_subject_keys
WHERE subject_ref = :subject_ref AND key_version = :key_version;

-- name: subject_key_insert
-- The next version of a subject's key: the first, or the one after an erasure shredded the
-- rest. Two first enqueues at once: one row wins, the other inserts nothing and reads it.
INSERT INTO privacy_subject_keys (subject_ref, key_version, kek_id, wrapped_key)
SELECT :subject_ref, coalesce(max(key_version), 0) + 1, :kek_id, :wrapped_key
FROM privacy_subject_keys
WHERE subject_ref = :subject_ref
HAVING count(*) FILTER (WHERE shredded_at IS NULL) = 0
ON CONFLICT (subject_ref, key_version) DO NOTHING
RETURNING key_version, kek_id, wrapped_key;

-- name: item_fields_insert
-- The fields of items just created or re-uploaded, under their new evidence hash. The same
-- upload again inserts nothing (its digests, and so its hash, are the same).
INSERT INTO item_fields (item_id, evidence_hash, path, class, subject_ref, digest, salt,
                         key_version, nonce, ciphertext)
SELECT * FROM unnest(:item_ids::bigint[], :evidence_hashes::text[], :paths::text[],
                     :classes::text[], :subject_refs::text[], :digests::text[], :salts::bytea[],
                     :key_versions::integer[], :nonces::bytea[], :ciphertexts::bytea[])
ON CONFLICT (item_id, evidence_hash, path) DO NOTHING;

-- name: item_fields_get
-- The current fields of items, in path order; a QA copy's are those of the decision it
-- checks (the same evidence hash, on the item decided).
SELECT i.id AS item_id, f.path, f.class, f.subject_ref, f.digest, f.salt, f.key_version,
       f.nonce, f.ciphertext, f.erased_at, f.item_id AS sealed_item_id
FROM review_items AS i
LEFT JOIN review_decisions AS d ON d.id = i.qa_of
JOIN item_fields AS f ON f.item_id = coalesce(d.item_id, i.id) AND f.evidence_hash = i.evidence_hash
WHERE i.id = ANY (:item_ids::bigint[])
ORDER BY i.id, f.path;

-- name: policy_insert_next
-- A queue's next policy version, put in force in the same statement, and logged. Versions
-- are never rewritten: items keep the version that split them.
WITH next AS (
    INSERT INTO privacy_policies AS p (queue, version, fields, unlisted, visible, reveal_roles,
                                       retention_class, created_by)
    SELECT q.name, coalesce((SELECT max(version) FROM privacy_policies WHERE queue = q.name), 0) + 1,
           :fields, :unlisted, :visible, :reveal_roles, :retention_class, :actor
    FROM queues AS q
    WHERE q.name = :queue
    RETURNING p.queue, p.version, p.fields, p.unlisted, p.visible, p.reveal_roles,
              p.retention_class, p.created_by, p.created_at
),
in_force AS (
    UPDATE queues AS q SET privacy_policy_version = next.version
    FROM next WHERE q.name = next.queue
),
logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, queue, detail)
    SELECT 'policy_set', :actor, :actor_role, next.queue,
           jsonb_build_object('version', next.version, 'fields', next.fields,
                              'unlisted', next.unlisted, 'visible', next.visible,
                              'reveal_roles', next.reveal_roles,
                              'retention_class', next.retention_class)
    FROM next
)
SELECT * FROM next;

-- name: retention_class_exists
SELECT 1 FROM retention_classes WHERE name = :name;
