"""The statements of db/queries/search_decisions.sql, as symbols.

Generated from db/queries/search_decisions.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/search_decisions.sql:19
DECISIONS_SEARCH_BY_QUEUE = Query("decisions_search_by_queue", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_queue (queue, decided_at, id).
The walk when no reviewer, reason code, verdict or status narrows it.
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:71
DECISIONS_SEARCH_BY_REVIEWER = Query("decisions_search_by_reviewer", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_reviewer (queue, reviewer, decided_at, id).
The walk when the search names a reviewer.
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:125
DECISIONS_SEARCH_BY_REASON = Query("decisions_search_by_reason", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_reason (queue, reason_code, decided_at, id).
The walk when the search names a reason code (and no reviewer).
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:179
DECISIONS_SEARCH_BY_VERDICT = Query("decisions_search_by_verdict", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_verdict (queue, outcome, decided_at, id).
The walk when the search names a verdict (and no reviewer or reason code).
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:233
DECISIONS_SEARCH_PROVISIONAL = Query("decisions_search_provisional", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_provisional (queue, decided_at, id) WHERE provisional.
The walk when the search asks for PROVISIONAL decisions (and no reviewer or reason
code): only rows recorded as provisional can be.
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:288
DECISIONS_SEARCH_SUPERSEDED = Query("decisions_search_superseded", lambda *, queues, reviewer, verdict, reason_code, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_superseded (queue, supersedes_decided_at, supersedes)
WHERE supersedes IS NOT NULL AND item_id > 0, then review_decisions_pkey for the decision
each row names. SUPERSEDED decisions are the ones a later row (an override or an
overturn, recorded in the queue of the decision it supersedes) names; that row carries
the named decision's time (migration 0040), so the walk reads the superseded decisions of
each queue in their own (decided_at, id) order and stops at a page like the walks above.
The status needs no check: every row walked names a superseded decision.
"""
