"""Reads behind the live updates. None of them writes: NOTIFY is a hint, tables the truth."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from server.domain.failures import InvalidInput
from server.domain.model import Decision
from server.domain.parsing import parse_id
from server.domain.rows import from_row, seconds
from server.store import sql
from server.store.database import Database


@dataclass(frozen=True)
class Backlog:
    queue: str
    # Claimable now: under no live lease, and not held.
    pending: int
    leased: int
    oldest_pending_age_seconds: float | None
    # For Queue.stats (queueBacklog shows the three above): parked until a time; reserved
    # for a named reviewer; past the due time. Pending, leased and held add up to every
    # waiting item; assigned and overdue items are counted among those too.
    held: int = 0
    assigned: int = 0
    overdue: int = 0


async def queue_backlog(db: Database, queue: str) -> Backlog:
    return (await queue_backlogs(db, [queue]))[queue]


async def queue_backlogs(db: Database, queues: list[str]) -> dict[str, Backlog]:
    """One row per queue asked for, known or not (an unknown queue has no backlog)."""
    rows = await db.fetch(sql.queues.QUEUES_GET_BACKLOG, queues=queues)
    return {
        row["queue"]: from_row(
            Backlog, row, oldest_pending_age_seconds=seconds(row["oldest_pending_age_seconds"])
        )
        for row in rows
    }


@dataclass(frozen=True)
class PassedDeadline:
    """A lease that ran out (`leases_expired_between`), or an item that fell due
    (`items_due_between`): the timer announces either alike."""

    item_id: int
    queue: str
    # Whose the expired lease was; for a due item, who holds it under a lease now, if anyone.
    owner: str | None
    passed_at: datetime


@dataclass(frozen=True)
class NextDeadlines:
    """What the process timer waits for: a lease running out, or an item falling due."""

    lease_expiry: datetime | None
    due: datetime | None

    @property
    def earliest(self) -> datetime | None:
        return min((t for t in (self.lease_expiry, self.due) if t is not None), default=None)


async def next_deadlines(db: Database, queues: list[str], after: datetime) -> NextDeadlines:
    row = await db.fetchrow(sql.leases.DEADLINES_GET_NEXT, queues=queues, after=after)
    assert row is not None, "scalar subqueries always return a row"
    return NextDeadlines(row["next_expiry"], row["next_due"])


async def items_due_between(
    db: Database, queues: list[str], after: datetime, until: datetime
) -> list[PassedDeadline]:
    rows = await db.fetch(sql.due.ITEMS_GET_DUE_BETWEEN, queues=queues, after=after, until=until)
    return [
        PassedDeadline(row["id"], row["queue"], row["lease_owner"], row["due_at"]) for row in rows
    ]


async def leases_expired_between(
    db: Database, queues: list[str], after: datetime, until: datetime
) -> list[PassedDeadline]:
    rows = await db.fetch(
        sql.leases.LEASES_GET_EXPIRED_BETWEEN, queues=queues, after=after, until=until
    )
    return [
        PassedDeadline(row["id"], row["queue"], row["lease_owner"], row["lease_expires_at"])
        for row in rows
    ]


@dataclass(frozen=True, order=True)
class StreamPosition:
    """A place in a commit-ordered stream (decisions, exception events): the writing
    transaction, then the row id."""

    txid: int
    row_id: int


async def stream_now(db: Database) -> StreamPosition:
    """The place in any commit-ordered stream where what is still to come begins."""
    row = await db.fetchrow(sql.decisions_read.DECISIONS_GET_STREAM_HORIZON)
    assert row is not None
    # Everything below the horizon is past; anything at or above it is still to come.
    return StreamPosition(row["horizon"] - 1, 2**63 - 1)


async def stream_start(
    db: Database, queue: str, after: str | None
) -> StreamPosition | InvalidInput:
    """After the decision `after` (the last one a client saw), or from now if None."""
    if after is None:
        return await stream_now(db)
    decision_id = parse_id(after, "after")
    if isinstance(decision_id, InvalidInput):
        return decision_id
    row = await db.fetchrow(sql.decisions_read.DECISION_GET_POSITION, decision_id=decision_id)
    if row is None or row["queue"] != queue:
        return InvalidInput(f"no decision {decision_id} in queue {queue!r}", "after")
    if not row["in_stream"]:
        return InvalidInput(
            f"decision {decision_id} waits for its second review or was overridden: the "
            "stream delivers decisions when they take effect, and has not delivered it",
            "after",
        )
    return StreamPosition(row["txid"], row["id"])


async def decisions_after(
    db: Database, queue: str, position: StreamPosition, limit: int
) -> list[tuple[StreamPosition, Decision]]:
    rows = await db.fetch(
        sql.decisions_read.DECISIONS_GET_AFTER_POSITION,
        queue=queue,
        after_txid=position.txid,
        after_id=position.row_id,
        page_size=limit,
    )
    return [
        (StreamPosition(row["position_txid"], row["id"]), Decision.from_row(row)) for row in rows
    ]
