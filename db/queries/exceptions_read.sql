-- Reads of exceptions. Overdue and the effective owner are evaluated here, at query time,
-- exactly as the next claim would: an exception waiting for review past its due time, and
-- not under a live lease, belongs to its escalation owner, whether or not a claim has
-- moved it yet.

-- name: exceptions_get_by_ids
SELECT e.*,
       e.state IN ('needs_review', 'awaiting_approval') AND e.due_at <= now() AS overdue,
       CASE WHEN e.state = 'needs_review' AND e.escalated_at IS NULL AND e.due_at <= now()
                 AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
            THEN e.escalation_role ELSE e.owner_role END AS effective_owner_role,
       i.queue AS item_queue, i.state AS item_state, i.lease_owner, i.lease_token,
       i.lease_expires_at, i.lease_expires_at > now() AS lease_live,
       w.approval_queue, r.allowed_actions, r.label AS reason_label,
       r.owner_role AS reason_owner_role
FROM exceptions AS e
JOIN review_items AS i ON i.id = e.item_id
JOIN workflows AS w ON w.name = e.workflow
JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
WHERE e.id = ANY (:ids::text[]);

-- name: exception_ids_get_by_item_ids
SELECT e.item_id, e.id FROM exceptions AS e WHERE e.item_id = ANY (:item_ids::bigint[]);

-- name: exceptions_get_about_items
-- Every exception about each item of :item_ids, for its audit pack (server/domain/quality/audit.py),
-- oldest first: the item's own (an exception's item) and those raised because one of its
-- decisions could not be carried out (workflow :apply_workflow, whose source record is the
-- decision id: exceptions_source). `about_item_id` names the item; `item_queue`,
-- `approval_queue` and `reason_owner_role` are, with the owner and escalation roles, the
-- queues that see the exception (ExceptionRecord.queues).
WITH about AS (
    SELECT e.item_id AS about_item_id, e.id
    FROM exceptions AS e
    WHERE e.item_id = ANY (:item_ids::bigint[])
    UNION
    SELECT d.item_id, e.id
    FROM review_decisions AS d
    JOIN exceptions AS e
      ON e.workflow = :apply_workflow AND e.source_record_id = d.id::text
    WHERE d.item_id = ANY (:item_ids::bigint[])
)
SELECT a.about_item_id, e.*,
       i.queue AS item_queue, w.approval_queue, r.owner_role AS reason_owner_role
FROM about AS a
JOIN exceptions AS e ON e.id = a.id
JOIN review_items AS i ON i.id = e.item_id
JOIN workflows AS w ON w.name = e.workflow
JOIN exception_reasons AS r ON r.workflow = e.workflow AND r.code = e.reason_code
ORDER BY a.about_item_id, e.id;

-- name: exceptions_get_page
-- One page of exceptions, oldest first (ids sort by time), filtered; every filter is
-- optional (NULL). The caller's queue scope limits what it sees.
-- :owner_role is the effective owner (overdue evaluated as the claim would).
SELECT e.id
FROM exceptions AS e
JOIN workflows AS w ON w.name = e.workflow
JOIN review_items AS i ON i.id = e.item_id
WHERE (:workflow::text IS NULL OR e.workflow = :workflow)
  AND (:state::text IS NULL OR e.state = :state)
  AND (:owner_role::text IS NULL
       OR :owner_role = CASE WHEN e.state = 'needs_review' AND e.escalated_at IS NULL
                         AND e.due_at <= now()
                         AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
                    THEN e.escalation_role ELSE e.owner_role END)
  AND (:overdue::boolean IS NULL
       OR :overdue = (e.state IN ('needs_review', 'awaiting_approval') AND e.due_at <= now()))
  AND (:source_record_id::text IS NULL OR e.source_record_id = :source_record_id)
  AND e.id > :after_id
  AND (:queue_scope::text[] IS NULL OR e.owner_role = ANY (:queue_scope)
       OR e.escalation_role = ANY (:queue_scope)
       OR w.approval_queue = ANY (:queue_scope)
       OR EXISTS (SELECT 1 FROM exception_reasons AS r
                  WHERE r.workflow = e.workflow AND r.code = e.reason_code
                    AND r.owner_role = ANY (:queue_scope)))
ORDER BY e.id
LIMIT :page_size;

-- name: exception_events_get_by_exception_ids
SELECT v.* FROM exception_events AS v
WHERE v.exception_id = ANY (:exception_ids::text[])
ORDER BY v.exception_id, v.id;

-- name: exception_corrections_get_by_exception_ids
-- Every correction version of each exception, oldest first.
SELECT c.* FROM exception_corrections AS c
WHERE c.exception_id = ANY (:exception_ids::text[])
ORDER BY c.exception_id, c.version;

-- name: exception_redrives_get_by_exception_ids
SELECT x.* FROM exception_redrives AS x
WHERE x.exception_id = ANY (:exception_ids::text[])
ORDER BY x.exception_id, x.version;

-- name: exception_redrive_get
SELECT x.* FROM exception_redrives AS x WHERE x.key = :redrive_key;

-- name: exception_event_get_position
-- Where an event sits in its workflow's commit-ordered stream.
SELECT v.workflow, v.txid, v.id FROM exception_events AS v WHERE v.id = :event_id;

-- name: exception_events_get_after_position
-- The next events of a workflow in commit-safe order (see decisions_get_after_position).
SELECT v.*
FROM exception_events AS v
WHERE v.workflow = :workflow
  AND (v.txid, v.id) > (:after_txid::xid8, :after_id::bigint)
  AND v.txid < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY v.txid, v.id
LIMIT :page_size;

-- name: exceptions_get_by_source_record_id
-- Every exception raised for :source_record_id, in :workflow when given, else in any
-- workflow. Served by exceptions_source_record (source_record_id); within a workflow a
-- record can have several (one open per reason code, exceptions_open_once, and any number
-- closed), so they come open first, then newest first, per workflow.
SELECT e.id, e.workflow
FROM exceptions AS e
WHERE e.source_record_id = :source_record_id
  AND (:workflow::text IS NULL OR e.workflow = :workflow)
ORDER BY e.workflow, e.state = 'closed', e.created_at DESC, e.id DESC;

-- name: exceptions_get_page_by_activity
-- One page of exceptions by latest activity (`updated_at`, which every change of an
-- exception sets), newest or oldest first as :newest_first says, ties by id, after the
-- keyset (:after_at, :after_id); the filters and the scope are exceptions_get_page's.
-- Served by exceptions_activity (updated_at, id), walked in either direction from the
-- keyset (an index condition); both orders are here, the one not asked for behind a
-- one-time filter, so a generic plan holds both. As in exceptions_get_page, the filters are
-- checked on the rows the walk reads.
(SELECT e.id, e.updated_at
 FROM exceptions AS e
 JOIN workflows AS w ON w.name = e.workflow
 JOIN review_items AS i ON i.id = e.item_id
 WHERE :newest_first
   AND (e.updated_at, e.id) < (:after_at::timestamptz, :after_id::text)
   AND (:workflow::text IS NULL OR e.workflow = :workflow)
   AND (:state::text IS NULL OR e.state = :state)
   AND (:owner_role::text IS NULL
        OR :owner_role = CASE WHEN e.state = 'needs_review' AND e.escalated_at IS NULL
                          AND e.due_at <= now()
                          AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
                     THEN e.escalation_role ELSE e.owner_role END)
   AND (:overdue::boolean IS NULL
        OR :overdue = (e.state IN ('needs_review', 'awaiting_approval') AND e.due_at <= now()))
   AND (:source_record_id::text IS NULL OR e.source_record_id = :source_record_id)
   AND (:queue_scope::text[] IS NULL OR e.owner_role = ANY (:queue_scope)
        OR e.escalation_role = ANY (:queue_scope)
        OR w.approval_queue = ANY (:queue_scope)
        OR EXISTS (SELECT 1 FROM exception_reasons AS r
                   WHERE r.workflow = e.workflow AND r.code = e.reason_code
                     AND r.owner_role = ANY (:queue_scope)))
 ORDER BY e.updated_at DESC, e.id DESC
 LIMIT :page_size)
UNION ALL
(SELECT e.id, e.updated_at
 FROM exceptions AS e
 JOIN workflows AS w ON w.name = e.workflow
 JOIN review_items AS i ON i.id = e.item_id
 WHERE NOT :newest_first
   AND (e.updated_at, e.id) > (:after_at::timestamptz, :after_id::text)
   AND (:workflow::text IS NULL OR e.workflow = :workflow)
   AND (:state::text IS NULL OR e.state = :state)
   AND (:owner_role::text IS NULL
        OR :owner_role = CASE WHEN e.state = 'needs_review' AND e.escalated_at IS NULL
                          AND e.due_at <= now()
                          AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
                     THEN e.escalation_role ELSE e.owner_role END)
   AND (:overdue::boolean IS NULL
        OR :overdue = (e.state IN ('needs_review', 'awaiting_approval') AND e.due_at <= now()))
   AND (:source_record_id::text IS NULL OR e.source_record_id = :source_record_id)
   AND (:queue_scope::text[] IS NULL OR e.owner_role = ANY (:queue_scope)
        OR e.escalation_role = ANY (:queue_scope)
        OR w.approval_queue = ANY (:queue_scope)
        OR EXISTS (SELECT 1 FROM exception_reasons AS r
                   WHERE r.workflow = e.workflow AND r.code = e.reason_code
                     AND r.owner_role = ANY (:queue_scope)))
 ORDER BY e.updated_at, e.id
 LIMIT :page_size);
