"""The statements of db/queries/workflow_measures.sql, as symbols.

Generated from db/queries/workflow_measures.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/workflow_measures.sql:7
WORKFLOW_MEASURES_GET_NOW = Query("workflow_measures_get_now", lambda *, workflows: None)
"""Per workflow, now: open exceptions; those waiting for a person (for review or for an
approver) with nobody holding them under a live lease, not yet due apart from overdue;
and the work waiting for operators (needs_review) and for approvers (awaiting_approval).
The lease is read per open exception (a subquery, not a join), so the item history is
never scanned, however the planner estimates the open ones.
"""

# db/queries/workflow_measures.sql:32
WORKFLOW_MEASURES_GET_AGES = Query("workflow_measures_get_ages", lambda *, workflows: None)
"""Per workflow, reason and consequence, now: the open exceptions and their ages, oldest
first. An exception's age runs from when it last opened: its raise, or its last reopen.
"""

# db/queries/workflow_measures.sql:53
WORKFLOW_MEASURES_GET_ACTIVITY = Query("workflow_measures_get_activity", lambda *, workflows, since_seconds: None)
"""Per workflow, the events of the last :since_seconds: raises, redrive requests and
results, closures by kind, reopens; the operators' hands-on time (the start of the lease
under which a correction was submitted or the exception closed, to that action), the
approvers' hands-on time (likewise, to an approval or a rejection), and the approval
time (the approved version's submission to its approval: elapsed, not labour).
"""

# db/queries/workflow_measures.sql:110
WORKFLOW_MEASURES_GET_REPEATS = Query("workflow_measures_get_repeats", lambda *, workflows, since_seconds: None)
"""Per workflow and reason, the raises of the last :since_seconds: exceptions raised, raises
of one already open (recurrences), and the source records raised more than once in the
window (a recurrence, or a new exception after the last one closed). Most repeated first.
"""
