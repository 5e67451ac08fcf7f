"""The statements of db/queries/leases.sql, as symbols.

Generated from db/queries/leases.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _lease_renew(
    *,
    item_id: Any,
    lease_token: Any,
    actor: Any,
    queue_scope: Any,
    actor_role: Any,
) -> None: ...


LEASE_RENEW = Query("lease_renew", _lease_renew)
"""db/queries/leases.sql:1

The renewal is written to the item's timeline (`item_events`, kind `renewed`, with the
new expiry as `until`).
Fence: the token must match a live lease of the caller on a pending item, in a queue the
caller's token covers.
"""


def _lease_release(
    *,
    item_id: Any,
    lease_token: Any,
    actor: Any,
    queue_scope: Any,
    actor_role: Any,
) -> None: ...


LEASE_RELEASE = Query("lease_release", _lease_release)
"""db/queries/leases.sql:32

A released item is claimable at once and is not an abandonment. The release is written
to the item's timeline (`item_events`, kind `released`).
Fence: the token must match a live lease of the caller on a pending item, in a queue the
caller's token covers.
"""


def _deadlines_get_next(
    *,
    queues: Any,
    after: Any,
) -> None: ...


DEADLINES_GET_NEXT = Query("deadlines_get_next", _deadlines_get_next)
"""db/queries/leases.sql:62

What the process timer waits for, after :after: the next moment a live lease in these
queues runs out, and the next moment a waiting item in them falls due. Reads only.
"""


def _leases_get_expired_between(
    *,
    queues: Any,
    after: Any,
    until: Any,
) -> None: ...


LEASES_GET_EXPIRED_BETWEEN = Query("leases_get_expired_between", _leases_get_expired_between)
"""db/queries/leases.sql:77

Leases that ran out in (after, until]: what the expiry timer announces. Reads only.
"""


def _lease_revoke(
    *,
    item_id: Any,
    queue_scope: Any,
    actor: Any,
    actor_role: Any,
    reason: Any,
) -> None: ...


LEASE_REVOKE = Query("lease_revoke", _lease_revoke)
"""db/queries/leases.sql:88

A manager ends someone else's live lease: the holder's token is stale at once (its next
renew, release or decision is refused), the item is claimable again, and the revocation
is not an abandonment. The timeline row (`revoked`) carries the revoked lease's token,
start and owner, the manager and the reason.
Fence: a live lease on a pending item, in a queue the caller's token covers. `target`
reads the lease from the row it locks, so the row written is the lease that ended.
"""


def _leases_get_held(
    *,
    actor: Any,
    queue: Any,
    queue_scope: Any,
) -> None: ...


LEASES_GET_HELD = Query("leases_get_held", _leases_get_held)
"""db/queries/leases.sql:128

The caller's live leases, soonest to run out first: in :queue (NULL: every queue the
token covers, :queue_scope NULL: all). Reads the live leases of those queues
(review_items_lease_expiry) and keeps the caller's.
"""
