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

# db/queries/search_decisions.sql:68
DECISIONS_SEARCH_BY_REVIEWER = Query("decisions_search_by_reviewer", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_reviewer (queue, reviewer, decided_at, id).
The walk when the search names a reviewer.
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:119
DECISIONS_SEARCH_BY_REASON = Query("decisions_search_by_reason", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_reason (queue, reason_code, decided_at, id).
The walk when the search names a reason code (and no reviewer).
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:170
DECISIONS_SEARCH_BY_VERDICT = Query("decisions_search_by_verdict", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_verdict (queue, outcome, decided_at, id).
The walk when the search names a verdict (and no reviewer or reason code).
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:221
DECISIONS_SEARCH_PROVISIONAL = Query("decisions_search_provisional", lambda *, queues, reviewer, verdict, reason_code, status, newest_first, decided_after, decided_before, at, after_id, scan_cap, page_size: None)
"""Served by review_decisions_search_provisional (queue, decided_at, id) WHERE provisional.
The walk when the search asks for PROVISIONAL decisions (and no reviewer or reason
code): only rows recorded as provisional can be.
The time range and the keyset are conditions of the index (its decided_at, id
columns); the queue is its first column.
"""

# db/queries/search_decisions.sql:273
DECISIONS_SEARCH_SUPERSEDED = Query("decisions_search_superseded", lambda *, queues, decided_before, newest_first, at, after_id, decided_after, reviewer, verdict, reason_code, scan_cap, page_size: None)
"""Served by review_decisions_search_superseding (queue, decided_at, supersedes) WHERE
supersedes IS NOT NULL, then review_decisions_pkey for the decision each row supersedes.
SUPERSEDED decisions are the ones some later row names, so the walk reads those rows of
each queue (an override and an overturn are recorded in the queue of the decision they
supersede), from :decided_after on (a superseding row is never older than the decision it
supersedes), at most :scan_cap of them, oldest first. They are not in the order of the
decisions they name, so each queue's matches are sorted here, and the :scan_cap-th row
read, if reached, comes first (`walked` = :scan_cap): then the queue's answer is not known
complete and the caller refuses the search as too broad.
"""
