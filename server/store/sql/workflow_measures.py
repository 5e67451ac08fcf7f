"""The statements of db/queries/workflow_measures.sql, as symbols.

Generated from db/queries/workflow_measures.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _workflow_measures_get_now(
    *,
    workflows: Any,
) -> None: ...


WORKFLOW_MEASURES_GET_NOW = Query("workflow_measures_get_now", _workflow_measures_get_now)
"""db/queries/workflow_measures.sql:7

Per workflow, now: open exceptions; those waiting for a person (for review or for an
approver) with nobody holding them under a live lease, not yet due apart from overdue;
and the work waiting for operators (needs_review) and for approvers (awaiting_approval).
The lease is read per open exception (a subquery, not a join), so the item history is
never scanned, however the planner estimates the open ones.
"""


def _workflow_measures_get_ages(
    *,
    workflows: Any,
) -> None: ...


WORKFLOW_MEASURES_GET_AGES = Query("workflow_measures_get_ages", _workflow_measures_get_ages)
"""db/queries/workflow_measures.sql:32

Per workflow, reason and consequence, now: the open exceptions and their ages, oldest
first. An exception's age runs from when it last opened: its raise, or its last reopen.
"""


def _workflow_measures_get_activity(
    *,
    workflows: Any,
    since_seconds: Any,
) -> None: ...


WORKFLOW_MEASURES_GET_ACTIVITY = Query(
    "workflow_measures_get_activity", _workflow_measures_get_activity
)
"""db/queries/workflow_measures.sql:53

Per workflow, the events of the last :since_seconds: raises, redrive requests and
results, closures by kind, reopens; the operators' hands-on time (the start of the lease
under which a correction was submitted or the exception closed, to that action), the
approvers' hands-on time (likewise, to an approval or a rejection), and the approval
time (the approved version's submission to its approval: elapsed, not labour).
"""


def _workflow_measures_get_repeats(
    *,
    workflows: Any,
    since_seconds: Any,
) -> None: ...


WORKFLOW_MEASURES_GET_REPEATS = Query(
    "workflow_measures_get_repeats", _workflow_measures_get_repeats
)
"""db/queries/workflow_measures.sql:110

Per workflow and reason, the raises of the last :since_seconds: exceptions raised, raises
of one already open (recurrences), and the source records raised more than once in the
window (a recurrence, or a new exception after the last one closed). Most repeated first.
"""
