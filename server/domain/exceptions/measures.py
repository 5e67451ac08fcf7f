"""What an exception owner reads on a dashboard: what is stuck, why, and is it coming back.

Figures about what is (open, unclaimed, age) describe now; figures about what happens
(raises, closures, reopens, redrive results) count the events of the window. Each read
takes many workflows at once, so a dashboard's round trips do not grow with them.
docs/measures.md defines every figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from server.domain.exceptions.records import Consequence
from server.domain.failures import InvalidInput
from server.domain.measures.figures import (
    EMPTY_PERCENTILES,
    MAX_WINDOW_SECONDS,
    Capacity,
    Percentiles,
    capacity,
    per_day,
    share,
)
from server.domain.model import Principal, Role
from server.domain.rows import FromRow, from_row, grouped, seconds
from server.store import sql
from server.store.database import Database, Row
from server.store.queries import Query

# A workflow and a window (seconds): the key of every windowed figure.
Window = tuple[str, int]


def may_read_measures(principal: Principal) -> bool:
    """Dashboards are for managers and admins; which workflows, their queues decide."""
    return principal.role in (Role.MANAGER, Role.ADMIN)


def check_window(since_seconds: int) -> InvalidInput | None:
    if not 1 <= since_seconds <= MAX_WINDOW_SECONDS:
        return InvalidInput(
            f"sinceSeconds must be between 1 and {MAX_WINDOW_SECONDS}", "sinceSeconds"
        )
    return None


@dataclass(frozen=True)
class WorkflowNow(FromRow):
    open: int
    # Waiting for a person (review or approval), nobody holding them under a live lease.
    unclaimed_new: int
    unclaimed_overdue: int
    # The operators' backlog and the approvers'.
    needs_review: int
    awaiting_approval: int


NOTHING_OPEN = WorkflowNow(
    open=0, unclaimed_new=0, unclaimed_overdue=0, needs_review=0, awaiting_approval=0
)


@dataclass(frozen=True)
class ReasonAge:
    reason_code: str
    consequence: Consequence
    open: int
    oldest_age_seconds: float
    p50_age_seconds: float

    @classmethod
    def from_row(cls, row: Row) -> ReasonAge:
        return from_row(
            cls,
            row,
            consequence=Consequence(row["consequence"]),
            oldest_age_seconds=float(row["oldest_age_seconds"]),
            p50_age_seconds=float(row["p50_age_seconds"]),
        )


@dataclass(frozen=True)
class ReasonRepeat(FromRow):
    reason_code: str
    # Exceptions raised in the window (each a new exception).
    raised: int
    # Raises, in the window, of an exception already open.
    recurrences: int
    # Source records raised more than once in the window, for this reason.
    sources_with_repeats: int

    @property
    def repeat_share(self) -> float | None:
        """Of every raise in the window, the share that found its exception already open."""
        return share(self.recurrences, self.raised + self.recurrences)


@dataclass(frozen=True)
class Redrives:
    requested: int
    succeeded: int
    failed: int

    @property
    def success_rate(self) -> float | None:
        """Of the results reported in the window, the share that succeeded."""
        return share(self.succeeded, self.succeeded + self.failed)


@dataclass(frozen=True)
class Closures:
    # Closed by a reported redrive success: the only way to close as corrected.
    corrected: int
    rejected: int
    duplicate: int
    obsolete: int

    @property
    def total(self) -> int:
        return self.corrected + self.rejected + self.duplicate + self.obsolete


@dataclass(frozen=True)
class WorkflowActivity:
    """What happened in one window."""

    raised: int
    recurred: int
    reopened: int
    corrections_submitted: int
    corrections_rejected: int
    redrives: Redrives
    closures: Closures
    # Hands-on: lease start to the action that ended the lease (operators: a correction
    # submitted or a closure; approvers: an approval or a rejection).
    handling: Percentiles
    handling_mean_seconds: float | None
    approver_handling: Percentiles
    approver_handling_mean_seconds: float | None
    # Elapsed: the approved version's submission to its approval.
    approval: Percentiles

    @property
    def reopen_rate(self) -> float | None:
        return share(self.reopened, self.closures.total)

    @property
    def operator_passes(self) -> int:
        """Times an exception came to an operator in the window: raised, reopened, its
        correction rejected, or its redrive failed. Each needs another hands-on pass."""
        return self.raised + self.reopened + self.corrections_rejected + self.redrives.failed

    @classmethod
    def from_row(cls, row: Row) -> WorkflowActivity:
        return from_row(
            cls,
            row,
            redrives=Redrives(
                requested=row["redrives_requested"],
                succeeded=row["redrives_succeeded"],
                failed=row["redrives_failed"],
            ),
            closures=Closures(
                corrected=row["redrives_succeeded"],
                rejected=row["closed_rejected"],
                duplicate=row["closed_duplicate"],
                obsolete=row["closed_obsolete"],
            ),
            handling=Percentiles.from_row(row, "handling"),
            handling_mean_seconds=seconds(row["handling_mean"]),
            approver_handling=Percentiles.from_row(row, "approver_handling"),
            approver_handling_mean_seconds=seconds(row["approver_handling_mean"]),
            approval=Percentiles.from_row(row, "approval"),
        )


NOTHING_HAPPENED = WorkflowActivity(
    raised=0,
    recurred=0,
    reopened=0,
    corrections_submitted=0,
    corrections_rejected=0,
    redrives=Redrives(requested=0, succeeded=0, failed=0),
    closures=Closures(corrected=0, rejected=0, duplicate=0, obsolete=0),
    handling=EMPTY_PERCENTILES,
    handling_mean_seconds=None,
    approver_handling=EMPTY_PERCENTILES,
    approver_handling_mean_seconds=None,
    approval=EMPTY_PERCENTILES,
)


def _minutes(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 60


class CapacityOf(Protocol):
    """A capacity sum of one kind of person: operators or approvers."""

    def __call__(
        self,
        activity: WorkflowActivity,
        now: WorkflowNow,
        *,
        window_seconds: int,
        available_minutes_per_day: float | None,
        clear_backlog_in_days: int,
    ) -> Capacity: ...


def operator_capacity(
    activity: WorkflowActivity,
    now: WorkflowNow,
    *,
    window_seconds: int,
    available_minutes_per_day: float | None,
    clear_backlog_in_days: int,
) -> Capacity:
    """Operators: passes per day x mean hands-on minutes per pass, plus the exceptions
    waiting for review cleared over `clear_backlog_in_days`."""
    return capacity(
        arrivals_per_day=per_day(activity.operator_passes, window_seconds),
        handling_minutes_mean=_minutes(activity.handling_mean_seconds),
        backlog=now.needs_review,
        clear_backlog_in_days=clear_backlog_in_days,
        available_minutes_per_day=available_minutes_per_day,
    )


def approver_capacity(
    activity: WorkflowActivity,
    now: WorkflowNow,
    *,
    window_seconds: int,
    available_minutes_per_day: float | None,
    clear_backlog_in_days: int,
) -> Capacity:
    """Approvers: corrections submitted per day x mean hands-on minutes per approval or
    rejection, plus the corrections waiting for an approver."""
    return capacity(
        arrivals_per_day=per_day(activity.corrections_submitted, window_seconds),
        handling_minutes_mean=_minutes(activity.approver_handling_mean_seconds),
        backlog=now.awaiting_approval,
        clear_backlog_in_days=clear_backlog_in_days,
        available_minutes_per_day=available_minutes_per_day,
    )


async def now_by_workflow(db: Database, names: list[str]) -> dict[str, WorkflowNow]:
    rows = await db.fetch(sql.workflow_measures.WORKFLOW_MEASURES_GET_NOW, workflows=names)
    found = {row["workflow"]: WorkflowNow.from_row(row) for row in rows}
    return {name: found.get(name, NOTHING_OPEN) for name in names}


async def ages_by_workflow(db: Database, names: list[str]) -> dict[str, list[ReasonAge]]:
    rows = await db.fetch(sql.workflow_measures.WORKFLOW_MEASURES_GET_AGES, workflows=names)
    return grouped(names, "workflow", rows, ReasonAge.from_row)


async def _rows_by_window(
    db: Database, query: Query[...], keys: list[Window]
) -> dict[Window, list[Row]]:
    """The rows of `query` (workflow_measures_get_activity, _get_repeats) for each key: one
    statement per distinct window, not per workflow."""
    grouped: dict[int, list[str]] = {}
    for name, window in keys:
        grouped.setdefault(window, []).append(name)
    found: dict[Window, list[Row]] = {key: [] for key in keys}
    for window, names in grouped.items():
        for row in await db.fetch(query, workflows=names, since_seconds=window):
            found[(row["workflow"], window)].append(row)
    return found


async def activity_by_window(db: Database, keys: list[Window]) -> dict[Window, WorkflowActivity]:
    """One row per workflow and window, or none: nothing happened."""
    found = await _rows_by_window(db, sql.workflow_measures.WORKFLOW_MEASURES_GET_ACTIVITY, keys)
    return {
        key: WorkflowActivity.from_row(rows[-1]) if rows else NOTHING_HAPPENED
        for key, rows in found.items()
    }


async def repeats_by_window(db: Database, keys: list[Window]) -> dict[Window, list[ReasonRepeat]]:
    found = await _rows_by_window(db, sql.workflow_measures.WORKFLOW_MEASURES_GET_REPEATS, keys)
    return {key: [ReasonRepeat.from_row(row) for row in rows] for key, rows in found.items()}
