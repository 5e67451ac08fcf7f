"""What assignments and holds share: how far ahead their end may lie, and how a refused
change is explained (item_controls_diagnose, read only on the failure path)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from server.domain.failures import InvalidInput, ItemNotWaiting, NotFound
from server.domain.model import Item, Principal
from server.domain.parsing import parse_id
from server.store import sql
from server.store.database import Database, Row
from server.store.queries import Query

# An assignment or a hold ends within a year and a day: a longer one is a way of
# forgetting an item, not of scheduling it.
MAX_RESERVATION_SECONDS = 366 * 86400


async def diagnose(
    db: Database,
    item_id: int,
    *,
    until: datetime | None = None,
    reason: str | None = None,
    reviewer: str | None = None,
) -> Row | None:
    """The item as a refused change sees it now, with the checks of the arguments given."""
    return await db.fetchrow(
        sql.controls.ITEM_CONTROLS_DIAGNOSE,
        item_id=item_id,
        until=until,
        max_seconds=MAX_RESERVATION_SECONDS,
        reason=reason,
        reviewer=reviewer,
    )


def missing(
    principal: Principal, item_id: int, found: Row | None, *, review_only: bool
) -> NotFound | InvalidInput | None:
    """An item that does not exist or lies outside the token's queues (NotFound, as the bulk
    actions answer; the two answer alike, so no team learns another's item ids), or an
    exception's item where only review items are meant."""
    if found is None or not principal.works_in(found["queue"]):
        return NotFound("item", str(item_id))
    if review_only and found["kind"] == "exception":
        return InvalidInput(
            f"item {item_id} stands for an exception: its queue follows the exception's "
            "state, so it is neither assigned nor held",
            "itemId",
        )
    return None


def missing_or_closed(
    principal: Principal, item_id: int, found: Row | None, *, review_only: bool
) -> NotFound | InvalidInput | ItemNotWaiting | None:
    """`missing`, then a finished item (decided, or an exception's parked item)."""
    if refusal := missing(principal, item_id, found, review_only=review_only):
        return refusal
    assert found is not None
    if found["state"] != "pending":
        return ItemNotWaiting(item_id, found["state"])
    return None


NothingToEnd = TypeVar("NothingToEnd")


async def end(
    db: Database,
    principal: Principal,
    query: Query[...],
    item_id: str,
    nothing_to_end: Callable[[int], NothingToEnd],
) -> Item | NothingToEnd | NotFound | ItemNotWaiting | InvalidInput:
    """Ends an item's assignment or hold (`query`: item_unassign, item_resume, which take
    the item, the token's queues and who ends it) and answers with the item."""
    parsed = parse_id(item_id, "itemId")
    if isinstance(parsed, InvalidInput):
        return parsed
    row = await db.fetchrow(
        query, item_id=parsed, queue_scope=principal.queue_scope(), **principal.actor()
    )
    if row is not None:
        return Item.from_row(row)
    return await ending_refused(db, principal, parsed, nothing_to_end(parsed))


async def ending_refused(
    db: Database, principal: Principal, item_id: int, nothing_to_end: NothingToEnd
) -> NothingToEnd | NotFound | InvalidInput | ItemNotWaiting:
    """Why ending something of an item (an assignment, a hold, a lease) was refused: the item
    is missing or finished (`missing_or_closed`), or else it had nothing to end."""
    found = await diagnose(db, item_id)
    return missing_or_closed(principal, item_id, found, review_only=False) or nothing_to_end


def until_refusal(field: str) -> InvalidInput:
    days = MAX_RESERVATION_SECONDS // 86400
    return InvalidInput(f"{field} must lie ahead, at most {days} days from now", field)
