"""Queue.measures: a review queue's figures over a window, read through batched loaders, so
a dashboard of many queues costs the same few statements as one."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.types import Info

from server.domain.failures import InvalidInput
from server.domain.measures import queues as measures
from server.domain.measures.figures import DEFAULT_CLEAR_BACKLOG_DAYS
from server.domain.measures.queues import MeasureKey
from server.domain.model import Queue, Verdict
from server.graphql.codes import ClientError, ErrorCode
from server.graphql.context import Context
from server.graphql.measures.figures import Capacity, Percentiles
from server.graphql.same_fields import copied
from server.graphql.selection import selected_names

OWN_WORK = "For a reviewer or approver token: of the caller's own decisions and leases only."


@strawberry.type
class LeaseCountBucket:
    lease_count: int
    items: int

    @classmethod
    def of(cls, found: measures.LeaseCountBucket) -> LeaseCountBucket:
        return copied(cls, found)


@strawberry.type(description="One reason of the window's decisions, with its verdict.")
class ReasonCount:
    code: str
    verdict: Verdict
    count: int
    share: float = strawberry.field(description="Of the window's decisions.")

    @classmethod
    def of(cls, found: measures.ReasonCount) -> ReasonCount:
        return copied(cls, found)


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
    description="QA and overturns of a set of the window's approve and reject decisions: the "
    "queue's, or one reason code's or one reviewer's (`key`)."
)
class QualityCounts:
    key: str | None = strawberry.field(
        description="The reason code or the reviewer of a breakdown row; null for the queue."
    )
    decided: int = strawberry.field(description="Approve and reject decisions of the window.")
    sampled: int = strawberry.field(
        description="Of those, sampled for QA (copied to the QA queue)."
    )
    checked: int = strawberry.field(description="Of those sampled, checked (a QA result recorded).")
    agreed: int = strawberry.field(description="Of those checked, the QA reviewer agreed with.")
    agreement_rate: float | None = strawberry.field(
        description="agreed / checked; null when none was checked."
    )
    overturned: int = strawberry.field(description="Of the decisions, overturned since.")
    overturn_rate: float | None = strawberry.field(
        description="overturned / decided; null without decisions."
    )
    sampled_share: float | None = strawberry.field(
        description="sampled / decided; null without decisions."
    )

    @classmethod
    def of(cls, found: measures.QualityCounts) -> QualityCounts:
        return copied(cls, found)


@strawberry.type(
    description="Decision quality in the window: QA agreement beside overturns, for the "
    "queue and by reason code and by reviewer, each with its sample counts."
)
class QualityMeasures:
    decided: int = strawberry.field(description="Approve and reject decisions of the window.")
    sampled: int
    checked: int
    agreed: int
    agreement_rate: float | None = strawberry.field(
        description="agreed / checked; null when no QA result was recorded."
    )
    overturned: int
    overturn_rate: float | None = strawberry.field(description="overturned / decided.")
    sampled_share: float | None
    by_reason_code: list[QualityCounts] = strawberry.field(
        description="One row per reason code of the window's decisions, most decisions first."
    )
    by_reviewer: list[QualityCounts] = strawberry.field(
        description="One row per reviewer (the decider), most decisions first. A reviewer's "
        "or approver's token sees its own row only."
    )

    @classmethod
    def of(cls, found: measures.Quality) -> QualityMeasures:
        whole = found.whole
        return cls(
            decided=whole.decided,
            sampled=whole.sampled,
            checked=whole.checked,
            agreed=whole.agreed,
            agreement_rate=whole.agreement_rate,
            overturned=whole.overturned,
            overturn_rate=whole.overturn_rate,
            sampled_share=whole.sampled_share,
            by_reason_code=[QualityCounts.of(row) for row in found.by_reason_code],
            by_reviewer=[QualityCounts.of(row) for row in found.by_reviewer],
        )


@strawberry.type(description="Items held now for one reason of the queue's catalogue.")
class HoldCount:
    reason: str = strawberry.field(description="A code of the queue's holdReasons.")
    label: str
    items: int
    next_ends_at: datetime = strawberry.field(description="The soonest of their holds to end.")

    @classmethod
    def of(cls, found: measures.HoldCount) -> HoldCount:
        return cls(
            reason=found.code, label=found.label, items=found.items, next_ends_at=found.next_ends_at
        )


@strawberry.type(
    description=(
        "A review queue's figures over the last `sinceSeconds`, computed from the tables. "
        "Decisions are first decisions (approve, reject, escalate); an overturn counts only "
        "in `overturned`. " + OWN_WORK + " docs/measures.md defines each figure."
    )
)
class QueueMeasures:
    """Holds the rows its fields read, loaded by queue_measures for the fields the document
    selects: the fields themselves resolve without awaiting (server/graphql/selection.py)."""

    _queue: strawberry.Private[Queue]
    _summary_found: strawberry.Private[measures.QueueSummary | None]
    _lease_counts_found: strawberry.Private[measures.LeaseCounts | None]
    _reasons_found: strawberry.Private[list[measures.ReasonCount] | None]
    _reviewers_found: strawberry.Private[list[measures.ReviewerMeasures] | None]
    _holds_found: strawberry.Private[list[measures.HoldCount] | None]
    _quality_found: strawberry.Private[measures.Quality | None]
    since_seconds: int

    def _summary(self) -> measures.QueueSummary:
        assert self._summary_found is not None, "loaded when selected; for every queue"
        return self._summary_found

    def _lease_counts(self) -> measures.LeaseCounts:
        assert self._lease_counts_found is not None, "loaded when selected; for every queue"
        return self._lease_counts_found

    @strawberry.field(description="Review items enqueued in this queue in the window.")
    def arrivals(self) -> int:
        return self._summary().arrivals

    @strawberry.field(description="First decisions (approve, reject, escalate) in the window.")
    def decided(self) -> int:
        return self._summary().decided

    @strawberry.field(description="Of those, escalations.")
    def escalated(self) -> int:
        return self._summary().escalated

    @strawberry.field(description="Decisions of the window overturned since.")
    def overturned(self) -> int:
        return self._summary().overturned

    @strawberry.field(description="Review items pending now, claimable or under a lease.")
    def backlog(self) -> int:
        return self._summary().backlog

    @strawberry.field(
        description="lease_count of the items decided in the window, at their decision."
    )
    def lease_count_at_decision(self) -> list[LeaseCountBucket]:
        return [LeaseCountBucket.of(b) for b in self._lease_counts().at_decision]

    @strawberry.field(description="lease_count of the items pending now.")
    def lease_count_pending(self) -> list[LeaseCountBucket]:
        return [LeaseCountBucket.of(b) for b in self._lease_counts().pending]

    @strawberry.field(
        description="Of the leases that ended in the window (decided, released or lapsed), "
        "the share that lapsed without a decision; null when none ended."
    )
    def lapsed_lease_share(self) -> float | None:
        return self._summary().lapsed_lease_share

    @strawberry.field(description="Leases that lapsed in the window (ran out undecided).")
    def lapsed_leases(self) -> int:
        return self._summary().lapsed

    @strawberry.field(description="Leases given back in the window.")
    def released_leases(self) -> int:
        return self._summary().released

    @strawberry.field(
        description="Hands-on time: from the start of the lease a decision was made under "
        "to the decision."
    )
    def handling_seconds(self) -> Percentiles:
        return Percentiles.of(self._summary().handling)

    @strawberry.field(description="Elapsed time: from enqueue to the decision.")
    def time_to_decision_seconds(self) -> Percentiles:
        return Percentiles.of(self._summary().time_to_decision)

    @strawberry.field(
        description=f"p99 of handlingSeconds x {measures.TTL_MARGIN}, rounded up to a whole "
        f"minute (at least {measures.MIN_RECOMMENDED_TTL_SECONDS} s, at most "
        f"{measures.MAX_LEASE_TTL_SECONDS} s); null below "
        f"{measures.MIN_SAMPLES_FOR_TTL} timed decisions."
    )
    def recommended_lease_ttl_seconds(self) -> int | None:
        return self._summary().recommended_lease_ttl_seconds

    @strawberry.field(
        description="Of the window's timed decisions, the share whose hands-on time exceeded "
        "the current lease TTL: the TTL would have cut them off had they not renewed."
    )
    def lease_cut_off_share(self) -> float | None:
        return self._summary().lease_cut_off_share

    @strawberry.field(
        description="In plain words: the current TTL, the recommendation, and the share of "
        "recent reviews the current TTL would have cut off."
    )
    def lease_ttl_advice(self) -> str:
        return self._summary().lease_ttl_advice(self._queue.lease_ttl_seconds)

    @strawberry.field(description="The reason mix of the window's decisions, largest first.")
    def reasons(self) -> list[ReasonCount]:
        assert self._reasons_found is not None, "loaded when reasons are selected"
        return [ReasonCount.of(r) for r in self._reasons_found]

    @strawberry.field(
        description="One row per reviewer with a decision or a lapsed lease in the window, "
        "most decisions first. A reviewer's or approver's token sees its own row only."
    )
    def reviewers(self) -> list[ReviewerMeasures]:
        assert self._reviewers_found is not None, "loaded when reviewers are selected"
        return [ReviewerMeasures.of(r) for r in self._reviewers_found]

    @strawberry.field(
        description="Items held now (holdItem), by reason, largest first: counted now, not "
        "over the window, and whole for every reader (what waits belongs to nobody)."
    )
    def holds(self) -> list[HoldCount]:
        assert self._holds_found is not None, "loaded when holds are selected"
        return [HoldCount.of(h) for h in self._holds_found]

    @strawberry.field(
        description="QA agreement and overturns of the window's approve and reject "
        "decisions, for the queue and by reason code and by reviewer, with sample counts. "
        + OWN_WORK
    )
    def quality(self) -> QualityMeasures:
        assert self._quality_found is not None, "loaded when quality is selected"
        return QualityMeasures.of(self._quality_found)

    @strawberry.field(
        description="Demand (arrivals per day x mean hands-on minutes) plus the backlog's "
        "share (backlog x mean hands-on minutes / clearBacklogInDays) against the minutes "
        "available: the argument, else the queue's reviewerMinutesPerDay."
    )
    def capacity(
        self,
        available_reviewer_minutes_per_day: float | None = None,
        clear_backlog_in_days: int = DEFAULT_CLEAR_BACKLOG_DAYS,
    ) -> Capacity:
        found = self._summary().capacity(
            self._queue, available_reviewer_minutes_per_day, clear_backlog_in_days
        )
        if isinstance(found, InvalidInput):
            raise ClientError(found.message, ErrorCode.BAD_REQUEST)
        return Capacity.of(found)


# The fields of QueueMeasures by the rows they read; every other field reads the summary.
LEASE_COUNT_FIELDS = frozenset({"leaseCountAtDecision", "leaseCountPending"})
REASONS_FIELD = "reasons"
REVIEWERS_FIELD = "reviewers"
HOLDS_FIELD = "holds"
QUALITY_FIELD = "quality"
READS_NOTHING = frozenset({"sinceSeconds", "__typename"})
NOT_SUMMARY_FIELDS = (
    LEASE_COUNT_FIELDS
    | {REASONS_FIELD, REVIEWERS_FIELD, HOLDS_FIELD, QUALITY_FIELD}
    | READS_NOTHING
)


async def queue_measures(
    info: Info[Context, None], queue: Queue, since_seconds: int
) -> QueueMeasures:
    """The measures object of a queue with the rows its selected fields read, or the
    caller's error: a role that reads none (or a queue outside the token) is FORBIDDEN, a
    window out of range BAD_REQUEST."""
    key = measures.measure_key(info.context.principal, queue.name, since_seconds)
    if isinstance(key, InvalidInput):
        raise ClientError(key.message, ErrorCode.BAD_REQUEST)
    if not isinstance(key, MeasureKey):
        raise ClientError(key.message, ErrorCode.FORBIDDEN)
    selected = selected_names(info)
    loaders = info.context.loaders
    # Every load joins its batch before the first await: the groups are read concurrently,
    # one statement each for all the queues of the request.
    summary = loaders.queue_summary.load(key) if selected - NOT_SUMMARY_FIELDS else None
    lease_counts = loaders.queue_lease_counts.load(key) if selected & LEASE_COUNT_FIELDS else None
    reasons = loaders.queue_reasons.load(key) if REASONS_FIELD in selected else None
    reviewers = loaders.queue_reviewers.load(key) if REVIEWERS_FIELD in selected else None
    held = loaders.queue_holds.load(queue.name) if HOLDS_FIELD in selected else None
    quality = loaders.queue_quality.load(key) if QUALITY_FIELD in selected else None
    return QueueMeasures(
        _queue=queue,
        _summary_found=None if summary is None else await summary,
        _lease_counts_found=None if lease_counts is None else await lease_counts,
        _reasons_found=None if reasons is None else await reasons,
        _reviewers_found=None if reviewers is None else await reviewers,
        _holds_found=None if held is None else await held,
        _quality_found=None if quality is None else await quality,
        since_seconds=since_seconds,
    )
