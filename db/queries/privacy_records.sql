-- name: sealed_note_add
-- A note on an item under a privacy policy, or on a QA copy of one (the copy carries no
-- policy of its own: the item whose decision it checks does): item_events gets the `noted`
-- row WITHOUT its body, and sealed_note_insert stores the body sealed under the subject's
-- data key, in the same transaction (the event's id is part of the sealed body's associated
-- data, so the row comes first). Fence as item_note_add's: a review item in a queue the
-- caller's token covers (:queue_scope NULL: every queue). Hints `noted` as it does; a hint
-- never carries a body.
WITH target AS (
    SELECT i.id, i.queue, coalesce(i.subject_ref, checked.subject_ref) AS subject_ref
    FROM review_items AS i
    LEFT JOIN review_decisions AS d ON d.id = i.qa_of
    LEFT JOIN review_items AS checked ON checked.id = d.item_id
    WHERE i.id = :item_id
      AND i.kind = 'review'
      AND (:queue_scope::text[] IS NULL OR i.queue = ANY (:queue_scope))
      AND coalesce(i.policy_version, checked.policy_version) IS NOT NULL
),
noted AS (
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, body, authentication_id)
    SELECT t.id, t.queue, 'noted', :actor, :actor_role, NULL, :authentication_id
    FROM target AS t
    RETURNING *
)
SELECT n.*, 40 AS rank, n.id AS ref, t.subject_ref, hint.notification
FROM noted AS n
JOIN target AS t ON t.id = n.item_id,
     casework_hint(kind => 'noted', queue => n.queue, item_id => n.item_id)
         AS hint (notification);

-- name: sealed_note_insert
-- The sealed body of the note sealed_note_add recorded.
INSERT INTO sealed_notes (event_id, item_id, subject_ref, key_version, nonce, ciphertext)
VALUES (:event_id, :item_id, :subject_ref, :key_version, :nonce, :ciphertext);

-- name: sealed_notes_get
-- The sealed notes of these timeline events, with what decides who may open them: the
-- policy the item (or, for a QA copy, the item it checks) was enqueued under, and whether
-- its subject's processing is restricted.
SELECT n.event_id, n.item_id, n.subject_ref, n.key_version, n.nonce, n.ciphertext,
       n.erased_at, s.restricted_at,
       p.queue, p.version, p.fields, p.unlisted, p.visible, p.reveal_roles, p.retention_class
FROM sealed_notes AS n
JOIN review_items AS i ON i.id = n.item_id
LEFT JOIN review_decisions AS d ON d.id = i.qa_of
LEFT JOIN review_items AS checked ON checked.id = d.item_id
JOIN privacy_policies AS p
  ON p.queue = coalesce(checked.origin_queue, i.origin_queue)
 AND p.version = coalesce(i.policy_version, checked.policy_version)
LEFT JOIN privacy_subjects AS s ON s.subject_ref = n.subject_ref
WHERE n.event_id = ANY (:event_ids::bigint[])
ORDER BY n.event_id;

-- name: audit_fields_get
-- The current fields of items, as their audit packs carry them (a QA copy's are those of
-- the item whose decision it checks, under the same evidence hash): path, class, digest,
-- the salt while the field is not erased, the policy version that split the item, and
-- whether its subject's processing is restricted. Never a ciphertext or a nonce.
SELECT i.id AS item_id, f.path, f.class, f.subject_ref, f.digest, f.salt, f.erased_at,
       coalesce(i.policy_version, checked.policy_version) AS policy_version,
       s.restricted_at IS NOT NULL AS restricted
FROM review_items AS i
LEFT JOIN review_decisions AS d ON d.id = i.qa_of
LEFT JOIN review_items AS checked ON checked.id = d.item_id
JOIN item_fields AS f
  ON f.item_id = coalesce(d.item_id, i.id) AND f.evidence_hash = i.evidence_hash
LEFT JOIN privacy_subjects AS s ON s.subject_ref = f.subject_ref
WHERE i.id = ANY (:item_ids::bigint[])
ORDER BY i.id, f.path;

-- name: decision_note_subject
-- The subject a decision's note on this item is sealed for, when the item was enqueued
-- under a privacy policy (no row: the note is stored as it is written). One read by
-- primary key, made only for a decision that carries a note; a token's queues fence it
-- (:queue_scope NULL: every queue).
SELECT id AS item_id, subject_ref, policy_version
FROM review_items
WHERE id = :item_id
  AND policy_version IS NOT NULL
  AND subject_ref IS NOT NULL
  AND (:queue_scope::text[] IS NULL OR queue = ANY (:queue_scope));

-- name: decision_notes_get
-- What decides who may open the sealed decision notes of these policy items: the policy the
-- item was enqueued under, whether its subject's processing is restricted, whether its
-- personal fields were erased, and which of its subject's key versions are shredded (a
-- note sealed under one of those reads as erased, whatever a process still has cached).
SELECT i.id AS item_id, i.subject_ref, s.restricted_at,
       EXISTS (
           SELECT 1 FROM item_fields AS f
           WHERE f.item_id = i.id AND f.erased_at IS NOT NULL
       ) AS erased,
       coalesce((
           SELECT array_agg(k.key_version ORDER BY k.key_version)
           FROM privacy_subject_keys AS k
           WHERE k.subject_ref = i.subject_ref AND k.shredded_at IS NOT NULL
       ), '{}'::integer[]) AS shredded_versions,
       p.queue, p.version, p.fields, p.unlisted, p.visible, p.reveal_roles, p.retention_class
FROM review_items AS i
JOIN privacy_policies AS p ON p.queue = i.origin_queue AND p.version = i.policy_version
LEFT JOIN privacy_subjects AS s ON s.subject_ref = i.subject_ref
WHERE i.id = ANY (:item_ids::bigint[])
  AND i.subject_ref IS NOT NULL
ORDER BY i.id;
