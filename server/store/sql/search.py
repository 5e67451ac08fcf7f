"""The statements of db/queries/search.sql, as symbols.

Generated from db/queries/search.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/search.sql:14
ITEM_IDS_WALK_NEWEST = Query("item_ids_walk_newest", lambda *, queues, chunk, at, id: None)
"""review_items_activity (queue, updated_at, id), index only: each queue's items before
the position, newest first, at most :chunk / (number of queues) of each (at least one),
so a chunk reads about :chunk entries however many queues there are. Each row says how
many its queue was allowed (per_queue): a queue that gave that many may hold more, older
than its last, which is where the caller's merge of this chunk must stop.
"""

# db/queries/search.sql:40
ITEM_IDS_WALK_OLDEST = Query("item_ids_walk_oldest", lambda *, queues, chunk, at, id: None)
"""review_items_activity (queue, updated_at, id), index only: as item_ids_walk_newest,
oldest first.
"""

# db/queries/search.sql:63
ITEM_IDS_FIND_BY_SUBJECT = Query("item_ids_find_by_subject", lambda *, subject_ref, scan_limit: None)
"""review_items_subject (subject_ref)."""

# db/queries/search.sql:67
ITEM_IDS_FIND_BY_KEY_PREFIX = Query("item_ids_find_by_key_prefix", lambda *, prefix, prefix_end, scan_limit: None)
"""review_items_key_prefix (external_key COLLATE "C"): the prefix as a range of bytes,
:prefix up to, not including, :prefix_end (both always given: a generic plan keeps the
range as the index's bounds).
"""

# db/queries/search.sql:77
ITEM_IDS_FIND_ASSIGNED = Query("item_ids_find_assigned", lambda *, queues, assigned_to, scan_limit: None)
"""review_items_assigned (queue, assigned_to, …) WHERE pending and assigned."""

# db/queries/search.sql:88
ITEM_IDS_FIND_HELD = Query("item_ids_find_held", lambda *, scan_limit: None)
"""review_items_held (held_until) WHERE pending and held."""

# db/queries/search.sql:95
ITEM_IDS_FIND_OVERDUE = Query("item_ids_find_overdue", lambda *, queues, scan_limit: None)
"""review_items_due (queue, due_at) WHERE pending with a due time."""

# db/queries/search.sql:106
ITEM_IDS_FIND_LEASED = Query("item_ids_find_leased", lambda *, queues, scan_limit: None)
"""review_items_lease_expiry (queue, lease_expires_at) WHERE pending under a lease."""

# db/queries/search.sql:118
ITEM_IDS_FIND_WAITING = Query("item_ids_find_waiting", lambda *, queues, priority_at_least, priority_at_most, scan_limit: None)
"""review_items_claimable (queue, reserved, priority DESC, created_at) WHERE pending: both
values of `reserved`, each a range of priority.
"""

# db/queries/search.sql:133
ITEM_IDS_FIND_PARKED = Query("item_ids_find_parked", lambda *, queues, scan_limit: None)
"""review_items_parked (queue, updated_at) WHERE parked."""

# db/queries/search.sql:142
ITEM_IDS_FIND_ENQUEUED_BETWEEN = Query("item_ids_find_enqueued_between", lambda *, after, before, scan_limit: None)
"""review_items_created_brin (created_at): the window's blocks only."""

# db/queries/search.sql:149
ITEM_IDS_FIND_BY_DECIDER = Query("item_ids_find_by_decider", lambda *, reviewer, after, before, scan_limit: None)
"""review_decisions_reviewer (reviewer, decided_at): the reviewer's decisions in the window;
items_search_page keeps the items whose current decision is one of them.
"""

# db/queries/search.sql:158
ITEM_IDS_FIND_BY_REASON = Query("item_ids_find_by_reason", lambda *, reason_code, after, before, scan_limit: None)
"""review_decisions_reason (reason_code, decided_at)."""

# db/queries/search.sql:166
ITEM_IDS_FIND_BY_VERDICT = Query("item_ids_find_by_verdict", lambda *, verdict, after, before, scan_limit: None)
"""review_decisions_reason (reason_code, decided_at), one range per reason code that may
give the verdict: a decision's reason is one its queue allows for the verdict (an
overturn's, for the outcome it gives), so no index of its own is needed for it.
A lateral per code, as per queue elsewhere: one index range each, whatever the plan.
"""

# db/queries/search.sql:184
ITEM_IDS_FIND_OVERTURNED = Query("item_ids_find_overturned", lambda *, after, before, scan_limit: None)
"""review_decisions_one_overturn_each (supersedes) WHERE it supersedes one: overturns and
overrides, the overrides left out.
"""

# db/queries/search.sql:193
ITEM_IDS_FIND_PROVISIONAL = Query("item_ids_find_provisional", lambda *, after, before, scan_limit: None)
"""review_decisions_provisional (decided_at) WHERE provisional."""

# db/queries/search.sql:201
ITEM_IDS_FIND_DECIDED_BETWEEN = Query("item_ids_find_decided_between", lambda *, after, before, scan_limit: None)
"""review_decisions_decided_brin (decided_at): the window's blocks only."""

# db/queries/search.sql:208
ITEM_IDS_FIND_NOTED = Query("item_ids_find_noted", lambda *, scan_limit: None)
"""item_events_queue_kind_at (queue, kind, at): the notes written in each queue (every
queue: an item keeps its notes when it moves); items_search_page applies the scope.
The lateral's own LIMIT keeps it a lateral, one index range per queue, not a join over
the whole timeline.
"""

# db/queries/search.sql:223
ITEMS_SEARCH_PAGE = Query("items_search_page", lambda *, ids, by_decision, queues, states, key_prefix, subject_ref, priority_at_least, priority_at_most, enqueued_after, enqueued_before, decided_after, decided_before, decided_by, verdict, reason_code, provisional, overturned, assigned_to, held, overdue, has_notes, at, newest, id, until_at, until_id, page_size: None)
"""The candidates :ids (review_items_pkey) that every filter matches, in the caller's
queues (:queues NULL: every queue), after the cursor (:at and :id; NULL: from the
start) and up to :until_at and :until_id (included; NULL: no end), in activity order
(:newest: newest first), at most :page_size of them.
The candidates were read a statement earlier, and an item may have changed since (a
claim, a decision): both bounds hold it to where it is now. A walk of the activity order
passes the span it read, so an item that has moved out of it is left for its new place
rather than shown here under a time that would send the next page's cursor back.
A NULL filter does not filter. The decision filters read the item's current decision,
the latest of its decisions (review_decisions_item), only when :by_decision.
:states are the states a reader sees: `leased` is a pending item under a live lease.
"""
