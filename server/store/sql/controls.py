"""The statements of db/queries/controls.sql, as symbols.

Generated from db/queries/controls.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/controls.sql:6
ITEM_ASSIGN = Query("item_assign", lambda *, item_id, queue_scope, until, max_seconds, reviewer, actor, actor_role: None)
"""Reserves a waiting review item for one reviewer until :until (NULL: until unassigned or
decided). Assigning again replaces the assignment. A lease held now is left alone.
Exception items move between queues with their state, so they are not assigned.
Fence: the review item is pending, in a queue the caller's token covers; the reviewer has a live
token of the queue's holder role covering the queue (a misspelt name would reserve the
item for nobody); :until, when given, lies ahead, within :max_seconds.
"""

# db/queries/controls.sql:54
ITEM_UNASSIGN = Query("item_unassign", lambda *, item_id, queue_scope, actor, actor_role: None)
"""Ends an assignment early: the item goes back to the general order.
Fence: the item is pending and assigned now, in a queue the caller's token covers.
"""

# db/queries/controls.sql:87
ITEM_HOLD = Query("item_hold", lambda *, item_id, lease_token, actor, queue_scope, until, max_seconds, reason, actor_role: None)
"""Parks a claimed review item until :until for a reason of its queue's catalogue. The hold
ends the lease (the item waits for nobody meanwhile); the timeline row (`held`) carries
that lease's token and start, the reason and the end. When the queue's hold_pauses_due
is set, the due time moves on by the whole hold (item_resume gives back what a hold
ended early did not use), so the due time is right at every moment without a sweeper.
Fence: the token matches a live lease of the caller on a pending review item, in a queue
the caller's token covers; the reason is in the queue's catalogue; :until lies ahead,
within :max_seconds.
"""

# db/queries/controls.sql:139
ITEM_RESUME = Query("item_resume", lambda *, item_id, queue_scope, actor, actor_role: None)
"""Ends a hold early: the item is claimable again at once, with its priority. A hold that
paused the due time gives back the part it did not use.
Fence: the item is pending and held now, in a queue the caller's token covers.
"""

# db/queries/controls.sql:175
ITEMS_END_RESERVATIONS = Query("items_end_reservations", lambda *, queue, batch: None)
"""Clears the holds and assignments of a queue whose time has run out, so their items
rejoin the general claim order with their priority. Runs from the claim path when
item_claim_next says some wait (no sweeper job). A hold that ran its course paused the
due time by exactly its length already. The end needs no timeline row: the `held` or
`assigned` row says when it was to end. A bounded batch, SKIP LOCKED: an item another
statement holds is left for the next claim.
"""

# db/queries/controls.sql:207
ITEM_CONTROLS_DIAGNOSE = Query("item_controls_diagnose", lambda *, until, max_seconds, reason, reviewer, item_id: None)
"""Read-only: why did an assignment, hold, resume or revocation write nothing? Runs only on
that failure path. Arguments a mutation does not take are NULL.
"""

# db/queries/controls.sql:233
HOLD_REASON_UPSERT = Query("hold_reason_upsert", lambda *, queue, code, label: None)

# db/queries/controls.sql:239
HOLD_REASONS_GET_BY_QUEUES = Query("hold_reasons_get_by_queues", lambda *, queues: None)

# db/queries/controls.sql:242
HOLD_COUNTS_GET_BY_QUEUES = Query("hold_counts_get_by_queues", lambda *, queues: None)
"""Queue.measures.holds: the items held now in each queue of :queues, by reason (with its
label), largest first. What waits is counted now, not over a window, like the backlog;
the walk covers the queue's set-aside items only (the claim index under `reserved`).
"""
