"""Queue.measures: a review queue's figures over a window, read through batched loaders, so
a dashboard of many queues costs the same few statements as one."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from server.domain.failures import InvalidInput
from server.domain.measures import queues as measures
from server.domain.measures.queues import MeasureKey
from server.domain.model import Queue, Verdict
from server.graphql.codes import ClientError, ErrorCode
from server.graphql.context import Context
from server.graphql.measures.figures import Capacity, Percentiles

OWN_WORK = "For a reviewer or approver token: of the caller's own decisions and leases only."


@strawberry.type
class LeaseCountBucket:
    lease_count: int
    items: int

    @classmethod
    def of(cls, found: measures.LeaseCountBucket) -> LeaseCountBucket:
        return cls(lease_count=found.lease_count, items=found.items)


@strawberry.type(description="One reason of the window's decisions, with its verdict.")
class ReasonCount:
    code: str
    verdict: Verdict
    count: int
    share: float = strawberry.field(description="Of the window's decisions.")

    @classmethod
    def of(cls, found: measures.ReasonCount) -> ReasonCount:
        return cls(code=found.code, verdict=found.verdict, count=found.count, share=found.share)


@strawberry.type(description="One reviewer's throughput beside its quality, in the window.")
class ReviewerMeasures:
    reviewer: str
    decided: int
    handling_seconds: Percentiles
    overturned: int = strawberry.field(description="Of their decisions, those since overturned.")
    lapsed_leases: int = strawberry.field(description="Leases that ran out in their hands.")

    @classmethod
    def of(cls, found: measures.ReviewerMeasures) -> ReviewerMeasures:
        return cls(
            reviewer=found.reviewer,
            decided=found.decided,
            handling_seconds=Percentiles.of(found.handling),
            overturned=found.overturned,
            lapsed_leases=found.lapsed_leases,
        )


@strawberry.type(
    description=(
        "A review queue's figures over the last `sinceSeconds`, computed from the tables. "
        "Decisions are first decisions (approve, reject, escalate); an overturn counts only "
        "in `overturned`. " + OWN_WORK + " docs/measures.md defines each figure."
    )
)
class QueueMeasures:
    _key: strawberry.Private[MeasureKey]
    _queue: strawberry.Private[Queue]
    since_seconds: int

    async def _summary(self, info: Info[Context, None]) -> measures.QueueSummary:
        found = await info.context.loaders.queue_summary.load(self._key)
        assert found is not None, "the summary answers for every queue asked for"
        return found

    async def _lease_counts(self, info: Info[Context, None]) -> measures.LeaseCounts:
        found = await info.context.loaders.queue_lease_counts.load(self._key)
        assert found is not None, "the histograms answer for every queue asked for"
        return found

    @strawberry.field(description="Review items enqueued in this queue in the window.")
    async def arrivals(self, info: Info[Context, None]) -> int:
        return (await self._summary(info)).arrivals

    @strawberry.field(description="First decisions (approve, reject, escalate) in the window.")
    async def decided(self, info: Info[Context, None]) -> int:
        return (await self._summary(info)).decided

    @strawberry.field(description="Of those, escalations.")
    async def escalated(self, info: Info[Context, None]) -> int:
        return (await self._summary(info)).escalated

    @strawberry.field(description="Decisions of the window overturned since.")
    async def overturned(self, info: Info[Context, None]) -> int:
        return (await self._summary(info)).overturned

    @strawberry.field(description="Review items pending now, claimable or under a lease.")
    async def backlog(self, info: Info[Context, None]) -> int:
        return (await self._summary(info)).backlog

    @strawberry.field(
        description="lease_count of the items decided in the window, at their decision."
    )
    async def lease_count_at_decision(self, info: Info[Context, None]) -> list[LeaseCountBucket]:
        return [LeaseCountBucket.of(b) for b in (await self._lease_counts(info)).at_decision]

    @strawberry.field(description="lease_count of the items pending now.")
    async def lease_count_pending(self, info: Info[Context, None]) -> list[LeaseCountBucket]:
        return [LeaseCountBucket.of(b) for b in (await self._lease_counts(info)).pending]

    @strawberry.field(
        description="Of the leases that ended in the window (decided, released or lapsed), "
        "the share that lapsed without a decision; null when none ended."
    )
    async def lapsed_lease_share(self, info: Info[Context, None]) -> float | None:
        return (await self._summary(info)).lapsed_lease_share

    @strawberry.field(description="Leases that lapsed in the window (ran out undecided).")
    async def lapsed_leases(self, info: Info[Context, None]) -> int:
        return (await self._summary(info)).lapsed

    @strawberry.field(description="Leases given back in the window.")
    async def released_leases(self, info: Info[Context, None]) -> int:
        return (await self._summary(info)).released

    @strawberry.field(
        description="Hands-on time: from the start of the lease a decision was made under "
        "to the decision."
    )
    async def handling_seconds(self, info: Info[Context, None]) -> Percentiles:
        return Percentiles.of((await self._summary(info)).handling)

    @strawberry.field(description="Elapsed time: from enqueue to the decision.")
    async def time_to_decision_seconds(self, info: Info[Context, None]) -> Percentiles:
        return Percentiles.of((await self._summary(info)).time_to_decision)

    @strawberry.field(
        description=f"p99 of handlingSeconds x {measures.TTL_MARGIN}, rounded up to a whole "
        f"minute (at least {measures.MIN_RECOMMENDED_TTL_SECONDS} s, at most "
        f"{measures.MAX_LEASE_TTL_SECONDS} s); null below "
        f"{measures.MIN_SAMPLES_FOR_TTL} timed decisions."
    )
    async def recommended_lease_ttl_seconds(self, info: Info[Context, None]) -> int | None:
        return (await self._summary(info)).recommended_lease_ttl_seconds

    @strawberry.field(
        description="Of the window's timed decisions, the share whose hands-on time exceeded "
        "the current lease TTL: the TTL would have cut them off had they not renewed."
    )
    async def lease_cut_off_share(self, info: Info[Context, None]) -> float | None:
        return (await self._summary(info)).lease_cut_off_share

    @strawberry.field(
        description="In plain words: the current TTL, the recommendation, and the share of "
        "recent reviews the current TTL would have cut off."
    )
    async def lease_ttl_advice(self, info: Info[Context, None]) -> str:
        return (await self._summary(info)).lease_ttl_advice(self._queue.lease_ttl_seconds)

    @strawberry.field(description="The reason mix of the window's decisions, largest first.")
    async def reasons(self, info: Info[Context, None]) -> list[ReasonCount]:
        return [ReasonCount.of(r) for r in await info.context.loaders.queue_reasons.load(self._key)]

    @strawberry.field(
        description="One row per reviewer with a decision or a lapsed lease in the window, "
        "most decisions first. A reviewer's or approver's token sees its own row only."
    )
    async def reviewers(self, info: Info[Context, None]) -> list[ReviewerMeasures]:
        found = await info.context.loaders.queue_reviewers.load(self._key)
        return [ReviewerMeasures.of(r) for r in found]

    @strawberry.field(
        description="Demand (arrivals per day x mean hands-on minutes) plus the backlog's "
        "share (backlog x mean hands-on minutes / clearBacklogInDays) against the minutes "
        "available: the argument, else the queue's reviewerMinutesPerDay."
    )
    async def capacity(
        self,
        info: Info[Context, None],
        available_reviewer_minutes_per_day: float | None = None,
        clear_backlog_in_days: int = 5,
    ) -> Capacity:
        found = (await self._summary(info)).capacity(
            self._queue, available_reviewer_minutes_per_day, clear_backlog_in_days
        )
        if isinstance(found, InvalidInput):
            raise ClientError(found.message, ErrorCode.BAD_REQUEST)
        return Capacity.of(found)


def queue_measures(info: Info[Context, None], queue: Queue, since_seconds: int) -> QueueMeasures:
    """The measures object of a queue, or the caller's error: a role that reads none (or a
    queue outside the token) is FORBIDDEN, a window out of range BAD_REQUEST."""
    key = measures.measure_key(info.context.principal, queue.name, since_seconds)
    if isinstance(key, InvalidInput):
        raise ClientError(key.message, ErrorCode.BAD_REQUEST)
    if not isinstance(key, MeasureKey):
        raise ClientError(key.message, ErrorCode.FORBIDDEN)
    return QueueMeasures(_key=key, _queue=queue, since_seconds=since_seconds)
