"""Workflow.measures: the exception owner's dashboard. Every figure comes from a DataLoader,
so many workflows cost the round trips of one; docs/measures.md defines each figure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.types import Info

from server.domain.exceptions import measures, records
from server.domain.measures.figures import (
    DEFAULT_CLEAR_BACKLOG_DAYS,
    DEFAULT_WINDOW_SECONDS,
    check_capacity_arguments,
    per_day,
)
from server.graphql.codes import ClientError, ErrorCode
from server.graphql.context import Context
from server.graphql.measures.figures import Capacity, Percentiles
from server.graphql.same_fields import copied

if TYPE_CHECKING:
    from server.graphql.exceptions.types import Consequence

# types.py registers the enum and imports this module: lazily, so there is one definition.
LazyConsequence = Annotated["Consequence", strawberry.lazy("server.graphql.exceptions.types")]


@strawberry.type(description="Open exceptions of one reason and consequence, and their ages.")
class ReasonAge:
    reason_code: str
    consequence: LazyConsequence
    open: int
    oldest_age_seconds: float = strawberry.field(
        description="Since it last opened: raised, or reopened."
    )
    p50_age_seconds: float

    @classmethod
    def of(cls, found: measures.ReasonAge) -> ReasonAge:
        return copied(cls, found)


@strawberry.type(description="How often one reason comes back, in the window.")
class ReasonRepeat:
    reason_code: str
    raised: int = strawberry.field(description="Exceptions raised (each a new one).")
    recurrences: int = strawberry.field(description="Raises of an exception already open.")
    sources_with_repeats: int = strawberry.field(
        description="Source records raised more than once for this reason."
    )
    repeat_share: float | None = strawberry.field(
        description="recurrences / (raised + recurrences); null without raises."
    )

    @classmethod
    def of(cls, found: measures.ReasonRepeat) -> ReasonRepeat:
        return copied(cls, found)


@strawberry.type(description="Redrives in the window: requests, and the results reported.")
class RedriveMeasures:
    requested: int
    succeeded: int
    failed: int
    success_rate: float | None = strawberry.field(
        description="succeeded / (succeeded + failed); null without results."
    )

    @classmethod
    def of(cls, found: measures.Redrives) -> RedriveMeasures:
        return copied(cls, found)


@strawberry.type(description="Closures in the window, by kind.")
class ClosureMeasures:
    corrected: int = strawberry.field(description="Closed by a reported redrive success.")
    rejected: int
    duplicate: int
    obsolete: int
    total: int

    @classmethod
    def of(cls, found: measures.Closures) -> ClosureMeasures:
        return copied(cls, found)


# An explicit null for `clearBacklogInDays` or `sinceSeconds` means the default.


def _days(clear_backlog_in_days: int | None) -> int:
    return DEFAULT_CLEAR_BACKLOG_DAYS if clear_backlog_in_days is None else clear_backlog_in_days


def _capacity_arguments(available: float | None, clear_backlog_in_days: int, field: str) -> None:
    problem = check_capacity_arguments(available, clear_backlog_in_days, field)
    if problem:
        raise ClientError(problem.message, ErrorCode.BAD_REQUEST)


@strawberry.type(
    description="What is stuck, why, and is it coming back. Counts of things that happen "
    "cover the last sinceSeconds; open, unclaimed and ages describe now."
)
class WorkflowMeasures:
    _workflow: strawberry.Private[records.Workflow]
    since_seconds: int

    async def _now(self, info: Info[Context, None]) -> measures.WorkflowNow:
        return await info.context.loaders.workflow_now.load(self._workflow.name)

    async def _activity(self, info: Info[Context, None]) -> measures.WorkflowActivity:
        key = (self._workflow.name, self.since_seconds)
        return await info.context.loaders.workflow_activity.load(key)

    @strawberry.field(description="Exceptions not closed.")
    async def open(self, info: Info[Context, None]) -> int:
        return (await self._now(info)).open

    @strawberry.field(
        description="Waiting for a person (review or approval), nobody holding them, not yet "
        "due: fresh arrivals."
    )
    async def unclaimed_new(self, info: Info[Context, None]) -> int:
        return (await self._now(info)).unclaimed_new

    @strawberry.field(
        description="Waiting for a person, nobody holding them, past their due time: a "
        "routing or staffing failure."
    )
    async def unclaimed_overdue(self, info: Info[Context, None]) -> int:
        return (await self._now(info)).unclaimed_overdue

    @strawberry.field(description="Open exceptions by reason and consequence, oldest first.")
    async def age_by_reason(self, info: Info[Context, None]) -> list[ReasonAge]:
        found = await info.context.loaders.workflow_ages.load(self._workflow.name)
        return [ReasonAge.of(age) for age in found]

    @strawberry.field(description="Raises by reason, most recurrences first.")
    async def repeats(self, info: Info[Context, None]) -> list[ReasonRepeat]:
        key = (self._workflow.name, self.since_seconds)
        found = await info.context.loaders.workflow_repeats.load(key)
        return [ReasonRepeat.of(repeat) for repeat in found]

    @strawberry.field(description="Exceptions raised (new ones, not recurrences).")
    async def raised(self, info: Info[Context, None]) -> int:
        return (await self._activity(info)).raised

    @strawberry.field(description="raised per day over the window.")
    async def arrivals_per_day(self, info: Info[Context, None]) -> float:
        return per_day((await self._activity(info)).raised, self.since_seconds)

    @strawberry.field
    async def redrives(self, info: Info[Context, None]) -> RedriveMeasures:
        return RedriveMeasures.of((await self._activity(info)).redrives)

    @strawberry.field
    async def closures(self, info: Info[Context, None]) -> ClosureMeasures:
        return ClosureMeasures.of((await self._activity(info)).closures)

    @strawberry.field
    async def reopened(self, info: Info[Context, None]) -> int:
        return (await self._activity(info)).reopened

    @strawberry.field(description="reopened / closures.total; null without closures.")
    async def reopen_rate(self, info: Info[Context, None]) -> float | None:
        return (await self._activity(info)).reopen_rate

    @strawberry.field(description="Elapsed: an approved correction's submission to its approval.")
    async def approval_seconds(self, info: Info[Context, None]) -> Percentiles:
        return Percentiles.of((await self._activity(info)).approval)

    @strawberry.field(
        description="Operators' hands-on time: the start of the lease under which a "
        "correction was submitted or the exception closed, to that action."
    )
    async def handling_seconds(self, info: Info[Context, None]) -> Percentiles:
        return Percentiles.of((await self._activity(info)).handling)

    @strawberry.field(
        description="Approvers' hands-on time: the start of the lease under which a "
        "correction was approved or rejected, to that action."
    )
    async def approver_handling_seconds(self, info: Info[Context, None]) -> Percentiles:
        return Percentiles.of((await self._activity(info)).approver_handling)

    @strawberry.field(
        description="Operators' minutes: passes per day (raised, reopened, correction "
        "rejected, redrive failed) x mean handling minutes, and the exceptions waiting for "
        "review. Available minutes: the argument, else the workflow's reviewerMinutesPerDay."
    )
    async def capacity(
        self,
        info: Info[Context, None],
        available_reviewer_minutes_per_day: float | None = None,
        clear_backlog_in_days: int | None = DEFAULT_CLEAR_BACKLOG_DAYS,
    ) -> Capacity:
        return await self._capacity(
            info,
            measures.operator_capacity,
            available_reviewer_minutes_per_day,
            self._workflow.reviewer_minutes_per_day,
            clear_backlog_in_days,
            "availableReviewerMinutesPerDay",
        )

    @strawberry.field(
        description="Approvers' minutes, apart from operators': corrections submitted per "
        "day x mean approver handling minutes, and the corrections waiting for approval. "
        "Available minutes: the argument, else the workflow's approverMinutesPerDay."
    )
    async def approval_capacity(
        self,
        info: Info[Context, None],
        available_approver_minutes_per_day: float | None = None,
        clear_backlog_in_days: int | None = DEFAULT_CLEAR_BACKLOG_DAYS,
    ) -> Capacity:
        return await self._capacity(
            info,
            measures.approver_capacity,
            available_approver_minutes_per_day,
            self._workflow.approver_minutes_per_day,
            clear_backlog_in_days,
            "availableApproverMinutesPerDay",
        )

    async def _capacity(
        self,
        info: Info[Context, None],
        capacity_of: measures.CapacityOf,
        available: float | None,
        setting: float | None,
        clear_backlog_in_days: int | None,
        field: str,
    ) -> Capacity:
        # Operators and approvers alike: the argument, else the workflow's setting.
        days = _days(clear_backlog_in_days)
        _capacity_arguments(available, days, field)
        return Capacity.of(
            capacity_of(
                await self._activity(info),
                await self._now(info),
                window_seconds=self.since_seconds,
                available_minutes_per_day=setting if available is None else available,
                clear_backlog_in_days=days,
            )
        )


def workflow_measures(
    info: Info[Context, None], workflow: records.Workflow, since_seconds: int | None
) -> WorkflowMeasures:
    """The measures of a workflow the caller already sees; managers and admins only."""
    if not measures.may_read_measures(info.context.principal):
        raise ClientError("measures are for manager and admin tokens", ErrorCode.FORBIDDEN)
    window = DEFAULT_WINDOW_SECONDS if since_seconds is None else since_seconds
    problem = measures.check_window(window)
    if problem:
        raise ClientError(problem.message, ErrorCode.BAD_REQUEST)
    return WorkflowMeasures(_workflow=workflow, since_seconds=window)
