-- name: policies_current_by_queues
-- The policy in force on each of these queues that has one (Queue.privacyPolicy).
SELECT p.queue, p.version, p.fields, p.unlisted, p.visible, p.reveal_roles, p.retention_class,
       p.created_by, p.created_at
FROM queues AS q
JOIN privacy_policies AS p ON p.queue = q.name AND p.version = q.privacy_policy_version
WHERE q.name = ANY (:queues::text[]);

-- name: retention_class_define
-- A retention class, defined once: a name already taken inserts nothing and logs nothing.
WITH defined AS (
    INSERT INTO retention_classes AS r (name, keep_seconds, anchor, basis, created_by)
    VALUES (:name, :keep_seconds, :anchor, :basis, :actor)
    ON CONFLICT (name) DO NOTHING
    RETURNING r.name, r.keep_seconds, r.anchor, r.basis, r.created_by, r.created_at
),
logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, detail)
    SELECT 'retention_class_set', :actor, :actor_role,
           jsonb_build_object('name', defined.name, 'keep_seconds', defined.keep_seconds,
                              'anchor', defined.anchor, 'basis', defined.basis)
    FROM defined
)
SELECT * FROM defined;

-- name: retention_classes_list
SELECT name, keep_seconds, anchor, basis, created_by, created_at
FROM retention_classes
ORDER BY name;

-- name: subject_keys_count_by_kek
-- The data keys not shredded, by the key-encryption key that wraps them.
SELECT kek_id, count(*) AS keys
FROM privacy_subject_keys
WHERE shredded_at IS NULL
GROUP BY kek_id
ORDER BY kek_id;

-- name: subject_keys_not_under
-- The next batch of data keys (not shredded) wrapped by another KEK than :kek_id, in key
-- order after (:after_subject, :after_version).
SELECT subject_ref, key_version, kek_id, wrapped_key
FROM privacy_subject_keys
WHERE shredded_at IS NULL
  AND kek_id <> :kek_id
  AND (subject_ref, key_version) > (:after_subject::text, :after_version::integer)
ORDER BY subject_ref, key_version
LIMIT :batch_size;

-- name: subject_keys_rewrap
-- Data keys wrapped again: only the KEK's id and the wrapped bytes change, and only where
-- the key is still as it was read (not shredded meanwhile, not re-wrapped by another run).
UPDATE privacy_subject_keys AS k
SET kek_id = u.new_kek_id, wrapped_key = u.new_wrapped
FROM unnest(:subject_refs::text[], :key_versions::integer[], :old_kek_ids::text[],
            :new_kek_ids::text[], :new_wrapped::bytea[])
     AS u (subject_ref, key_version, old_kek_id, new_kek_id, new_wrapped)
WHERE k.subject_ref = u.subject_ref
  AND k.key_version = u.key_version
  AND k.kek_id = u.old_kek_id
  AND k.shredded_at IS NULL
RETURNING k.subject_ref, k.key_version;

-- name: key_rotation_log
INSERT INTO privacy_log (action, actor, actor_role, detail)
VALUES ('key_rotated', :actor, :actor_role, :detail)
RETURNING id;
