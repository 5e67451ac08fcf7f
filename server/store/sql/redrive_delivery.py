"""The statements of db/queries/redrive_delivery.sql, as symbols.

Generated from db/queries/redrive_delivery.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/redrive_delivery.sql:4
REDRIVE_DELIVERIES_CLAIM = Query("redrive_deliveries_claim", lambda *, batch_size: None)
"""Takes up to :batch_size due deliveries for one attempt each, with what the owning system
needs: the key, where to resume, and the approved correction; and how to sign it (the
workflow's current secret, the rotated-out ones still in their overlap, newest first,
and whether the legacy headers go too: migration 0032).
"""

# db/queries/redrive_delivery.sql:50
REDRIVE_DELIVERY_RECORD_DELIVERED = Query("redrive_delivery_record_delivered", lambda *, redrive_key, attempt: None)
"""Fence: only the latest attempt (:attempt) of a pending delivery counts (one that outlived
its lock must not undo the one that took over).
"""

# db/queries/redrive_delivery.sql:59
REDRIVE_DELIVERY_RECORD_FAILURE = Query("redrive_delivery_record_failure", lambda *, permanent, next_attempt_at, error, redrive_key, attempt: None)
"""Retried at :next_attempt_at unless permanent or the last attempt allowed: then `failed`,
and the caller reports the redrive failed in the same transaction.
Fence: as for redrive_delivery_record_delivered.
:error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
"""
