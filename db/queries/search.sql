-- Item search across queues (server/domain/search/items.py).
--
-- A search runs in two steps. One `item_ids_*` statement reads candidate ids from the index
-- of the filter that bounds the search best (at most :scan_limit of them, in the index's
-- order); items_search_page then applies every filter to the candidates, the caller's
-- scope and the cursor, and returns the page in activity order. The item_ids_walk_*
-- statements read the activity order itself, a chunk at a time, for searches no selective
-- filter bounds: such a search stops as soon as its page is full.
--
-- :queues is the list of queues the search may read (its filter within the caller's
-- scope); NULL: every queue. Statements that walk an index led by the queue walk it one
-- queue at a time (a lateral per queue), so a queue never reads another's rows.

-- name: item_ids_walk_newest
-- review_items_activity (queue, updated_at, id), index only: each queue's items before
-- the position, newest first, at most :chunk / (number of queues) of each (at least one),
-- so a chunk reads about :chunk entries however many queues there are. Each row says how
-- many its queue was allowed (per_queue): a queue that gave that many may hold more, older
-- than its last, which is where the caller's merge of this chunk must stop.
WITH walked_queues AS (
    SELECT q.name
    FROM unnest(coalesce(:queues::text[], ARRAY(SELECT q.name FROM queues AS q))) AS q (name)
), share AS (
    SELECT greatest(1, :chunk::integer / greatest(count(*), 1))::integer AS per_queue
    FROM walked_queues
)
SELECT w.queue, w.id, w.updated_at, share.per_queue
FROM walked_queues AS q
CROSS JOIN share
CROSS JOIN LATERAL (
    SELECT i.queue, i.id, i.updated_at
    FROM review_items AS i
    WHERE i.queue = q.name
      AND (i.updated_at, i.id) < (:at::timestamptz, :id::bigint)
    ORDER BY i.updated_at DESC, i.id DESC
    LIMIT share.per_queue
) AS w
ORDER BY w.updated_at DESC, w.id DESC;

-- name: item_ids_walk_oldest
-- review_items_activity (queue, updated_at, id), index only: as item_ids_walk_newest,
-- oldest first.
WITH walked_queues AS (
    SELECT q.name
    FROM unnest(coalesce(:queues::text[], ARRAY(SELECT q.name FROM queues AS q))) AS q (name)
), share AS (
    SELECT greatest(1, :chunk::integer / greatest(count(*), 1))::integer AS per_queue
    FROM walked_queues
)
SELECT w.queue, w.id, w.updated_at, share.per_queue
FROM walked_queues AS q
CROSS JOIN share
CROSS JOIN LATERAL (
    SELECT i.queue, i.id, i.updated_at
    FROM review_items AS i
    WHERE i.queue = q.name
      AND (i.updated_at, i.id) > (:at::timestamptz, :id::bigint)
    ORDER BY i.updated_at, i.id
    LIMIT share.per_queue
) AS w
ORDER BY w.updated_at, w.id;

-- name: item_ids_find_by_subject
-- review_items_subject (subject_ref).
SELECT i.id FROM review_items AS i WHERE i.subject_ref = :subject_ref LIMIT :scan_limit;

-- name: item_ids_find_by_key_prefix
-- review_items_key_prefix (external_key COLLATE "C"): the prefix as a range of bytes,
-- :prefix up to, not including, :prefix_end (both always given: a generic plan keeps the
-- range as the index's bounds).
SELECT i.id
FROM review_items AS i
WHERE i.external_key COLLATE "C" >= :prefix::text
  AND i.external_key COLLATE "C" < :prefix_end::text
LIMIT :scan_limit;

-- name: item_ids_find_assigned
-- review_items_assigned (queue, assigned_to, …) WHERE pending and assigned.
SELECT a.id
FROM unnest(coalesce(:queues::text[], ARRAY(SELECT q.name FROM queues AS q))) AS q (name)
CROSS JOIN LATERAL (
    SELECT i.id
    FROM review_items AS i
    WHERE i.queue = q.name AND i.state = 'pending' AND i.assigned_to = :assigned_to
) AS a
LIMIT :scan_limit;

-- name: item_ids_find_held
-- review_items_held (held_until) WHERE pending and held.
SELECT i.id
FROM review_items AS i
WHERE i.state = 'pending' AND i.held_until > now()
LIMIT :scan_limit;

-- name: item_ids_find_overdue
-- review_items_due (queue, due_at) WHERE pending with a due time.
SELECT o.id
FROM unnest(coalesce(:queues::text[], ARRAY(SELECT q.name FROM queues AS q))) AS q (name)
CROSS JOIN LATERAL (
    SELECT i.id
    FROM review_items AS i
    WHERE i.queue = q.name AND i.state = 'pending' AND i.due_at <= now()
) AS o
LIMIT :scan_limit;

-- name: item_ids_find_leased
-- review_items_lease_expiry (queue, lease_expires_at) WHERE pending under a lease.
SELECT l.id
FROM unnest(coalesce(:queues::text[], ARRAY(SELECT q.name FROM queues AS q))) AS q (name)
CROSS JOIN LATERAL (
    SELECT i.id
    FROM review_items AS i
    WHERE i.queue = q.name AND i.state = 'pending' AND i.lease_token IS NOT NULL
      AND i.lease_expires_at > now()
) AS l
LIMIT :scan_limit;

-- name: item_ids_find_waiting
-- review_items_claimable (queue, reserved, priority DESC, created_at) WHERE pending: both
-- values of `reserved`, each a range of priority.
SELECT p.id
FROM unnest(coalesce(:queues::text[], ARRAY(SELECT q.name FROM queues AS q))) AS q (name)
CROSS JOIN LATERAL (
    SELECT i.id
    FROM review_items AS i
    WHERE i.queue = q.name AND i.state = 'pending'
      AND i.reserved = ANY (ARRAY[false, true])
      AND i.priority >= :priority_at_least::integer
      AND i.priority <= :priority_at_most::integer
) AS p
LIMIT :scan_limit;

-- name: item_ids_find_parked
-- review_items_parked (queue, updated_at) WHERE parked.
SELECT p.id
FROM unnest(coalesce(:queues::text[], ARRAY(SELECT q.name FROM queues AS q))) AS q (name)
CROSS JOIN LATERAL (
    SELECT i.id FROM review_items AS i WHERE i.queue = q.name AND i.state = 'parked'
) AS p
LIMIT :scan_limit;

-- name: item_ids_find_enqueued_between
-- review_items_created_brin (created_at): the window's blocks only.
SELECT i.id
FROM review_items AS i
WHERE i.created_at >= :after::timestamptz AND i.created_at < :before::timestamptz
LIMIT :scan_limit;

-- name: item_ids_find_by_decider
-- review_decisions_reviewer (reviewer, decided_at): the reviewer's decisions in the window;
-- items_search_page keeps the items whose current decision is one of them.
SELECT d.item_id AS id
FROM review_decisions AS d
WHERE d.reviewer = :reviewer AND d.item_id > 0  -- the index's condition
  AND d.decided_at >= :after::timestamptz AND d.decided_at < :before::timestamptz
LIMIT :scan_limit;

-- name: item_ids_find_by_reason
-- review_decisions_reason (reason_code, decided_at).
SELECT d.item_id AS id
FROM review_decisions AS d
WHERE d.reason_code = :reason_code AND d.item_id > 0  -- the index's condition
  AND d.decided_at >= :after::timestamptz AND d.decided_at < :before::timestamptz
LIMIT :scan_limit;

-- name: item_ids_find_by_verdict
-- review_decisions_reason (reason_code, decided_at), one range per reason code that may
-- give the verdict: a decision's reason is one its queue allows for the verdict (an
-- overturn's, for the outcome it gives), so no index of its own is needed for it.
-- A lateral per code, as per queue elsewhere: one index range each, whatever the plan.
SELECT v.id
FROM (SELECT DISTINCT r.code FROM reason_codes AS r WHERE :verdict::text = ANY (r.verdicts))
    AS c
CROSS JOIN LATERAL (
    SELECT d.item_id AS id
    FROM review_decisions AS d
    WHERE d.reason_code = c.code AND d.item_id > 0  -- the index's condition
      AND d.decided_at >= :after::timestamptz AND d.decided_at < :before::timestamptz
      AND d.outcome = :verdict
    LIMIT :scan_limit
) AS v
LIMIT :scan_limit;

-- name: item_ids_find_overturned
-- review_decisions_one_overturn_each (supersedes) WHERE it supersedes one: overturns and
-- overrides, the overrides left out.
SELECT d.item_id AS id
FROM review_decisions AS d
WHERE d.supersedes IS NOT NULL AND d.verdict = 'overturn'
  AND d.decided_at >= :after::timestamptz AND d.decided_at < :before::timestamptz
LIMIT :scan_limit;

-- name: item_ids_find_provisional
-- review_decisions_provisional (decided_at) WHERE provisional.
SELECT d.item_id AS id
FROM review_decisions AS d
WHERE d.provisional
  AND d.decided_at >= :after::timestamptz AND d.decided_at < :before::timestamptz
LIMIT :scan_limit;

-- name: item_ids_find_decided_between
-- review_decisions_decided_brin (decided_at): the window's blocks only.
SELECT d.item_id AS id
FROM review_decisions AS d
WHERE d.decided_at >= :after::timestamptz AND d.decided_at < :before::timestamptz
LIMIT :scan_limit;

-- name: item_ids_find_noted
-- item_events_queue_kind_at (queue, kind, at): the notes written in each queue (every
-- queue: an item keeps its notes when it moves); items_search_page applies the scope.
-- The lateral's own LIMIT keeps it a lateral, one index range per queue, not a join over
-- the whole timeline.
SELECT n.id
FROM unnest(ARRAY(SELECT q.name FROM queues AS q)) AS q (name)
CROSS JOIN LATERAL (
    SELECT e.item_id AS id
    FROM item_events AS e
    WHERE e.queue = q.name AND e.kind = 'noted'
    LIMIT :scan_limit
) AS n
LIMIT :scan_limit;

-- name: items_search_page
-- The candidates :ids (review_items_pkey) that every filter matches, in the caller's
-- queues (:queues NULL: every queue), after the cursor (:at and :id; NULL: from the
-- start) and up to :until_at and :until_id (included; NULL: no end), in activity order
-- (:newest: newest first), at most :page_size of them.
-- The candidates were read a statement earlier, and an item may have changed since (a
-- claim, a decision): both bounds hold it to where it is now. A walk of the activity order
-- passes the span it read, so an item that has moved out of it is left for its new place
-- rather than shown here under a time that would send the next page's cursor back.
-- A NULL filter does not filter. The decision filters read the item's current decision,
-- the latest of its decisions (review_decisions_item), only when :by_decision.
-- :states are the states a reader sees: `leased` is a pending item under a live lease.
SELECT i.*
FROM unnest(:ids::bigint[]) AS c (id)
-- One primary-key probe per candidate, whatever the estimates: LIMIT keeps it a lateral,
-- so the planner cannot trade it for a scan of another index of review_items.
CROSS JOIN LATERAL (SELECT r.* FROM review_items AS r WHERE r.id = c.id LIMIT 1) AS i
LEFT JOIN LATERAL (
    SELECT d.reviewer, d.outcome, d.verdict, d.reason_code, d.decided_at,
           d.provisional AND (
               SELECT true FROM decision_confirmations AS f WHERE f.decision_id = d.id LIMIT 1
           ) IS NULL AS provisional
    FROM review_decisions AS d
    WHERE d.item_id = i.id AND :by_decision::boolean
    ORDER BY d.id DESC
    LIMIT 1
) AS d ON true
WHERE (:queues::text[] IS NULL OR i.queue = ANY (:queues))
  AND (:states::text[] IS NULL
       OR CASE WHEN i.state <> 'pending' THEN i.state::text
               WHEN i.lease_expires_at > now() THEN 'leased'
               ELSE 'pending' END = ANY (:states))
  AND (:key_prefix::text IS NULL OR starts_with(i.external_key, :key_prefix))
  AND (:subject_ref::text IS NULL OR i.subject_ref = :subject_ref)
  AND (:priority_at_least::integer IS NULL OR i.priority >= :priority_at_least)
  AND (:priority_at_most::integer IS NULL OR i.priority <= :priority_at_most)
  AND (:enqueued_after::timestamptz IS NULL OR i.created_at >= :enqueued_after)
  AND (:enqueued_before::timestamptz IS NULL OR i.created_at < :enqueued_before)
  AND (:decided_after::timestamptz IS NULL OR d.decided_at >= :decided_after)
  AND (:decided_before::timestamptz IS NULL OR d.decided_at < :decided_before)
  AND (:decided_by::text IS NULL OR d.reviewer = :decided_by)
  AND (:verdict::text IS NULL OR d.outcome = :verdict)
  AND (:reason_code::text IS NULL OR d.reason_code = :reason_code)
  AND (:provisional::boolean IS NULL OR d.provisional = :provisional)
  AND (:overturned::boolean IS NULL OR (d.verdict = 'overturn') = :overturned)
  AND (:assigned_to::text IS NULL
       OR (i.state = 'pending' AND i.assigned_to = :assigned_to
           AND (i.assigned_until IS NULL OR i.assigned_until > now())))
  AND (:held::boolean IS NULL
       OR coalesce(i.state = 'pending' AND i.held_until > now(), false) = :held)
  AND (:overdue::boolean IS NULL
       OR coalesce(i.state = 'pending' AND i.due_at <= now(), false) = :overdue)
  -- A probe per candidate (item_events_item) with LIMIT, never hashed over the timeline.
  AND (:has_notes::boolean IS NULL
       OR (SELECT true FROM item_events AS e WHERE e.item_id = i.id AND e.kind = 'noted'
           LIMIT 1) IS NOT NULL = :has_notes)
  AND (:at::timestamptz IS NULL
       OR CASE WHEN :newest::boolean THEN (i.updated_at, i.id) < (:at, :id::bigint)
               ELSE (i.updated_at, i.id) > (:at, :id::bigint) END)
  AND (:until_at::timestamptz IS NULL
       OR CASE WHEN :newest::boolean
               THEN (i.updated_at, i.id) >= (:until_at, :until_id::bigint)
               ELSE (i.updated_at, i.id) <= (:until_at, :until_id::bigint) END)
ORDER BY CASE WHEN :newest THEN i.updated_at END DESC,
         CASE WHEN :newest THEN i.id END DESC,
         i.updated_at, i.id
LIMIT :page_size;
