"""The statements of db/queries/bulk.sql, as symbols.

Generated from db/queries/bulk.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/bulk.sql:31
ITEMS_BULK_RELEASE = Query("items_bulk_release", lambda *, item_ids, queue, state, overdue, assigned, older_than_seconds, batch, queue_scope, revoke_leases, actor, actor_role, body: None)
"""Makes the items claimable by anyone now: ends their holds (a hold that paused the due
time gives back what it did not use, as item_resume) and their assignments and, with
:revoke_leases, their live leases (as lease_revoke: not an abandonment). Timeline rows:
`revoked` (the owner; :body, the call's reason), `resumed`, `unassigned`, each with :body.
ALREADY_SO: neither held nor assigned now, nor under a live lease. A hold or assignment
that has ended but is not yet cleared is cleared too, with no row (its own row said when
it would end), as items_end_reservations does.
Fence: every id found in the caller's queues; no exception's item; the filter's queue
exists.
"""

# db/queries/bulk.sql:166
ITEMS_BULK_ASSIGN = Query("items_bulk_assign", lambda *, item_ids, queue, state, overdue, assigned, older_than_seconds, reviewer, until, batch, queue_scope, max_seconds, revoke_leases, actor, actor_role, body: None)
"""Reserves each item for :reviewer until :until (NULL: until unassigned), as item_assign
does one: only review items; assigning again replaces the assignment; a hold stays. With
:revoke_leases a live lease is revoked first (`revoked`, with :body); a lease that has run
out is left for the next claim to write off. Timeline: `assigned` {reviewer, until},
with :body. ALREADY_SO: assigned to :reviewer until :until already.
Fence: every id found in the caller's queues; no exception's item; the reviewer has a live
token of the holder role of every waiting item's queue (and of the filter's queue);
:until, when given, lies ahead, within :max_seconds.
"""

# db/queries/bulk.sql:313
ITEMS_BULK_MOVE = Query("items_bulk_move", lambda *, item_ids, queue, state, overdue, assigned, older_than_seconds, to_queue, batch, queue_scope, revoke_leases, actor, actor_role, body: None)
"""Moves each waiting review item to :to_queue, keeping its priority. What belonged to the
queue it leaves stays behind, as with the overdue move (items_escalate_overdue): its
assignment (the assignee works that queue) and its hold (its reason is of that queue's
catalogue) end, and it takes the due time of the queue it joins, counted from now (none if
that queue sets none). Its abandonments are counted afresh there; it is not an
escalation. A live lease is skipped, or revoked with :revoke_leases; a lease that had run
out is written off (`lapsed`). Timeline, in order: `lapsed`, `revoked` (with :body),
`resumed`, `unassigned`, `moved` {from_queue, to_queue} with :body, each in the queue the
item left. Each hint names :to_queue among its queues (`qs`). ALREADY_SO: in :to_queue.
Fence: every id found in the caller's queues; no exception's item; :to_queue exists and
lies in the caller's queues.
"""

# db/queries/bulk.sql:459
ITEMS_BULK_HOLD = Query("items_bulk_hold", lambda *, item_ids, queue, state, overdue, assigned, older_than_seconds, batch, queue_scope, reason, until, max_seconds, revoke_leases, actor, actor_role: None)
"""Parks each waiting review item until :until for :reason, as item_hold does for its lease
holder, but by a manager and without a lease: a live lease is skipped, or revoked first
with :revoke_leases (`revoked`, its body the reason's label); a lease that had run out is
written off (`lapsed`) and counted as an abandonment, as the claim that noticed it would.
The queue's hold_pauses_due moves the due time on by the whole hold. An assignment stays.
Timeline: `held` {reason, until}. ALREADY_SO: held now (resume or release it first).
Fence: every id found in the caller's queues; no exception's item; :reason is in the
catalogue of every waiting item's queue (and of the filter's queue); :until lies ahead,
within :max_seconds.
"""

# db/queries/bulk.sql:600
ITEMS_BULK_DIAGNOSE = Query("items_bulk_diagnose", lambda *, item_ids, queue_scope, queue, to_queue, reason, reviewer, until, max_seconds: None)
"""Read-only: why did a bulk action's fence refuse? Runs only on that failure path. Arguments
an action does not take are NULL. The first id (lowest) that is missing or outside
:queue_scope, the first that is an exception's item, the first queue (of the waiting items
and the filter's queue) lacking the hold reason or the reviewer.
"""
