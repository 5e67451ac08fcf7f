"""The statements of db/queries/due.sql, as symbols.

Generated from db/queries/due.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/due.sql:3
ITEMS_ESCALATE_OVERDUE = Query("items_escalate_overdue", lambda *, queue: None)
"""Runs from the claim path when item_claim_next says overdue items wait in a queue that
names an overdue_queue, so no cron job is needed: each moves there with its priority
raised by the queue's overdue_priority_boost, once. An item under a live lease stays
with its holder until the lease ends; a held item stays until its hold ends. The move
leaves behind what belonged to the old queue (an assignment, an ended hold) and gives
the item the due time of the queue it joins (none if that queue sets none): its old due
time has been acted on, and keeping it would make the item overdue there at once. The
timeline gets an `escalated` row per item (cause `overdue`, with the old due time), and a
`lapsed` row for a lease that had run out. SKIP LOCKED: a concurrent claim or change of
the same item is never waited for; the next claim looks again.
"""

# db/queries/due.sql:78
ITEMS_GET_DUE_BETWEEN = Query("items_get_due_between", lambda *, queues, after, until: None)
"""Waiting items that fell due in (after, until]: what the process timer announces as
OVERDUE. Reads only.
"""
