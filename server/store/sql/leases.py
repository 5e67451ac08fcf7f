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


def _leases_get_next_expiry(
    *,
    queues: Any,
    after: Any,
) -> None: ...


LEASES_GET_NEXT_EXPIRY = Query("leases_get_next_expiry", _leases_get_next_expiry)
"""db/queries/leases.sql:62

The next moment a live lease in these queues runs out, after :after.
"""


def _leases_get_expired_between(
    *,
    queues: Any,
    after: Any,
    until: Any,
) -> None: ...


LEASES_GET_EXPIRED_BETWEEN = Query("leases_get_expired_between", _leases_get_expired_between)
"""db/queries/leases.sql:71

Leases that ran out in (after, until]: what the expiry timer announces. Reads only.
"""
