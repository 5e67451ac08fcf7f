"""The statements of db/queries/decisions_read.sql, as symbols.

Generated from db/queries/decisions_read.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _decisions_get_by_ids(
    *,
    ids: Any,
) -> None: ...


DECISIONS_GET_BY_IDS = Query("decisions_get_by_ids", _decisions_get_by_ids)
"""db/queries/decisions_read.sql:5"""


def _decisions_get_by_item_ids(
    *,
    item_ids: Any,
) -> None: ...


DECISIONS_GET_BY_ITEM_IDS = Query("decisions_get_by_item_ids", _decisions_get_by_item_ids)
"""db/queries/decisions_read.sql:12

Every decision of each item, oldest first.
"""


def _decisions_get_pages(
    *,
    queues: Any,
    after_id: Any,
    page_size: Any,
) -> None: ...


DECISIONS_GET_PAGES = Query("decisions_get_pages", _decisions_get_pages)
"""db/queries/decisions_read.sql:21

One page of decisions for each queue of :queues (a dashboard's), oldest first, whatever
their status: one statement for every queue of a request.
"""


def _decision_get_position(
    *,
    decision_id: Any,
) -> None: ...


DECISION_GET_POSITION = Query("decision_get_position", _decision_get_position)
"""db/queries/decisions_read.sql:40

Where a decision sits in its queue's commit-ordered stream: at the transaction that made
it effective (its own, or its confirmation's). `in_stream` is false for a provisional
decision nobody has confirmed: the stream has not delivered it.
"""


def _decisions_get_stream_horizon() -> None: ...


DECISIONS_GET_STREAM_HORIZON = Query("decisions_get_stream_horizon", _decisions_get_stream_horizon)
"""db/queries/decisions_read.sql:50

Every transaction below this id has ended: no decision below it can still appear.
"""


def _decisions_get_after_position(
    *,
    queue: Any,
    after_txid: Any,
    after_id: Any,
    page_size: Any,
) -> None: ...


DECISIONS_GET_AFTER_POSITION = Query("decisions_get_after_position", _decisions_get_after_position)
"""db/queries/decisions_read.sql:54

The next decisions of a queue in commit-safe order: after the position, and only from
transactions below the horizon, so a late commit can never land behind the cursor.
Each decision is delivered once, when it takes effect: a decision that needed no second
review at its own transaction, a provisional one at its confirmation's (an override is a
decision of its own). A provisional decision is never delivered before it is confirmed,
and one that was overridden never is: an integration acting on this stream acts only on
effective decisions. `position_txid` is the position's transaction.
"""


def _decision_confirmations_get_by_decision_ids(
    *,
    decision_ids: Any,
) -> None: ...


DECISION_CONFIRMATIONS_GET_BY_DECISION_IDS = Query(
    "decision_confirmations_get_by_decision_ids", _decision_confirmations_get_by_decision_ids
)
"""db/queries/decisions_read.sql:89

The second reviews that confirmed these decisions (migration 0020), for audit packs.
"""
