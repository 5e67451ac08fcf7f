-- name: decisions_get_by_ids
-- $1 ids
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.id = ANY ($1::bigint[]);

-- name: decisions_get_by_item_ids
-- Every decision of each item, oldest first.
-- $1 item ids
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.item_id = ANY ($1::bigint[])
ORDER BY d.item_id, d.id;

-- name: decisions_page
-- One page of a queue's decisions, oldest first.
-- $1 queue, $2 exclusive lower bound on id, $3 page size
SELECT d.*, s.id AS superseded_by
FROM review_decisions AS d
LEFT JOIN review_decisions AS s ON s.supersedes = d.id
WHERE d.queue = $1 AND d.id > $2
ORDER BY d.id
LIMIT $3;
