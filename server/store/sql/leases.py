"""The statements of db/queries/leases.sql, as symbols.

Generated from db/queries/leases.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/leases.sql:1
LEASE_RENEW = Query("lease_renew", lambda *, item_id, lease_token, actor, queue_scope, actor_role: None)
"""The renewal is written to the item's timeline (`item_events`, kind `renewed`, with the
new expiry as `until`).
Fence: the token must match a live lease of the caller on a pending item, in a queue the
caller's token covers.
"""

# db/queries/leases.sql:32
LEASE_RELEASE = Query("lease_release", lambda *, item_id, lease_token, actor, queue_scope, actor_role: None)
"""A released item is claimable at once and is not an abandonment. The release is written
to the item's timeline (`item_events`, kind `released`).
Fence: the token must match a live lease of the caller on a pending item, in a queue the
caller's token covers.
"""

# db/queries/leases.sql:62
DEADLINES_GET_NEXT = Query("deadlines_get_next", lambda *, queues, after: None)
"""What the process timer waits for, after :after: the next moment a live lease in these
queues runs out, and the next moment a waiting item in them falls due. Reads only.
"""

# db/queries/leases.sql:77
LEASES_GET_EXPIRED_BETWEEN = Query("leases_get_expired_between", lambda *, queues, after, until: None)
"""Leases that ran out in (after, until]: what the expiry timer announces. Reads only."""

# db/queries/leases.sql:88
LEASE_REVOKE = Query("lease_revoke", lambda *, item_id, queue_scope, actor, actor_role, reason, authentication_id: None)
"""A manager ends someone else's live lease: the holder's token is stale at once (its next
renew, release or decision is refused), the item is claimable again, and the revocation
is not an abandonment. The timeline row (`revoked`) carries the revoked lease's token,
start and owner, the manager and the reason.
Fence: a live lease on a pending item, in a queue the caller's token covers. `target`
reads the lease from the row it locks, so the row written is the lease that ended.
"""

# db/queries/leases.sql:128
LEASES_GET_HELD = Query("leases_get_held", lambda *, actor, queue, queue_scope: None)
"""The caller's live leases, soonest to run out first: in :queue (NULL: every queue the
token covers, :queue_scope NULL: all). Reads the live leases of those queues
(review_items_lease_expiry) and keeps the caller's.
"""

# db/queries/leases.sql:142
LEASES_REVOKE_FOR_USER = Query("leases_revoke_for_user", lambda *, user_name, actor, actor_role, reason, authentication_id: None)
"""The one revocation routine (server/domain/identity/revocation.py) ends every live lease
:user_name holds, on review and exception items alike, as lease_revoke ends one: each
holder's token is stale at once, each item claimable again, none counted as abandoned.
Each item's timeline gets a `revoked` row naming the owner, the revoker and :reason (why:
"access revoked: <source>: <reason>"), with the revoker's authentication when known.
Fence: live leases only (pending, a token, unexpired). Reads the live leases of every
queue (review_items_lease_expiry) and keeps the user's.
"""
