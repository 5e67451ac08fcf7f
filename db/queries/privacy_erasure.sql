-- name: subject_lock
-- A subject, locked: erasures, holds and approvals of one subject queue up behind each other.
SELECT subject_ref, relationship_ended_at, restricted_at
FROM privacy_subjects
WHERE subject_ref = :subject_ref
FOR UPDATE;

-- name: subject_items
-- The subject's items in the caller's queues (NULL: every queue), with whether personal
-- values of theirs are left.
SELECT i.id, i.queue, i.evidence_hash, i.policy_version,
       EXISTS (SELECT 1 FROM item_fields AS f
               WHERE f.item_id = i.id AND f.erased_at IS NULL
                 AND f.class IN ('personal', 'sensitive')) AS has_personal
FROM review_items AS i
WHERE i.subject_ref = :subject_ref
  AND (:queues::text[] IS NULL OR i.queue = ANY (:queues::text[]))
ORDER BY i.id;

-- name: items_subjects
-- Items by id with their subject (NULL: not a policy item).
SELECT id, queue, subject_ref
FROM review_items
WHERE id = ANY (:item_ids::bigint[])
ORDER BY id;

-- name: subject_set_relationship_ended
-- reportRelationshipEnded: the anchor of `relationship_ended` retention, and its log row
-- (with the date it replaced, if it was reported before).
WITH before AS (
    SELECT relationship_ended_at FROM privacy_subjects WHERE subject_ref = :subject_ref
),
upserted AS (
    INSERT INTO privacy_subjects AS s (subject_ref, relationship_ended_at)
    VALUES (:subject_ref, :at)
    ON CONFLICT (subject_ref) DO UPDATE SET relationship_ended_at = excluded.relationship_ended_at
    RETURNING s.subject_ref, s.relationship_ended_at
),
logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, subject_ref, detail)
    SELECT 'relationship_ended', :actor, :actor_role, u.subject_ref,
           jsonb_build_object('at', u.relationship_ended_at,
                              'replaced', (SELECT relationship_ended_at FROM before))
    FROM upserted AS u
)
SELECT subject_ref, relationship_ended_at FROM upserted;

-- name: subject_restrict
-- GDPR Art. 18: the subject's data is shown to compliance roles only from now on.
UPDATE privacy_subjects
SET restricted_at = coalesce(restricted_at, :at)
WHERE subject_ref = :subject_ref
RETURNING restricted_at;

-- name: hold_insert
-- A hold on a subject or on items, and its log row.
WITH placed AS (
    INSERT INTO privacy_holds (subject_ref, item_ids, basis, until, placed_by)
    VALUES (:subject_ref, :item_ids::bigint[], :basis, :until, :actor)
    RETURNING id, subject_ref, item_ids, basis, until, placed_by, placed_at
),
logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, subject_ref, reason, detail)
    SELECT 'hold_placed', :actor, :actor_role, p.subject_ref, p.basis,
           jsonb_build_object('hold_id', p.id, 'item_ids', p.item_ids, 'until', p.until)
    FROM placed AS p
)
SELECT id, subject_ref, item_ids, basis, until, placed_by, placed_at,
       NULL::text AS released_by, NULL::timestamptz AS released_at, NULL::text AS release_reason
FROM placed;

-- name: hold_get
SELECT h.id, h.subject_ref, h.item_ids, h.basis, h.until, h.placed_by, h.placed_at,
       r.released_by, r.released_at, r.reason AS release_reason
FROM privacy_holds AS h
LEFT JOIN privacy_hold_releases AS r ON r.hold_id = h.id
WHERE h.id = :hold_id;

-- name: hold_release
-- Ends a hold (once: a second release inserts nothing), and its log row.
WITH released AS (
    INSERT INTO privacy_hold_releases (hold_id, released_by, reason)
    VALUES (:hold_id, :actor, :reason)
    ON CONFLICT (hold_id) DO NOTHING
    RETURNING hold_id, released_by, released_at, reason
),
logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, subject_ref, reason, detail)
    SELECT 'hold_released', :actor, :actor_role, h.subject_ref, r.reason,
           jsonb_build_object('hold_id', h.id, 'item_ids', h.item_ids)
    FROM released AS r JOIN privacy_holds AS h ON h.id = r.hold_id
)
SELECT hold_id, released_by, released_at, reason FROM released;

-- name: holds_live
-- The holds that keep any of these items (or their subject) from being erased at :now.
SELECT h.id, h.basis, h.until,
       array_agg(DISTINCT i.id ORDER BY i.id) AS item_ids
FROM review_items AS i
JOIN privacy_holds AS h
  ON h.subject_ref = i.subject_ref OR i.id = ANY (h.item_ids)
WHERE i.id = ANY (:item_ids::bigint[])
  AND NOT EXISTS (SELECT 1 FROM privacy_hold_releases AS r WHERE r.hold_id = h.id)
  AND (h.until IS NULL OR h.until > :now)
GROUP BY h.id, h.basis, h.until
ORDER BY h.id;

-- name: retention_of_items
-- Each item's retention class (the one of the policy version that split it) and when its
-- period ends: NULL ends_at with a class means the anchor has not happened yet (not decided,
-- relationship end not reported), so the period has not even started.
SELECT i.id AS item_id, c.name AS retention_class, c.basis, c.anchor, c.keep_seconds,
       a.anchor_at, a.anchor_at + make_interval(secs => c.keep_seconds) AS ends_at
FROM review_items AS i
JOIN privacy_policies AS p ON p.queue = i.origin_queue AND p.version = i.policy_version
JOIN retention_classes AS c ON c.name = p.retention_class
LEFT JOIN privacy_subjects AS s ON s.subject_ref = i.subject_ref
CROSS JOIN LATERAL (
    SELECT CASE c.anchor
               WHEN 'enqueued' THEN i.created_at
               WHEN 'decided' THEN i.decided_at
               ELSE s.relationship_ended_at
           END AS anchor_at
) AS a
WHERE i.id = ANY (:item_ids::bigint[])
ORDER BY i.id;

-- name: retention_due
-- Subjects with items whose retention period ended by :now, personal values left, and no
-- live hold: what the retention worker erases, a batch at a time.
SELECT i.subject_ref, array_agg(DISTINCT i.id ORDER BY i.id) AS item_ids
FROM item_fields AS f
JOIN review_items AS i ON i.id = f.item_id
JOIN privacy_policies AS p ON p.queue = i.origin_queue AND p.version = i.policy_version
JOIN retention_classes AS c ON c.name = p.retention_class
LEFT JOIN privacy_subjects AS s ON s.subject_ref = i.subject_ref
WHERE f.erased_at IS NULL
  AND f.class IN ('personal', 'sensitive')
  AND i.subject_ref IS NOT NULL
  AND CASE c.anchor
          WHEN 'enqueued' THEN i.created_at
          WHEN 'decided' THEN i.decided_at
          ELSE s.relationship_ended_at
      END + make_interval(secs => c.keep_seconds) <= :now
  AND NOT EXISTS (
      SELECT 1 FROM privacy_holds AS h
      WHERE (h.subject_ref = i.subject_ref OR i.id = ANY (h.item_ids))
        AND NOT EXISTS (SELECT 1 FROM privacy_hold_releases AS r WHERE r.hold_id = h.id)
        AND (h.until IS NULL OR h.until > :now))
GROUP BY i.subject_ref
ORDER BY i.subject_ref
LIMIT :batch;

-- name: erasure_request_insert
-- An erasure request, and its log row.
WITH requested AS (
    INSERT INTO erasure_requests (subject_ref, basis, requested_by, queues)
    VALUES (:subject_ref, :basis, :actor, :queues::text[])
    RETURNING id, subject_ref, basis, requested_by, requested_at, queues
),
logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, subject_ref, reason, detail)
    SELECT 'erasure_requested', :actor, :actor_role, r.subject_ref, r.basis,
           jsonb_build_object('request_id', r.id, 'queues', r.queues)
    FROM requested AS r
)
SELECT id, subject_ref, basis, requested_by, requested_at, queues FROM requested;

-- name: erasure_request_get
-- A request, with its executed outcome (the receipt) if there is one, and its latest
-- outcome otherwise.
SELECT r.id, r.subject_ref, r.basis, r.requested_by, r.requested_at, r.queues,
       o.outcome, o.decided_by, o.decided_at, o.deferred_basis, o.deferred_until, o.receipt
FROM erasure_requests AS r
LEFT JOIN LATERAL (
    SELECT * FROM erasure_outcomes AS e
    WHERE e.request_id = r.id
    ORDER BY (e.outcome = 'executed') DESC, e.id DESC
    LIMIT 1
) AS o ON true
WHERE r.id = :request_id;

-- name: erasure_outcome_insert
-- An outcome of a request, and its log row (erasure_deferred; erasure_approved for an
-- executed one: the function logged the execution itself).
WITH decided AS (
    INSERT INTO erasure_outcomes (request_id, outcome, decided_by, deferred_basis,
                                  deferred_until, receipt)
    VALUES (:request_id, :outcome, :actor, :deferred_basis, :deferred_until, :receipt)
    RETURNING id, request_id, outcome, decided_by, decided_at, deferred_basis, deferred_until,
              receipt
),
logged AS (
    INSERT INTO privacy_log (action, actor, actor_role, subject_ref, reason, detail)
    SELECT CASE d.outcome WHEN 'deferred' THEN 'erasure_deferred' ELSE 'erasure_approved' END,
           :actor, :actor_role, :subject_ref, d.deferred_basis,
           jsonb_build_object('request_id', d.request_id, 'outcome', d.outcome,
                              'deferred_until', d.deferred_until)
    FROM decided AS d
)
SELECT id, request_id, outcome, decided_by, decided_at, deferred_basis, deferred_until, receipt
FROM decided;

-- name: erasure_deferred_pending
-- Requests deferred and not carried out since: the worker looks at each again. Oldest
-- first; the approver is the one of the latest deferral.
SELECT r.id, r.subject_ref, r.queues, d.decided_by AS approved_by
FROM erasure_requests AS r
JOIN LATERAL (
    SELECT e.decided_by, e.deferred_until FROM erasure_outcomes AS e
    WHERE e.request_id = r.id ORDER BY e.id DESC LIMIT 1
) AS d ON true
WHERE NOT EXISTS (SELECT 1 FROM erasure_outcomes AS e
                  WHERE e.request_id = r.id AND e.outcome IN ('executed', 'declined'))
  AND EXISTS (SELECT 1 FROM erasure_outcomes AS e
              WHERE e.request_id = r.id AND e.outcome = 'deferred')
  AND (d.deferred_until IS NULL OR d.deferred_until <= :now)
ORDER BY r.id
LIMIT :batch;

-- name: erase_subject
-- The one way personal values, salts and keys are destroyed (migration 0028).
SELECT casework_erase_subject(:subject_ref, :item_ids::bigint[], :queues::text[],
                              :request_id::bigint, :actor, :actor_role, :reason_kind) AS result;

-- name: receipt_fields
-- The fields of items under their current evidence hash: what a receipt shows and an auditor
-- checks (digests are kept after erasure).
SELECT i.id AS item_id, i.evidence_hash, i.policy_version, f.path, f.class, f.digest,
       f.erased_at
FROM review_items AS i
JOIN item_fields AS f ON f.item_id = i.id AND f.evidence_hash = i.evidence_hash
WHERE i.id = ANY (:item_ids::bigint[])
ORDER BY i.id, f.path;

-- name: privacy_log_insert
INSERT INTO privacy_log (action, actor, actor_role, subject_ref, reason, detail)
VALUES (:action, :actor, :actor_role, :subject_ref, :reason, :detail);

-- name: subject_unrestrict
-- An erasure request carried out lifts the subject's restriction, unless another request of
-- the subject still waits on a deferral: new data of a returning subject is not withheld.
UPDATE privacy_subjects AS s
SET restricted_at = NULL
WHERE s.subject_ref = :subject_ref
  AND s.restricted_at IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM erasure_requests AS r
      WHERE r.subject_ref = s.subject_ref
        AND EXISTS (SELECT 1 FROM erasure_outcomes AS o
                    WHERE o.request_id = r.id AND o.outcome = 'deferred')
        AND NOT EXISTS (SELECT 1 FROM erasure_outcomes AS o
                        WHERE o.request_id = r.id AND o.outcome IN ('executed', 'declined')))
RETURNING s.restricted_at;
