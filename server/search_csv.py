"""A search's results as CSV: what `GET /export/items.csv` and `/export/decisions.csv` stream
and `casework export search` writes. One writer, so the two give the same file for the
same search and caller.

The export reads the search page by page (PAGE_SIZE rows, keyset order) and encodes each
page as it comes: memory stays flat however many rows match. The first page is read before
anything is written, so a search refused at once (bad input, too broad) is answered as such
and never as a file; a page refused or failing after that raises, and the caller must not
make what was written look complete.

Cells hold plain text a spreadsheet reads: times in UTC, ISO 8601 to the microsecond
(2026-10-01T09:30:00.000000Z), enums by their GraphQL names (PENDING, APPROVE),
booleans true/false, an empty cell for nothing. A text cell that a spreadsheet would take
for a formula (starting with = + - @, a tab or a carriage return) gets a leading apostrophe,
so opening an export never runs what an integration or a reviewer typed. No payload field
is ever written, nor a sealed note.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

from server.domain import reads
from server.domain.failures import InvalidInput
from server.domain.model import Decision, DecisionStatus, Item, Principal
from server.domain.privacy.notes import StoredNote
from server.domain.quality.audit import timestamp
from server.domain.search.decisions import search_decisions
from server.domain.search.filters import (
    DecisionPage,
    DecisionSearch,
    ItemPage,
    ItemSearch,
    SearchTooBroad,
)
from server.domain.search.items import search_items
from server.domain.search.keyset import decode_keyset
from server.effects.notice import console_link
from server.store.database import Database

# The largest page a search hands out.
PAGE_SIZE = 200
MEDIA_TYPE = "text/csv; charset=utf-8"

ITEM_COLUMNS = (
    "Item ID",
    "Queue",
    "Origin queue",
    "External key",
    "State",
    "Priority",
    "Enqueued at (UTC)",
    "Last activity (UTC)",
    "Due at (UTC)",
    "Assigned to",
    "Held until (UTC)",
    "Decision",
    "Reason code",
    "Decided by",
    "Decided at (UTC)",
    "Decision status",
    "Overturned",
    "Console link",
)
DECISION_COLUMNS = (
    "Decision ID",
    "Item ID",
    "Queue",
    "External key",
    "Verdict",
    "Reason code",
    "Reviewer",
    "Decided at (UTC)",
    "Status",
    "Is overturn",
    "Supersedes",
    "Note",
)

# What a spreadsheet reads as the start of a formula (OWASP's list for CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

Cell = str | int | datetime | bool | None


class ExportInterrupted(Exception):
    """A page after the first was refused: the rows written so far are not the whole."""


def guarded(text: str) -> str:
    """Text as a spreadsheet shows it, never as a formula it would run."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cell(value: Cell) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return timestamp(value)
    return guarded(value)


def encode_rows(rows: Sequence[Sequence[Cell]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerows([_cell(value) for value in row] for row in rows)
    return out.getvalue().encode()


def export_filename(kind: str, now: datetime) -> str:
    """casework-items-20261001T093000Z.csv: what was exported, and when (UTC)."""
    return f"casework-{kind}-{now.astimezone(UTC):%Y%m%dT%H%M%SZ}.csv"


def current_decision(decisions: list[Decision]) -> Decision | None:
    """The item's current decision as the search's filters mean it: the latest one (which
    nothing supersedes; provisional included)."""
    standing = [d for d in decisions if d.status is not DecisionStatus.SUPERSEDED]
    return max(standing, key=lambda d: d.id, default=None)


def _item_row(
    item: Item,
    activity: datetime | None,
    decision: Decision | None,
    now: datetime,
    link: str | None,
) -> list[Cell]:
    return [
        item.id,
        item.queue,
        item.origin_queue,
        item.external_key,
        item.state(now).name,
        item.priority,
        item.created_at,
        activity,
        item.due_at,
        item.assignee(now),
        item.held_until if item.held(now) else None,
        None if decision is None else decision.outcome.name,
        None if decision is None else decision.reason_code,
        None if decision is None else decision.reviewer,
        None if decision is None else decision.decided_at,
        None if decision is None else decision.status.name,
        None if decision is None else decision.is_overturn,
        link,
    ]


def _note(decision: Decision) -> str | None:
    # A note sealed under a privacy policy is personal data: never exported.
    stored = StoredNote(decision.id, decision.item_id, decision.note)
    return None if stored.sealed else decision.note


def _decision_row(decision: Decision, item: Item | None) -> list[Cell]:
    return [
        decision.id,
        decision.item_id,
        decision.queue,
        None if item is None else item.external_key,
        decision.outcome.name,
        decision.reason_code,
        decision.reviewer,
        decision.decided_at,
        decision.status.name,
        decision.is_overturn,
        decision.supersedes,
        _note(decision),
    ]


async def _item_rows(
    db: Database, search: ItemSearch, page: ItemPage, now: datetime, public_url: str | None
) -> list[list[Cell]]:
    decisions = await reads.decisions_by_item_ids(db, [item.id for item in page.items])
    rows = []
    for item, cursor in zip(page.items, page.cursors, strict=True):
        # The cursor holds the row's place in the order: its last activity.
        place = decode_keyset("items", search.order, cursor)
        activity = place.at if place is not None and not isinstance(place, InvalidInput) else None
        link = console_link(public_url, item_id=item.id, exception_id=None)
        rows.append(_item_row(item, activity, current_decision(decisions[item.id]), now, link))
    return rows


async def _decision_rows(
    db: Database, principal: Principal, page: DecisionPage
) -> list[list[Cell]]:
    # The item's key, where the item sits in the caller's queues (as `Decision.item` reads).
    items = await reads.items_by_ids(db, sorted({d.item_id for d in page.decisions}))
    visible = {id_: item for id_, item in items.items() if principal.works_in(item.queue)}
    return [_decision_row(d, visible.get(d.item_id)) for d in page.decisions]


Refusal = SearchTooBroad | InvalidInput


async def items_csv(
    db: Database,
    principal: Principal,
    search: ItemSearch,
    *,
    now: datetime,
    public_url: str | None,
) -> AsyncIterator[bytes] | Refusal:
    """The export's chunks (the header row, then one chunk per page), or the search's
    refusal of its first page. A later page refused raises ExportInterrupted."""
    first = await search_items(db, principal, search, PAGE_SIZE, None)
    if not isinstance(first, ItemPage):
        return first

    async def chunks() -> AsyncIterator[bytes]:
        yield encode_rows([ITEM_COLUMNS])
        page = first
        while True:
            yield encode_rows(await _item_rows(db, search, page, now, public_url))
            if not page.has_next_page or not page.cursors:
                return
            found = await search_items(db, principal, search, PAGE_SIZE, page.cursors[-1])
            if not isinstance(found, ItemPage):
                raise ExportInterrupted(found.message)
            page = found

    return chunks()


async def decisions_csv(
    db: Database, principal: Principal, search: DecisionSearch
) -> AsyncIterator[bytes] | Refusal:
    """As items_csv, for decisions."""
    first = await search_decisions(db, principal, search, PAGE_SIZE, None)
    if not isinstance(first, DecisionPage):
        return first

    async def chunks() -> AsyncIterator[bytes]:
        yield encode_rows([DECISION_COLUMNS])
        page = first
        while True:
            yield encode_rows(await _decision_rows(db, principal, page))
            if not page.has_next_page or not page.cursors:
                return
            found = await search_decisions(db, principal, search, PAGE_SIZE, page.cursors[-1])
            if not isinstance(found, DecisionPage):
                raise ExportInterrupted(found.message)
            page = found

    return chunks()
