"""The statements of db/queries/lookups.sql, as symbols.

Generated from db/queries/lookups.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/lookups.sql:3
ITEMS_GET_BY_EXTERNAL_KEY = Query("items_get_by_external_key", lambda *, external_key, origin_queue: None)
"""The items enqueued under :external_key: into :origin_queue when given, else into any
queue. Served by review_items_origin_queue_external_key_key (origin_queue, external_key),
one probe per origin queue (the queues table is the list of them; every origin queue is
one of its rows), so no index on the key alone is needed. Where each item is now is its
`queue`; the caller decides what it may see from that.
"""
