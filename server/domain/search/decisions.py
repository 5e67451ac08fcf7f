"""Searching decisions across the caller's queues (db/queries/search_decisions.sql).

A page is read by walking, for each queue in scope, the index that serves the most telling
filter given, in (decided_at, id) order from the cursor. The walks share the scan bound: each
queue's walk reads at most SCAN_LIMIT / (number of queues) entries, so a page never reads
more than SCAN_LIMIT. A walk that stops there before finding a page's worth of matches
reports where it stopped; the page is answered only if every row it shows lies before every
such stop (nothing unread could come ahead of it), and refused as too broad otherwise.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from server.domain import reads
from server.domain.failures import InvalidInput
from server.domain.model import DecisionStatus, Principal
from server.domain.search import filters
from server.domain.search.filters import DecisionPage, DecisionSearch, SearchOrder, SearchTooBroad
from server.domain.search.keyset import Keyset, decode_keyset, encode_keyset
from server.store import sql
from server.store.database import Database
from server.store.queries import Query

KIND = "decisions"
MAX_PAGE = 200
# Beyond every decision's time, in either direction: the keyset of a first page.
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)

# The filters an index can bound a decision search by, most useful first, as GraphQL
# spells them (what a refusal asks the caller to add).
_NARROWING = (
    ("queues", "queues"),
    ("reviewer", "reviewer"),
    ("reason_code", "reasonCode"),
    ("decided_after", "decidedAfter"),
    ("decided_before", "decidedBefore"),
    ("verdict", "verdict"),
)


async def search_decisions(
    db: Database, principal: Principal, search: DecisionSearch, first: int, after: str | None
) -> DecisionPage | SearchTooBroad | InvalidInput:
    """One page of the decisions `search` matches, in its order, after the cursor `after`."""
    refused = _invalid(search, first)
    if refused is not None:
        return refused
    position = decode_keyset(KIND, search.order, after)
    if isinstance(position, InvalidInput):
        return position
    queues = await _queues(db, principal, search.queues)
    if not queues:
        return DecisionPage(decisions=[], cursors=[], has_next_page=False)
    # Read at call time, so a test (or an operator's patch) may lower it.
    scan_cap = max(1, filters.SCAN_LIMIT // len(queues))
    newest = search.order is SearchOrder.NEWEST_FIRST
    if position is None:
        position = Keyset(at=_LATEST if newest else _EARLIEST, id=0)
    statement = _statement(search)
    arguments: dict[str, Any] = {}
    if statement is not sql.search_decisions.DECISIONS_SEARCH_SUPERSEDED:
        # The superseded walk matches the status by where it reads from.
        arguments["status"] = None if search.status is None else search.status.value
    rows = await db.fetch(
        statement,
        queues=queues,
        newest_first=newest,
        decided_after=search.decided_after or _EARLIEST,
        decided_before=search.decided_before or _LATEST,
        at=position.at,
        after_id=position.id,
        reviewer=search.reviewer,
        verdict=None if search.verdict is None else search.verdict.value,
        reason_code=search.reason_code,
        scan_cap=scan_cap,
        page_size=first + 1,
        **arguments,
    )
    shown = _complete_prefix(rows, scan_cap, newest)
    if len(shown) <= first and _stopped(rows, scan_cap):
        return _too_broad(search)
    page = shown[:first]
    found = await reads.decisions_by_ids(db, [row["id"] for row in page])
    return DecisionPage(
        decisions=[found[row["id"]] for row in page],
        cursors=[
            encode_keyset(KIND, search.order, Keyset(at=row["decided_at"], id=row["id"]))
            for row in page
        ],
        has_next_page=len(shown) > first,
    )


def _invalid(search: DecisionSearch, first: int) -> InvalidInput | None:
    if not 1 <= first <= MAX_PAGE:
        return InvalidInput(f"first must be between 1 and {MAX_PAGE}", "first")
    if (
        search.decided_after is not None
        and search.decided_before is not None
        and search.decided_after > search.decided_before
    ):
        return InvalidInput("decidedAfter is later than decidedBefore", "decidedAfter")
    for value, field in (
        (search.decided_after, "decidedAfter"),
        (search.decided_before, "decidedBefore"),
    ):
        if value is not None and value.tzinfo is None:
            return InvalidInput(f"{field} needs a time zone (say Z for UTC)", field)
    for text, name in ((search.reviewer, "reviewer"), (search.reason_code, "reasonCode")):
        if text is not None and not text.strip():
            return InvalidInput(f"{name} is empty: leave it out to match any", name)
    if search.queues is not None and not search.queues:
        return InvalidInput("queues is empty: leave it out to search all your queues", "queues")
    return None


async def _queues(db: Database, principal: Principal, wanted: tuple[str, ...] | None) -> list[str]:
    """The queues to walk: the filter's within the caller's scope (outside it: nothing)."""
    if wanted is not None:
        return sorted({queue for queue in wanted if principal.works_in(queue)})
    scope = principal.queue_scope()
    if scope is None:
        return [row["name"] for row in await db.fetch(sql.queues.QUEUES_LIST)]
    # A grant's patterns match no queue name and so no decision: walk only names.
    return principal.named_queues()


def _statement(search: DecisionSearch) -> Query[Any]:
    """The walk over the index that serves the most telling filter given."""
    if search.status is DecisionStatus.SUPERSEDED:
        return sql.search_decisions.DECISIONS_SEARCH_SUPERSEDED
    if search.reviewer is not None:
        return sql.search_decisions.DECISIONS_SEARCH_BY_REVIEWER
    if search.reason_code is not None:
        return sql.search_decisions.DECISIONS_SEARCH_BY_REASON
    if search.status is DecisionStatus.PROVISIONAL:
        return sql.search_decisions.DECISIONS_SEARCH_PROVISIONAL
    if search.verdict is not None:
        return sql.search_decisions.DECISIONS_SEARCH_BY_VERDICT
    return sql.search_decisions.DECISIONS_SEARCH_BY_QUEUE


def _key(row: Any) -> tuple[datetime, int]:
    return (row["decided_at"], row["id"])


def _stopped(rows: list[Any], scan_cap: int) -> bool:
    return any(row["walked"] == scan_cap for row in rows)


def _complete_prefix(rows: list[Any], scan_cap: int, newest: bool) -> list[Any]:
    """The matches, in order, that no unread row can come ahead of."""
    stops = [_key(row) for row in rows if row["walked"] == scan_cap]
    matches = sorted((row for row in rows if row["matched"]), key=_key, reverse=newest)
    if not stops:
        return matches
    # The walk that stopped first, in this order, bounds what is known complete.
    frontier = max(stops) if newest else min(stops)
    return [row for row in matches if (_key(row) >= frontier if newest else _key(row) <= frontier)]


def _too_broad(search: DecisionSearch) -> SearchTooBroad:
    limit = filters.SCAN_LIMIT
    narrow_by = tuple(
        name
        for field, name in _NARROWING
        if getattr(search, field) is None or field.startswith("decided_")
    )
    words = ", ".join(narrow_by[:-1]) + (" or " if len(narrow_by) > 1 else "") + narrow_by[-1]
    return SearchTooBroad(
        f"This search would read more than {limit:,} decisions for one page; add {words}.",
        narrow_by,
    )
