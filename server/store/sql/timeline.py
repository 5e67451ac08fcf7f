"""The statements of db/queries/timeline.sql, as symbols.

Generated from db/queries/timeline.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/timeline.sql:1
ITEM_EVENTS_GET_PAGES = Query("item_events_get_pages", lambda *, item_ids, after_at, after_rank, after_ref, page_size: None)
"""One page of each item's timeline (ReviewItem.events), oldest first, in one statement for
every item of :item_ids (a dashboard's): what item_events stores, merged with what is
read from the records that already hold it (server/domain/timeline/events.py names the kinds).
- A claim (`claimed`, at its lease's start) is read from any record of its lease: the
decision made under it, a release, lapse, revocation, renewal or hold of it in
item_events, or the item while it holds the lease; once per token.
- A lease that ran out and that no claim has noticed yet is a `lapsed` read from the
item, at its expiry; the claim that notices it writes the row (with the same time).
- Decisions: a verdict is `decided`, or `escalated` for an escalation, and an overturn
`overturned`. The queue an escalation went to is the queue the item was in next.
- Second review (migration 0020): a provisional decision is `second_review` (the item
went from the decision's queue to the queue it was in next), its confirmation
`confirmed` (read from decision_confirmations, which carries the second reviewer's
lease like a decision does), and an override `overridden`, in the queue its lease
was held in.
- A decision sampled for QA is `qa_sampled`, read from its copy (`qa_of`); `qa_checked`
is stored, naming the decision in its detail.
- A message to the owners (notification_deliveries, 0034) is `notified`, read from
notification_deliveries, at the moment it became due (actor casework, role system),
with its rule, channel, state and the time it was sent.
Order: (at, rank, ref), a total order. `rank` puts what happened at one instant in the
order it must have happened: an arrival, a lease's end, a claim, whatever was done under
it, a decision. `ref` is the row's id in its table, or for a claim a number made from its
token. The page starts after (:after_at, :after_rank, :after_ref) unless :after_at is NULL.
A lease is never shown by its token (a fence credential): `lease_id` is a number made
from it by a one-way hash, as hexadecimal.
`authentication_id`: how the actor authenticated (migration 0023), on the kinds people
write; NULL on older rows, on what Casework does itself and on claims.
Reads only each item's rows: item_events_item, review_decisions_item, the item's key.
"""

# db/queries/timeline.sql:197
ITEM_NOTE_ADD = Query("item_note_add", lambda *, item_id, queue_scope, actor, actor_role, body, authentication_id: None)
"""Adds a note to an item's timeline (`item_events`, kind `noted`) and hints `noted`, so
that open consoles re-read. No lease is needed: whoever may see the item may note it.
Fence: a review item (an exception's item has its own history) in a queue the caller's
token covers (:queue_scope NULL: every queue). Not an item under a privacy policy, nor a
QA copy of one: their notes are sealed (sealed_note_add, db/queries/privacy_records.sql),
and this statement never stores their text.
"""

# db/queries/timeline.sql:227
ITEM_EVENTS_GET_LATEST_ID = Query("item_events_get_latest_id", lambda *, item_id: None)
"""The newest row of the item's stored timeline (NULL: none): itemUpdates compares it before
and after it starts listening, as it compares the item's row, so that a note (which
changes no column of the item) made in between is not missed.
"""
