"""A review queue's measures: what it received, decided and how, how long reviews take in
the hands of a reviewer and in elapsed time, whether its lease TTL fits, and whether its
team has the hands-on minutes it needs. Every figure is read from the tables over a window
(db/queries/queue_measures.sql), for many queues per statement; docs/measures.md defines
each one."""

from __future__ import annotations

import enum
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from server.domain.failures import InvalidInput, NotPermitted
from server.domain.measures.figures import (
    MAX_WINDOW_SECONDS,
    Capacity,
    Percentiles,
    capacity,
    check_capacity_arguments,
    per_day,
    round_up_to_minute,
    share,
)
from server.domain.model import Principal, Queue, Role, Verdict
from server.domain.review.queues import not_covered
from server.domain.rows import FromRow, from_row, grouped, seconds
from server.store import sql
from server.store.database import Database, Row
from server.store.queries import Query

# Below this many timed decisions in the window a p99 is one or two reviews, not a tail:
# no lease TTL is recommended.
MIN_SAMPLES_FOR_TTL = 50
# The recommended TTL is the p99 of hands-on time and a quarter more, rounded up to a
# whole minute, at least a minute and at most the longest TTL a queue may have.
TTL_MARGIN = 1.25
MIN_RECOMMENDED_TTL_SECONDS = 60
MAX_LEASE_TTL_SECONDS = 86400

# Who sees whole-queue figures, and who sees their own work only.
_WHOLE_QUEUE_ROLES = (Role.MANAGER, Role.ADMIN)
_OWN_WORK_ROLES = (Role.REVIEWER, Role.APPROVER)


@dataclass(frozen=True)
class MeasureKey:
    """What one queue's measures are read for: the window, and whose work they count
    (None: everyone's; a name: that person's own decisions and leases)."""

    queue: str
    since_seconds: int
    reviewer: str | None


def measure_key(
    principal: Principal, queue: str, since_seconds: int
) -> MeasureKey | NotPermitted | InvalidInput:
    """Managers and admins read a queue's figures; reviewers and approvers read their own
    work in it; integrations read none. A queue outside the token reads as not covered."""
    if not principal.works_in(queue):
        return not_covered(queue)
    if not 1 <= since_seconds <= MAX_WINDOW_SECONDS:
        return InvalidInput(
            f"sinceSeconds must be between 1 and {MAX_WINDOW_SECONDS}", "sinceSeconds"
        )
    if principal.role in _WHOLE_QUEUE_ROLES:
        return MeasureKey(queue, since_seconds, None)
    if principal.role in _OWN_WORK_ROLES:
        return MeasureKey(queue, since_seconds, principal.user)
    return NotPermitted(
        "a queue's measures are read with a manager or admin token "
        "(reviewers and approvers read their own)"
    )


@dataclass(frozen=True)
class QueueSummary:
    """The window's counts and distributions for one queue."""

    since_seconds: int
    arrivals: int
    # Review items pending now (claimable or under a lease).
    backlog: int
    decided: int
    escalated: int
    overturned: int
    # Decisions whose hands-on time exceeded the queue's current lease TTL.
    past_ttl: int
    lapsed: int
    released: int
    handling: Percentiles
    handling_mean_seconds: float | None
    time_to_decision: Percentiles

    @classmethod
    def from_row(cls, row: Row, since_seconds: int) -> QueueSummary:
        return from_row(
            cls,
            row,
            since_seconds=since_seconds,
            handling=Percentiles.from_row(row, "handling"),
            handling_mean_seconds=seconds(row["handling_mean"]),
            time_to_decision=Percentiles.from_row(row, "time_to_decision"),
        )

    @property
    def leases_ended(self) -> int:
        """Leases that ended in the window: each decision ends one, so does each release
        and each lapse."""
        return self.decided + self.released + self.lapsed

    @property
    def lapsed_lease_share(self) -> float | None:
        return share(self.lapsed, self.leases_ended)

    @property
    def lease_cut_off_share(self) -> float | None:
        """Of the timed decisions, the share the current TTL would have cut off mid-review
        had their lease not been renewed."""
        return share(self.past_ttl, self.handling.samples)

    @property
    def recommended_lease_ttl_seconds(self) -> int | None:
        return recommended_lease_ttl(self.handling)

    def capacity(
        self, queue: Queue, available_minutes_per_day: float | None, clear_backlog_in_days: int
    ) -> Capacity | InvalidInput:
        """available_minutes_per_day None: the queue's setting (reviewerMinutesPerDay)."""
        available = available_minutes_per_day
        problem = check_capacity_arguments(
            available, clear_backlog_in_days, "availableReviewerMinutesPerDay"
        )
        if problem:
            return problem
        mean = self.handling_mean_seconds
        return capacity(
            arrivals_per_day=per_day(self.arrivals, self.since_seconds),
            handling_minutes_mean=None if mean is None else mean / 60,
            backlog=self.backlog,
            clear_backlog_in_days=clear_backlog_in_days,
            available_minutes_per_day=queue.reviewer_minutes_per_day
            if available is None
            else available,
        )

    def lease_ttl_advice(self, lease_ttl_seconds: int) -> str:
        return lease_ttl_advice(
            lease_ttl_seconds,
            self.handling,
            self.recommended_lease_ttl_seconds,
            self.past_ttl,
        )


def recommended_lease_ttl(handling: Percentiles) -> int | None:
    if handling.samples < MIN_SAMPLES_FOR_TTL or handling.p99 is None:
        return None
    wanted = round_up_to_minute(handling.p99 * TTL_MARGIN)
    return min(MAX_LEASE_TTL_SECONDS, max(MIN_RECOMMENDED_TTL_SECONDS, wanted))


def lease_ttl_advice(
    lease_ttl_seconds: int, handling: Percentiles, recommended: int | None, past_ttl: int
) -> str:
    current = f"Leases last {duration(lease_ttl_seconds)}."
    if recommended is None or handling.p99 is None:
        return (
            f"{current} Too few timed decisions in this window ({handling.samples} of the "
            f"{MIN_SAMPLES_FOR_TTL} needed) to recommend a lease TTL."
        )
    cut = share(past_ttl, handling.samples) or 0.0
    cut_off = (
        f"{cut:.0%} of recent reviews ({past_ttl} of {handling.samples}) ran past "
        f"{duration(lease_ttl_seconds)} and finished only because their lease was renewed."
    )
    tail = f"99% of reviews take at most {duration(math.ceil(handling.p99))} hands-on"
    if recommended == lease_ttl_seconds:
        verdict = f"{tail}: the current TTL fits."
    else:
        verdict = f"{tail}: a lease of {duration(recommended)} would fit."
    return f"{current} {verdict} {cut_off}"


def duration(seconds: int) -> str:
    """Plain words for a whole number of seconds: '4 min', '1 h 30 min', '45 s'."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] if hours else []
    if minutes:
        parts.append(f"{minutes} min")
    if secs or not parts:
        parts.append(f"{secs} s")
    return " ".join(parts)


@dataclass(frozen=True)
class LeaseCountBucket:
    lease_count: int
    items: int


@dataclass(frozen=True)
class LeaseCounts:
    at_decision: list[LeaseCountBucket]
    pending: list[LeaseCountBucket]


@dataclass(frozen=True)
class ReasonCount:
    code: str
    verdict: Verdict
    count: int
    # Of the window's decisions.
    share: float


@dataclass(frozen=True)
class ReviewerMeasures:
    reviewer: str
    decided: int
    handling: Percentiles
    overturned: int
    lapsed_leases: int


@dataclass(frozen=True)
class QualityCounts(FromRow):
    """QA and overturns of a set of the window's approve and reject decisions: the whole
    queue's, or those of one reason code or one reviewer (`key`)."""

    key: str | None
    decided: int
    sampled: int
    checked: int
    agreed: int
    overturned: int

    @property
    def agreement_rate(self) -> float | None:
        """Of the checked decisions, the share the QA reviewer agreed with."""
        return share(self.agreed, self.checked)

    @property
    def overturn_rate(self) -> float | None:
        return share(self.overturned, self.decided)

    @property
    def sampled_share(self) -> float | None:
        return share(self.sampled, self.decided)


NO_DECISIONS = QualityCounts(None, 0, 0, 0, 0, 0)


class QualityDimension(enum.StrEnum):
    """What a row of queue_measures_quality counts: the queue's `dimension` column."""

    QUEUE = "queue"
    REASON_CODE = "reason_code"
    REVIEWER = "reviewer"


@dataclass(frozen=True)
class Quality:
    whole: QualityCounts
    by_reason_code: list[QualityCounts]
    by_reviewer: list[QualityCounts]


@dataclass(frozen=True)
class HoldCount(FromRow):
    """Items held now for one reason of the queue's catalogue."""

    code: str
    label: str
    items: int
    # The soonest of their holds to end.
    next_ends_at: datetime


async def holds(db: Database, queues: list[str]) -> dict[str, list[HoldCount]]:
    """Held items by reason, per queue: now, not over a window, and whole for every reader
    of the measures (what waits belongs to nobody)."""
    rows = await db.fetch(sql.controls.HOLD_COUNTS_GET_BY_QUEUES, queues=queues)
    return grouped(queues, "queue", rows, HoldCount.from_row)


# --- batched reads: one statement per (window, reviewer) among the keys ---------------------

V = TypeVar("V")
Group = tuple[int, str | None]


def _groups(keys: list[MeasureKey]) -> dict[Group, list[str]]:
    grouped: dict[Group, list[str]] = defaultdict(list)
    for key in keys:
        if key.queue not in grouped[(key.since_seconds, key.reviewer)]:
            grouped[(key.since_seconds, key.reviewer)].append(key.queue)
    return grouped


async def _read_grouped(
    db: Database,
    keys: list[MeasureKey],
    query: Query[...],
    build: Callable[[Group, list[str], list[Row]], Mapping[str, V]],
) -> dict[MeasureKey, V]:
    found: dict[MeasureKey, V] = {}
    for group, queues in _groups(keys).items():
        since_seconds, reviewer = group
        rows = await db.fetch(query, queues=queues, since_seconds=since_seconds, reviewer=reviewer)
        for queue, value in build(group, queues, rows).items():
            found[MeasureKey(queue, since_seconds, reviewer)] = value
    return found


async def summaries(db: Database, keys: list[MeasureKey]) -> dict[MeasureKey, QueueSummary]:
    def build(group: Group, queues: list[str], rows: list[Row]) -> dict[str, QueueSummary]:
        return {row["queue"]: QueueSummary.from_row(row, group[0]) for row in rows}

    return await _read_grouped(db, keys, sql.queue_measures.QUEUE_MEASURES_SUMMARY, build)


async def lease_counts(db: Database, keys: list[MeasureKey]) -> dict[MeasureKey, LeaseCounts]:
    def build(group: Group, queues: list[str], rows: list[Row]) -> dict[str, LeaseCounts]:
        by_queue = {queue: LeaseCounts([], []) for queue in queues}
        for row in rows:
            counts = by_queue[row["queue"]]
            bucket = LeaseCountBucket(row["lease_count"], row["items"])
            (counts.at_decision if row["at_decision"] else counts.pending).append(bucket)
        return by_queue

    return await _read_grouped(db, keys, sql.queue_measures.QUEUE_MEASURES_LEASE_COUNTS, build)


async def reasons(db: Database, keys: list[MeasureKey]) -> dict[MeasureKey, list[ReasonCount]]:
    def build(group: Group, queues: list[str], rows: list[Row]) -> dict[str, list[ReasonCount]]:
        totals: dict[str, int] = defaultdict(int)
        for row in rows:
            totals[row["queue"]] += row["decisions"]
        by_queue: dict[str, list[ReasonCount]] = {queue: [] for queue in queues}
        for row in rows:
            count = row["decisions"]
            by_queue[row["queue"]].append(
                ReasonCount(
                    code=row["reason_code"],
                    verdict=Verdict(row["verdict"]),
                    count=count,
                    share=count / totals[row["queue"]],
                )
            )
        return by_queue

    return await _read_grouped(db, keys, sql.queue_measures.QUEUE_MEASURES_REASONS, build)


async def reviewers(
    db: Database, keys: list[MeasureKey]
) -> dict[MeasureKey, list[ReviewerMeasures]]:
    def build(
        group: Group, queues: list[str], rows: list[Row]
    ) -> dict[str, list[ReviewerMeasures]]:
        by_queue: dict[str, list[ReviewerMeasures]] = {queue: [] for queue in queues}
        for row in rows:
            by_queue[row["queue"]].append(
                ReviewerMeasures(
                    reviewer=row["reviewer"],
                    decided=row["decided"],
                    handling=Percentiles.from_row(row, "handling"),
                    overturned=row["overturned"],
                    lapsed_leases=row["lapsed"],
                )
            )
        return by_queue

    return await _read_grouped(db, keys, sql.queue_measures.QUEUE_MEASURES_REVIEWERS, build)


async def quality(db: Database, keys: list[MeasureKey]) -> dict[MeasureKey, Quality]:
    def build(group: Group, queues: list[str], rows: list[Row]) -> dict[str, Quality]:
        by_queue = {queue: Quality(NO_DECISIONS, [], []) for queue in queues}
        for row in rows:
            found = by_queue[row["queue"]]
            counts = QualityCounts.from_row(row)
            match QualityDimension(row["dimension"]):
                case QualityDimension.QUEUE:
                    by_queue[row["queue"]] = Quality(
                        counts, found.by_reason_code, found.by_reviewer
                    )
                case QualityDimension.REASON_CODE:
                    found.by_reason_code.append(counts)
                case QualityDimension.REVIEWER:
                    found.by_reviewer.append(counts)
        return by_queue

    return await _read_grouped(db, keys, sql.queue_measures.QUEUE_MEASURES_QUALITY, build)
