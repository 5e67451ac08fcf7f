"""The statements of db/queries/redrive_delivery.sql, as symbols.

Generated from db/queries/redrive_delivery.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _redrive_deliveries_claim(
    *,
    batch_size: Any,
) -> None: ...


REDRIVE_DELIVERIES_CLAIM = Query("redrive_deliveries_claim", _redrive_deliveries_claim)
"""db/queries/redrive_delivery.sql:4

Takes up to :batch_size due deliveries for one attempt each, with what the owning system
needs: the key, where to resume, and the approved correction.
"""


def _redrive_delivery_record_delivered(
    *,
    redrive_key: Any,
    attempt: Any,
) -> None: ...


REDRIVE_DELIVERY_RECORD_DELIVERED = Query(
    "redrive_delivery_record_delivered", _redrive_delivery_record_delivered
)
"""db/queries/redrive_delivery.sql:44

Fence: only the latest attempt (:attempt) of a pending delivery counts (one that outlived
its lock must not undo the one that took over).
"""


def _redrive_delivery_record_failure(
    *,
    permanent: Any,
    next_attempt_at: Any,
    error: Any,
    redrive_key: Any,
    attempt: Any,
) -> None: ...


REDRIVE_DELIVERY_RECORD_FAILURE = Query(
    "redrive_delivery_record_failure", _redrive_delivery_record_failure
)
"""db/queries/redrive_delivery.sql:53

Retried at :next_attempt_at unless permanent or the last attempt allowed: then `failed`,
and the caller reports the redrive failed in the same transaction.
Fence: as for redrive_delivery_record_delivered.
:error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
"""
