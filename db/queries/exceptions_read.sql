-- Reads of exceptions. Overdue and the effective owner are evaluated here, at query time,
-- exactly as the next claim would: an exception waiting for review past its due time, and
-- not under a live lease, belongs to its escalation owner, whether or not a claim has
-- moved it yet.

-- name: exceptions_get_by_ids
-- $1 exception ids
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
WHERE e.id = ANY ($1::text[]);

-- name: exception_ids_by_item_ids
-- $1 item ids
SELECT e.item_id, e.id FROM exceptions AS e WHERE e.item_id = ANY ($1::bigint[]);

-- name: exceptions_page
-- One page of exceptions, oldest first (ids sort by time), filtered; every filter is
-- optional (NULL). The caller's queue scope limits what it sees.
-- $1 workflow, $2 state, $3 owner role (effective), $4 overdue, $5 source record id,
-- $6 exclusive lower bound on id, $7 page size, $8 queue scope
SELECT e.id
FROM exceptions AS e
JOIN workflows AS w ON w.name = e.workflow
JOIN review_items AS i ON i.id = e.item_id
WHERE ($1::text IS NULL OR e.workflow = $1)
  AND ($2::text IS NULL OR e.state = $2)
  AND ($3::text IS NULL
       OR $3 = CASE WHEN e.state = 'needs_review' AND e.escalated_at IS NULL
                         AND e.due_at <= now()
                         AND (i.lease_expires_at IS NULL OR i.lease_expires_at <= now())
                    THEN e.escalation_role ELSE e.owner_role END)
  AND ($4::boolean IS NULL
       OR $4 = (e.state IN ('needs_review', 'awaiting_approval') AND e.due_at <= now()))
  AND ($5::text IS NULL OR e.source_record_id = $5)
  AND e.id > $6
  AND ($8::text[] IS NULL OR e.owner_role = ANY ($8) OR e.escalation_role = ANY ($8)
       OR w.approval_queue = ANY ($8)
       OR EXISTS (SELECT 1 FROM exception_reasons AS r
                  WHERE r.workflow = e.workflow AND r.code = e.reason_code
                    AND r.owner_role = ANY ($8)))
ORDER BY e.id
LIMIT $7;

-- name: exception_events_get_by_exception_ids
-- $1 exception ids
SELECT v.* FROM exception_events AS v
WHERE v.exception_id = ANY ($1::text[])
ORDER BY v.exception_id, v.id;

-- name: exception_corrections_get_by_exception_ids
-- Every correction version of each exception, oldest first.
-- $1 exception ids
SELECT c.* FROM exception_corrections AS c
WHERE c.exception_id = ANY ($1::text[])
ORDER BY c.exception_id, c.version;

-- name: exception_redrives_get_by_exception_ids
-- $1 exception ids
SELECT x.* FROM exception_redrives AS x
WHERE x.exception_id = ANY ($1::text[])
ORDER BY x.exception_id, x.version;

-- name: exception_redrive_get
-- $1 redrive key
SELECT x.* FROM exception_redrives AS x WHERE x.key = $1;

-- name: exception_event_position
-- Where an event sits in its workflow's commit-ordered stream.
-- $1 event id
SELECT v.workflow, v.txid, v.id FROM exception_events AS v WHERE v.id = $1;

-- name: exception_events_after_position
-- The next events of a workflow in commit-safe order (see decisions_after_position).
-- $1 workflow, $2 position txid, $3 position id, $4 page size
SELECT v.*
FROM exception_events AS v
WHERE v.workflow = $1
  AND (v.txid, v.id) > ($2::xid8, $3::bigint)
  AND v.txid < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY v.txid, v.id
LIMIT $4;
