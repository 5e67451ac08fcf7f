"""GraphQL types for the shapes every measure shares."""

from __future__ import annotations

import strawberry

from server.domain.measures import figures
from server.graphql.same_fields import copied


@strawberry.type(description="A distribution of durations, in seconds.")
class Percentiles:
    samples: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None

    @classmethod
    def of(cls, found: figures.Percentiles) -> Percentiles:
        return copied(cls, found)


@strawberry.type(
    description=(
        "Whether the hands-on time available keeps up with arrivals and clears the backlog. "
        "Minutes are hands-on (lease start to decision), never elapsed waiting."
    )
)
class Capacity:
    arrivals_per_day: float
    handling_minutes_mean: float | None
    demand_minutes_per_day: float | None = strawberry.field(
        description="arrivalsPerDay * handlingMinutesMean."
    )
    backlog: int
    backlog_minutes_per_day: float | None = strawberry.field(
        description="backlog * handlingMinutesMean / clearBacklogInDays."
    )
    available_minutes_per_day: float | None
    headroom_minutes_per_day: float | None = strawberry.field(
        description="available - demand - backlog minutes per day."
    )
    enough: bool | None

    @classmethod
    def of(cls, found: figures.Capacity) -> Capacity:
        return copied(cls, found)
