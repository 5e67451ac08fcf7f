"""The statements of db/queries/decisions_read.sql, as symbols.

Generated from db/queries/decisions_read.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/decisions_read.sql:11
DECISIONS_GET_BY_IDS = Query("decisions_get_by_ids", lambda *, ids: None)

# db/queries/decisions_read.sql:20
DECISIONS_GET_BY_ITEM_IDS = Query("decisions_get_by_item_ids", lambda *, item_ids: None)
"""Every decision of each item, oldest first."""

# db/queries/decisions_read.sql:31
DECISIONS_GET_PAGES = Query("decisions_get_pages", lambda *, queues, after_id, page_size: None)
"""One page of decisions for each queue of :queues (a dashboard's), oldest first, whatever
their status: one statement for every queue of a request.
"""

# db/queries/decisions_read.sql:52
DECISION_GET_POSITION = Query("decision_get_position", lambda *, decision_id: None)
"""Where a decision sits in its queue's commit-ordered stream: at the transaction that made
it effective (its own, or its confirmation's). `in_stream` is false for a provisional
decision nobody has confirmed: the stream has not delivered it.
"""

# db/queries/decisions_read.sql:62
DECISIONS_GET_STREAM_HORIZON = Query("decisions_get_stream_horizon", lambda: None)
"""Every transaction below this id has ended: no decision below it can still appear."""

# db/queries/decisions_read.sql:66
DECISIONS_GET_AFTER_POSITION = Query("decisions_get_after_position", lambda *, queue, after_txid, after_id, page_size: None)
"""The next decisions of a queue in commit-safe order: after the position, and only from
transactions below the horizon, so a late commit can never land behind the cursor.
Each decision is delivered once, when it takes effect: a decision that needed no second
review at its own transaction, a provisional one at its confirmation's (an override is a
decision of its own). A provisional decision is never delivered before it is confirmed,
and one that was overridden never is: an integration acting on this stream acts only on
effective decisions. `position_txid` is the position's transaction.
"""

# db/queries/decisions_read.sql:103
DECISION_CONFIRMATIONS_GET_BY_DECISION_IDS = Query("decision_confirmations_get_by_decision_ids", lambda *, decision_ids: None)
"""The second reviews that confirmed these decisions (migration 0020), for audit packs."""
