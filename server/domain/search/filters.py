"""What a search asks for. One dataclass per kind of search, whichever surface it came from
(GraphQL's `ItemSearch`/`DecisionSearch`, the console's URL, the CSV route's query string,
`casework export search`), so every surface filters alike.

A field left None does not filter. Times are compared half-open: `after <= t < before`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from server.domain.model import Decision, DecisionStatus, Item, ItemState, Verdict

# The most rows one page of a search may read before it has filled the page. A search that
# would read more is refused (SearchTooBroad) with the filters that would narrow it.
SCAN_LIMIT = 50_000


class SearchOrder(enum.Enum):
    """Newest activity first (the default) or oldest first.

    An item's activity is its last change (`review_items.updated_at`); a decision's is when
    it was made. Ties are broken by id, so the order is total and a keyset cursor exact.
    """

    NEWEST_FIRST = "newest_first"
    OLDEST_FIRST = "oldest_first"


@dataclass(frozen=True)
class ItemSearch:
    """Items across the caller's queues.

    The decision filters (`decided_*`, `verdict`, `reason_code`, `decision_status`,
    `overturned`) match the item's current decision: the latest one not superseded (for an
    overturned item, the overturn). `overturned` asks whether that decision is an overturn.
    """

    queues: tuple[str, ...] | None = None
    states: tuple[ItemState, ...] | None = None
    external_key_prefix: str | None = None
    subject_ref: str | None = None
    priority_at_least: int | None = None
    priority_at_most: int | None = None
    enqueued_after: datetime | None = None
    enqueued_before: datetime | None = None
    decided_after: datetime | None = None
    decided_before: datetime | None = None
    decided_by: str | None = None
    verdict: Verdict | None = None
    reason_code: str | None = None
    decision_status: DecisionStatus | None = None
    overturned: bool | None = None
    assigned_to: str | None = None
    held: bool | None = None
    overdue: bool | None = None
    has_notes: bool | None = None
    order: SearchOrder = SearchOrder.NEWEST_FIRST


@dataclass(frozen=True)
class DecisionSearch:
    """Decisions across the caller's queues (an overturn is a decision of its own)."""

    queues: tuple[str, ...] | None = None
    reviewer: str | None = None
    verdict: Verdict | None = None
    reason_code: str | None = None
    decided_after: datetime | None = None
    decided_before: datetime | None = None
    status: DecisionStatus | None = None
    order: SearchOrder = SearchOrder.NEWEST_FIRST


@dataclass(frozen=True)
class SearchTooBroad:
    """The search would read more than SCAN_LIMIT rows for one page.

    `narrow_by` names the filters that would bound it, as the GraphQL input spells them
    (`queues`, `enqueuedAfter`, …), most useful first; the message says it in words.
    """

    message: str
    narrow_by: tuple[str, ...]


@dataclass(frozen=True)
class AmbiguousKey:
    """A key without a queue (or workflow) that names records in several of them."""

    message: str
    key: str
    # The queues (for an item) or workflows (for an exception) where the key is found.
    places: tuple[str, ...]


@dataclass(frozen=True)
class ItemPage:
    """One page of items, with each one's opaque keyset cursor (same order)."""

    items: list[Item]
    cursors: list[str]
    has_next_page: bool


@dataclass(frozen=True)
class DecisionPage:
    decisions: list[Decision]
    cursors: list[str]
    has_next_page: bool
