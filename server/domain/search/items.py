"""Searching items across the caller's queues (db/queries/search.sql).

A search is driven by one index: the one of the most selective filter it has (a data
subject, a key prefix, a reviewer, …), whose candidates are all read, at most SCAN_LIMIT of
them, and then filtered and sorted; or, when no filter bounds it, the activity order itself,
walked a growing chunk at a time until the page is full or SCAN_LIMIT rows have been read.
The choice depends on which filters are given, never on the data, so the same search reads
the same rows whether it is the first page or the tenth, and is refused alike.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from server.domain.failures import InvalidInput
from server.domain.model import DecisionStatus, Item, ItemState, Principal
from server.domain.search import filters
from server.domain.search.filters import ItemPage, ItemSearch, SearchOrder, SearchTooBroad
from server.domain.search.keyset import Keyset, decode_keyset, encode_keyset
from server.store import sql
from server.store.database import Database, Row
from server.store.queries import Query

KIND = "items"

# The walk's first chunk covers a page of matches at a modest hit rate; each next one is
# larger, so a sparse search takes a few statements, not hundreds.
FIRST_CHUNK = 256
CHUNK_GROWTH = 8
# What a broad filter's short walk may read before its index is used instead.
PROBE = FIRST_CHUNK * (1 + CHUNK_GROWTH)

# Either end of every time window and cursor, for a bound the search does not give.
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)
_LAST_ID = 2**63 - 1
_PRIORITY_RANGE = (-(2**31), 2**31 - 1)

_WAITING = frozenset({ItemState.PENDING, ItemState.LEASED})
# What narrows a walk of the activity order, most useful first.
_NARROW_A_WALK = (
    "queues",
    "enqueuedAfter",
    "enqueuedBefore",
    "decidedAfter",
    "decidedBefore",
    "externalKeyPrefix",
    "decidedBy",
    "reasonCode",
)


@dataclass(frozen=True)
class _Driver:
    """The statement that reads a search's candidates, and what would narrow it."""

    statement: Query[Any]
    params: dict[str, Any]
    narrow_by: tuple[str, ...]
    # Its filter usually matches many rows (a state, a window, a verdict): a short walk of
    # the activity order is tried first, which fills the page when matches are dense.
    broad: bool = False


async def search_items(
    db: Database, principal: Principal, search: ItemSearch, first: int, after: str | None
) -> ItemPage | SearchTooBroad | InvalidInput:
    """One page of the items `search` matches, in its order, after the cursor `after`.

    InvalidInput names the filter at fault (as GraphQL spells it) for a contradictory or
    malformed search or cursor; SearchTooBroad when one page would read too many rows.
    """
    refusal = invalid(search)
    if refusal is not None:
        return refusal
    position = decode_keyset(KIND, search.order, after)
    if isinstance(position, InvalidInput):
        return position
    queues = _readable(principal, search.queues)
    if queues == []:
        return ItemPage(items=[], cursors=[], has_next_page=False)
    # Read now, not at import: a test lowers it.
    limit = filters.SCAN_LIMIT
    driver = _driver(search, queues)
    read = 0
    rows: list[Row] | None = None
    if driver is None or driver.broad:
        budget = limit if driver is None else min(PROBE, limit // 8)
        rows, read = await _walk(db, search, queues, position, first, budget)
    if rows is None and driver is not None:
        rows = await _driven(db, search, queues, position, first, limit - read, driver)
    if rows is None:
        return _too_broad(search, limit, _NARROW_A_WALK if driver is None else driver.narrow_by)
    shown = rows[:first]
    return ItemPage(
        items=[Item.from_row(row) for row in shown],
        cursors=[
            encode_keyset(KIND, search.order, Keyset(row["updated_at"], row["id"])) for row in shown
        ],
        has_next_page=len(rows) > first,
    )


def invalid(search: ItemSearch) -> InvalidInput | None:
    """The first thing wrong with the search as asked, named as GraphQL spells it."""
    low, high = search.priority_at_least, search.priority_at_most
    if low is not None and high is not None and low > high:
        return InvalidInput(
            f"priorityAtLeast ({low}) is above priorityAtMost ({high}): nothing could match",
            "priorityAtLeast",
        )
    for name, start, end in (
        ("enqueued", search.enqueued_after, search.enqueued_before),
        ("decided", search.decided_after, search.decided_before),
    ):
        if start is not None and end is not None and start >= end:
            return InvalidInput(
                f"{name}After must be earlier than {name}Before (after <= t < before)",
                f"{name}After",
            )
    if search.external_key_prefix == "":
        return InvalidInput(
            "externalKeyPrefix is empty: leave it out to search every key", "externalKeyPrefix"
        )
    if search.decision_status is DecisionStatus.SUPERSEDED:
        return InvalidInput(
            "decisionStatus: an item's current decision is never superseded; to find items "
            "whose decision was reversed, use overturned: true",
            "decisionStatus",
        )
    return None


def _readable(principal: Principal, asked: tuple[str, ...] | None) -> list[str] | None:
    """The queues the search may read (None: every one). A queue outside the caller's scope
    is dropped silently: it reads as having nothing."""
    scope = principal.queue_scope()
    if asked is None:
        return scope
    if scope is None:
        return sorted(set(asked))
    return sorted(set(asked) & set(scope))


def _window(start: datetime | None, end: datetime | None) -> dict[str, datetime]:
    return {"after": start or _EARLIEST, "before": end or _LATEST}


def _driver(search: ItemSearch, queues: list[str] | None) -> _Driver | None:
    """The index that bounds the search best, by which filters are given (None: walk the
    activity order). Most selective first: one data subject, one key prefix, one assignee,
    one reviewer, down to a state or a time window."""
    q = {"queues": queues}
    decided = _window(search.decided_after, search.decided_before)
    decided_narrow = ("decidedAfter", "decidedBefore")
    states = frozenset(search.states) if search.states is not None else None
    if search.subject_ref is not None:
        return _Driver(sql.search.ITEM_IDS_FIND_BY_SUBJECT, {"subject_ref": search.subject_ref}, ())
    if search.external_key_prefix is not None:
        prefix = search.external_key_prefix
        return _Driver(
            sql.search.ITEM_IDS_FIND_BY_KEY_PREFIX,
            {"prefix": prefix, "prefix_end": prefix_end(prefix)},
            ("externalKeyPrefix",),
        )
    if search.assigned_to is not None:
        return _Driver(
            sql.search.ITEM_IDS_FIND_ASSIGNED, {**q, "assigned_to": search.assigned_to}, ("queues",)
        )
    if search.decided_by is not None:
        return _Driver(
            sql.search.ITEM_IDS_FIND_BY_DECIDER,
            {"reviewer": search.decided_by, **decided},
            decided_narrow,
            broad=search.decided_after is None and search.decided_before is None,
        )
    if search.reason_code is not None:
        return _Driver(
            sql.search.ITEM_IDS_FIND_BY_REASON,
            {"reason_code": search.reason_code, **decided},
            (*decided_narrow, "decidedBy"),
            broad=True,
        )
    if search.overturned is True:
        return _Driver(sql.search.ITEM_IDS_FIND_OVERTURNED, decided, decided_narrow)
    if search.decision_status is DecisionStatus.PROVISIONAL:
        return _Driver(
            sql.search.ITEM_IDS_FIND_PROVISIONAL, decided, (*decided_narrow, "decidedBy"), True
        )
    if search.held is True:
        return _Driver(sql.search.ITEM_IDS_FIND_HELD, {}, ("assignedTo",))
    if search.overdue is True:
        return _Driver(sql.search.ITEM_IDS_FIND_OVERDUE, q, ("queues", "assignedTo"))
    if states == frozenset({ItemState.LEASED}):
        return _Driver(sql.search.ITEM_IDS_FIND_LEASED, q, ("queues", "assignedTo"))
    if states == frozenset({ItemState.PARKED}):
        return _Driver(sql.search.ITEM_IDS_FIND_PARKED, q, ("queues", "enqueuedAfter"))
    if search.has_notes is True:
        return _Driver(
            sql.search.ITEM_IDS_FIND_NOTED,
            {},
            ("queues", "enqueuedAfter", "enqueuedBefore", "externalKeyPrefix"),
            broad=True,
        )
    if search.verdict is not None:
        return _Driver(
            sql.search.ITEM_IDS_FIND_BY_VERDICT,
            {"verdict": search.verdict.value, **decided},
            (*decided_narrow, "decidedBy", "reasonCode"),
            broad=True,
        )
    if search.decided_after is not None or search.decided_before is not None:
        return _Driver(
            sql.search.ITEM_IDS_FIND_DECIDED_BETWEEN, decided, (*decided_narrow, "decidedBy"), True
        )
    if search.enqueued_after is not None or search.enqueued_before is not None:
        return _Driver(
            sql.search.ITEM_IDS_FIND_ENQUEUED_BETWEEN,
            _window(search.enqueued_after, search.enqueued_before),
            ("enqueuedAfter", "enqueuedBefore", "externalKeyPrefix", "decidedBy"),
            broad=True,
        )
    if states is not None and states <= _WAITING:
        low, high = _PRIORITY_RANGE
        return _Driver(
            sql.search.ITEM_IDS_FIND_WAITING,
            {
                **q,
                "priority_at_least": low
                if search.priority_at_least is None
                else search.priority_at_least,
                "priority_at_most": high
                if search.priority_at_most is None
                else search.priority_at_most,
            },
            ("queues", "priorityAtLeast", "priorityAtMost", "enqueuedAfter", "enqueuedBefore"),
            broad=True,
        )
    return None


def prefix_end(prefix: str) -> str:
    """The first text after every key that starts with `prefix`, in code point (and so
    UTF-8 byte) order."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if last == 0xD800:  # surrogates are not text
            last = 0xE000
        if last <= 0x10FFFF:
            return "".join(chars) + chr(last)
    # Only the last code point, over and over: past every key (at most 200 characters).
    return chr(0x10FFFF) * 201


async def _driven(
    db: Database,
    search: ItemSearch,
    queues: list[str] | None,
    position: Keyset | None,
    first: int,
    budget: int,
    driver: _Driver,
) -> list[Row] | None:
    """Every candidate the driving index gives, then the page; None: more than `budget`."""
    rows = await db.fetch(driver.statement, **driver.params, scan_limit=budget + 1)
    if len(rows) > budget:
        return None
    ids = list(dict.fromkeys(row["id"] for row in rows))
    if not ids:
        return []
    return await _page(db, search, queues, ids, position, None, first + 1)


async def _walk(
    db: Database,
    search: ItemSearch,
    queues: list[str] | None,
    position: Keyset | None,
    first: int,
    budget: int,
) -> tuple[list[Row] | None, int]:
    """The activity order from the cursor on, a chunk at a time, until the page is full;
    the page (None: `budget` rows were read first) and the rows read."""
    newest = search.order is SearchOrder.NEWEST_FIRST
    statement = sql.search.ITEM_IDS_WALK_NEWEST if newest else sql.search.ITEM_IDS_WALK_OLDEST
    if position is None:
        at, last_id = (_LATEST, _LAST_ID) if newest else (_EARLIEST, 0)
    else:
        at, last_id = position.at, position.id
    found: list[Row] = []
    read, chunk = 0, FIRST_CHUNK
    while True:
        size = min(chunk, budget - read)
        if size <= 0:
            return None, read
        walked = await db.fetch(statement, queues=queues, at=at, id=last_id, chunk=size)
        read += len(walked)
        if read > budget:
            return None, read
        merged, more = _merged(walked)
        if merged:
            ids = [row["id"] for row in merged]
            # Only what is still in the span this chunk read (see items_search_page).
            span = (Keyset(at, last_id), Keyset(merged[-1]["updated_at"], merged[-1]["id"]))
            found += await _page(db, search, queues, ids, *span, first + 1 - len(found))
        if len(found) > first or not more:
            return found, read
        at, last_id = merged[-1]["updated_at"], merged[-1]["id"]
        chunk *= CHUNK_GROWTH


def _merged(walked: list[Row]) -> tuple[list[Row], bool]:
    """The rows of one chunk of the walk (all queues', in the walk's order) that come before
    anything the chunk left unread, and whether anything was left unread.

    Each queue gave at most `per_queue` rows; one that gave that many may hold more beyond
    its last. The first such last row in the walk's order is the frontier: every row up to it
    is in its final place, and the rows after it must wait for the next chunk, which starts
    there. The frontier's queue gave `per_queue` rows up to it, so each chunk moves on.
    """
    if not walked:
        return [], False
    per_queue = walked[0]["per_queue"]
    counts = Counter(row["queue"] for row in walked)
    seen: Counter[str] = Counter()
    for index, row in enumerate(walked):
        seen[row["queue"]] += 1
        if counts[row["queue"]] == per_queue and seen[row["queue"]] == per_queue:
            return walked[: index + 1], True
    return walked, False


async def _page(
    db: Database,
    search: ItemSearch,
    queues: list[str] | None,
    ids: list[int],
    position: Keyset | None,
    until: Keyset | None,
    page_size: int,
) -> list[Row]:
    """The candidates `ids` that match, after `position` and up to `until` (included) in
    the search's order, as they are now."""
    status = search.decision_status
    return await db.fetch(
        sql.search.ITEMS_SEARCH_PAGE,
        ids=ids,
        queues=queues,
        states=None if search.states is None else [state.value for state in search.states],
        key_prefix=search.external_key_prefix,
        subject_ref=search.subject_ref,
        priority_at_least=search.priority_at_least,
        priority_at_most=search.priority_at_most,
        enqueued_after=search.enqueued_after,
        enqueued_before=search.enqueued_before,
        by_decision=any(
            value is not None
            for value in (
                search.decided_after,
                search.decided_before,
                search.decided_by,
                search.verdict,
                search.reason_code,
                status,
                search.overturned,
            )
        ),
        decided_after=search.decided_after,
        decided_before=search.decided_before,
        decided_by=search.decided_by,
        verdict=None if search.verdict is None else search.verdict.value,
        reason_code=search.reason_code,
        provisional=None if status is None else status is DecisionStatus.PROVISIONAL,
        overturned=search.overturned,
        assigned_to=search.assigned_to,
        held=search.held,
        overdue=search.overdue,
        has_notes=search.has_notes,
        at=None if position is None else position.at,
        id=None if position is None else position.id,
        until_at=None if until is None else until.at,
        until_id=None if until is None else until.id,
        newest=search.order is SearchOrder.NEWEST_FIRST,
        page_size=page_size,
    )


def _too_broad(search: ItemSearch, limit: int, narrow: tuple[str, ...]) -> SearchTooBroad:
    """Refused, naming the filters that would bound it (a single queue narrows no further)."""
    names = tuple(
        name
        for name in narrow
        if not (name == "queues" and search.queues and len(search.queues) == 1)
    )
    if not names:
        names = _NARROW_A_WALK[1:]
    listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
    return SearchTooBroad(
        f"This search would read more than {limit:,} items for one page; narrow it with {listed}.",
        names,
    )
