"""The shapes every measure shares: a distribution of durations, and a capacity sum."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from server.domain.failures import InvalidInput
from server.domain.rows import seconds
from server.store.database import Row

# The default window of every measure: the last seven days.
DEFAULT_WINDOW_SECONDS = 7 * 24 * 3600
MAX_WINDOW_SECONDS = 366 * 24 * 3600
MINUTES_PER_DAY = 24 * 60
# capacity(clearBacklogInDays: Int = 5): over how many days the backlog is to be cleared.
DEFAULT_CLEAR_BACKLOG_DAYS = 5
MAX_CLEAR_BACKLOG_DAYS = 366
# A bound on "available minutes per day" a client may type: a thousand people's days.
MAX_AVAILABLE_MINUTES_PER_DAY = 1000 * MINUTES_PER_DAY


@dataclass(frozen=True)
class Percentiles:
    """A distribution of durations in seconds; every figure is None without samples."""

    samples: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None

    @classmethod
    def from_row(cls, row: Row | dict[str, Any], prefix: str) -> Percentiles:
        """From columns `<prefix>_samples`, `<prefix>_p50`, … as SQL computes them with
        percentile_cont (continuous: interpolated between samples)."""
        p50, p90, p99, top = (seconds(row[f"{prefix}_{n}"]) for n in ("p50", "p90", "p99", "max"))
        return cls(int(row[f"{prefix}_samples"] or 0), p50, p90, p99, top)


EMPTY_PERCENTILES = Percentiles(samples=0, p50=None, p90=None, p99=None, max=None)


@dataclass(frozen=True)
class Capacity:
    """Is there enough hands-on time to keep up with arrivals and clear the backlog?

    Only hands-on time counts as labour: waiting in a queue is elapsed time, not work.
    """

    arrivals_per_day: float
    handling_minutes_mean: float | None
    demand_minutes_per_day: float | None
    backlog: int
    backlog_minutes_per_day: float | None
    available_minutes_per_day: float | None
    headroom_minutes_per_day: float | None
    enough: bool | None


def capacity(
    *,
    arrivals_per_day: float,
    handling_minutes_mean: float | None,
    backlog: int,
    clear_backlog_in_days: int,
    available_minutes_per_day: float | None,
) -> Capacity:
    """demand = arrivals/day * mean handling minutes; backlog share = backlog * mean
    handling minutes / days to clear it; headroom = available - both. Without a mean
    handling time (nothing decided yet) the minute figures are unknown, not zero."""
    if handling_minutes_mean is None:
        demand = backlog_minutes = None
    else:
        demand = arrivals_per_day * handling_minutes_mean
        backlog_minutes = backlog * handling_minutes_mean / clear_backlog_in_days
    if available_minutes_per_day is None or demand is None or backlog_minutes is None:
        headroom = None
    else:
        headroom = available_minutes_per_day - demand - backlog_minutes
    return Capacity(
        arrivals_per_day=arrivals_per_day,
        handling_minutes_mean=handling_minutes_mean,
        demand_minutes_per_day=demand,
        backlog=backlog,
        backlog_minutes_per_day=backlog_minutes,
        available_minutes_per_day=available_minutes_per_day,
        headroom_minutes_per_day=headroom,
        enough=None if headroom is None else headroom >= 0,
    )


def check_capacity_arguments(
    available_minutes_per_day: float | None, clear_backlog_in_days: int, field: str
) -> InvalidInput | None:
    """The arguments of every capacity field; `field` names the available-minutes one."""
    if not 1 <= clear_backlog_in_days <= MAX_CLEAR_BACKLOG_DAYS:
        return InvalidInput(
            f"clearBacklogInDays must be between 1 and {MAX_CLEAR_BACKLOG_DAYS}",
            "clearBacklogInDays",
        )
    minutes = available_minutes_per_day
    if minutes is not None and not 0 <= minutes <= MAX_AVAILABLE_MINUTES_PER_DAY:
        return InvalidInput(f"{field} must be between 0 and {MAX_AVAILABLE_MINUTES_PER_DAY}", field)
    return None


def per_day(count: int, window_seconds: int) -> float:
    return count * 86400 / window_seconds


def share(part: int, whole: int) -> float | None:
    """A fraction, or None when there is nothing to divide by (not 0: unknown)."""
    return None if whole == 0 else part / whole


def round_up_to_minute(seconds: float) -> int:
    return int(math.ceil(seconds / 60) * 60)
