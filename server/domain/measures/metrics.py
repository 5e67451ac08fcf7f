"""The figures /metrics reads from the database: backlogs, applications, open exceptions.

One statement (db/queries/metrics.sql) answers from a snapshot at most `max_age_seconds`
old, or computes a new one and stores it for every other scrape of every process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.store import sql
from server.store.database import Database


@dataclass(frozen=True)
class QueueFigures:
    queue: str
    pending: int
    leased: int
    oldest_pending_age_seconds: float
    unapplied: int
    unapplied_older_than_threshold: int
    failed: int


@dataclass(frozen=True)
class ReasonFigures:
    workflow: str
    reason: str
    open: int


@dataclass(frozen=True)
class WorkflowFigures:
    workflow: str
    overdue: int


@dataclass(frozen=True)
class Figures:
    queues: tuple[QueueFigures, ...]
    reasons: tuple[ReasonFigures, ...]
    workflows: tuple[WorkflowFigures, ...]

    @classmethod
    def from_json(cls, figures: dict[str, Any]) -> Figures:
        return cls(
            queues=tuple(QueueFigures(**row) for row in figures["queues"]),
            reasons=tuple(ReasonFigures(**row) for row in figures["reasons"]),
            workflows=tuple(WorkflowFigures(**row) for row in figures["workflows"]),
        )


async def read_figures(
    db: Database, *, max_age_seconds: float, unapplied_threshold_seconds: float
) -> Figures:
    row = await db.fetchrow(
        sql.metrics.METRICS_FIGURES_READ,
        max_age_seconds=max_age_seconds,
        unapplied_threshold_seconds=unapplied_threshold_seconds,
    )
    assert row is not None, "the figures statement always answers with one row"
    return Figures.from_json(row["figures"])
