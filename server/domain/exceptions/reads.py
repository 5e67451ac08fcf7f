"""Reads of exceptions, their corrections, redrives and history. None of them writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from server.domain.exceptions.records import (
    Correction,
    ExceptionEvent,
    ExceptionRecord,
    ExceptionState,
    Redrive,
)
from server.domain.failures import InvalidInput
from server.domain.model import Principal
from server.domain.parsing import parse_id
from server.domain.review.live import StreamPosition, stream_now
from server.domain.rows import grouped
from server.store import sql
from server.store.database import Database, Row
from server.store.queries import Query

T = TypeVar("T")

_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)


async def exceptions_by_ids(db: Database, ids: list[str]) -> dict[str, ExceptionRecord]:
    rows = await db.fetch(sql.exceptions_read.EXCEPTIONS_GET_BY_IDS, ids=ids)
    return {row["id"]: ExceptionRecord.from_row(row) for row in rows}


async def exception_ids_by_item_ids(db: Database, item_ids: list[int]) -> dict[int, str]:
    rows = await db.fetch(sql.exceptions_read.EXCEPTION_IDS_GET_BY_ITEM_IDS, item_ids=item_ids)
    return {row["item_id"]: row["id"] for row in rows}


def visible_to(principal: Principal, exception: ExceptionRecord) -> bool:
    return any(map(principal.works_in, exception.queues))


@dataclass(frozen=True)
class ExceptionFilter:
    workflow: str | None = None
    state: ExceptionState | None = None
    owner_role: str | None = None
    overdue: bool | None = None
    source_record_id: str | None = None


async def exceptions_page(
    db: Database, principal: Principal, where: ExceptionFilter, after: str, limit: int
) -> list[ExceptionRecord]:
    rows = await db.fetch(
        sql.exceptions_read.EXCEPTIONS_GET_PAGE,
        workflow=where.workflow,
        state=where.state.value if where.state else None,
        owner_role=where.owner_role,
        overdue=where.overdue,
        source_record_id=where.source_record_id,
        after_id=after,
        page_size=limit,
        queue_scope=principal.queue_scope(),
    )
    ids = [row["id"] for row in rows]
    found = await exceptions_by_ids(db, ids)
    return [found[i] for i in ids]


@dataclass(frozen=True)
class AmbiguousSourceRecord:
    """No workflow was named, and the source record has exceptions in several."""

    message: str
    source_record_id: str
    workflows: tuple[str, ...]


async def exception_by_source_record_id(
    db: Database, principal: Principal, source_record_id: str, workflow: str | None
) -> ExceptionRecord | AmbiguousSourceRecord | None:
    """The exception raised for a source record, in `workflow` when given.

    A record can have several in one workflow over time (each recurrence after a closure is
    a new exception; one may be open per reason code): the open one answers, the newest if
    several are, else the newest closed. Seen as `exception(id)` sees it: by any of the
    exception's queues; others read as missing. Visible ones in several workflows, and no
    workflow named: AmbiguousSourceRecord.
    """
    rows = await db.fetch(
        sql.exceptions_read.EXCEPTIONS_GET_BY_SOURCE_RECORD_ID,
        source_record_id=source_record_id,
        workflow=workflow,
    )
    found = await exceptions_by_ids(db, [row["id"] for row in rows])
    chosen: dict[str, ExceptionRecord] = {}
    for row in rows:  # per workflow, the one to answer comes first
        record = found.get(row["id"])
        if record is not None and row["workflow"] not in chosen and visible_to(principal, record):
            chosen[row["workflow"]] = record
    if len(chosen) > 1:
        workflows = tuple(sorted(chosen))
        return AmbiguousSourceRecord(
            f"source record {source_record_id!r} has exceptions in each of the workflows "
            f"{', '.join(workflows)}: ask again with one of them as `workflow`",
            source_record_id,
            workflows,
        )
    return next(iter(chosen.values()), None)


@dataclass(frozen=True)
class Activity:
    """An exception's place in the list by latest activity: its `updated_at`, then its id."""

    at: datetime
    id: str


async def exceptions_page_by_activity(
    db: Database,
    principal: Principal,
    where: ExceptionFilter,
    newest_first: bool,
    after: Activity | None,
    limit: int,
) -> list[ExceptionRecord]:
    """As exceptions_page, ordered by latest activity instead of by when each was raised.

    An exception that changes while a client pages moves in this order: it may show again,
    or not at all, on a later page (the keyset is where the last one shown stood then).
    """
    if after is None:  # beyond every exception in the order asked for
        after = Activity(_LATEST, "") if newest_first else Activity(_EARLIEST, "")
    rows = await db.fetch(
        sql.exceptions_read.EXCEPTIONS_GET_PAGE_BY_ACTIVITY,
        workflow=where.workflow,
        state=where.state.value if where.state else None,
        owner_role=where.owner_role,
        overdue=where.overdue,
        source_record_id=where.source_record_id,
        newest_first=newest_first,
        after_at=after.at,
        after_id=after.id,
        page_size=limit,
        queue_scope=principal.queue_scope(),
    )
    ids = [row["id"] for row in rows]
    found = await exceptions_by_ids(db, ids)
    return [found[i] for i in ids]


# The three histories of an exception share one read: every row of the statement, grouped by
# the exception it belongs to, with an empty list for an exception that has none.
async def _grouped_by_exception(
    db: Database, query: Query[...], ids: list[str], parse: Callable[[Row], T]
) -> dict[str, list[T]]:
    return grouped(ids, "exception_id", await db.fetch(query, exception_ids=ids), parse)


async def events_by_exception_ids(db: Database, ids: list[str]) -> dict[str, list[ExceptionEvent]]:
    return await _grouped_by_exception(
        db, sql.exceptions_read.EXCEPTION_EVENTS_GET_BY_EXCEPTION_IDS, ids, ExceptionEvent.from_row
    )


async def corrections_by_exception_ids(db: Database, ids: list[str]) -> dict[str, list[Correction]]:
    return await _grouped_by_exception(
        db, sql.exceptions_read.EXCEPTION_CORRECTIONS_GET_BY_EXCEPTION_IDS, ids, Correction.from_row
    )


async def redrives_by_exception_ids(db: Database, ids: list[str]) -> dict[str, list[Redrive]]:
    return await _grouped_by_exception(
        db, sql.exceptions_read.EXCEPTION_REDRIVES_GET_BY_EXCEPTION_IDS, ids, Redrive.from_row
    )


async def corrections_of(db: Database, exception_id: str) -> list[Correction]:
    return (await corrections_by_exception_ids(db, [exception_id]))[exception_id]


async def redrives_of(db: Database, exception_id: str) -> list[Redrive]:
    return (await redrives_by_exception_ids(db, [exception_id]))[exception_id]


async def redrive_by_key(db: Database, key: str) -> Redrive | None:
    row = await db.fetchrow(sql.exceptions_read.EXCEPTION_REDRIVE_GET, redrive_key=key)
    return None if row is None else Redrive.from_row(row)


async def event_stream_start(
    db: Database, workflow: str, after: str | None
) -> StreamPosition | InvalidInput:
    """After the event `after` (the last one a client saw), or from now if None."""
    if after is None:
        return await stream_now(db)
    event_id = parse_id(after, "after")
    if isinstance(event_id, InvalidInput):
        return event_id
    row = await db.fetchrow(sql.exceptions_read.EXCEPTION_EVENT_GET_POSITION, event_id=event_id)
    if row is None or row["workflow"] != workflow:
        return InvalidInput(f"no event {event_id} in workflow {workflow!r}", "after")
    return StreamPosition(row["txid"], row["id"])


async def events_after(
    db: Database, workflow: str, position: StreamPosition, limit: int
) -> list[tuple[StreamPosition, ExceptionEvent]]:
    rows = await db.fetch(
        sql.exceptions_read.EXCEPTION_EVENTS_GET_AFTER_POSITION,
        workflow=workflow,
        after_txid=position.txid,
        after_id=position.row_id,
        page_size=limit,
    )
    return [(StreamPosition(row["txid"], row["id"]), ExceptionEvent.from_row(row)) for row in rows]
