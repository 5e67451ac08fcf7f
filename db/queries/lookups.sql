-- Look-ups by the keys integrations hold (server/domain/search/lookups.py).

-- name: items_get_by_external_key
-- The items enqueued under :external_key: into :origin_queue when given, else into any
-- queue. Served by review_items_origin_queue_external_key_key (origin_queue, external_key),
-- one probe per origin queue (the queues table is the list of them; every origin queue is
-- one of its rows), so no index on the key alone is needed. Where each item is now is its
-- `queue`; the caller decides what it may see from that.
SELECT i.*
FROM queues AS q
JOIN review_items AS i ON i.origin_queue = q.name AND i.external_key = :external_key
WHERE (:origin_queue::text IS NULL OR q.name = :origin_queue)
ORDER BY i.origin_queue;
