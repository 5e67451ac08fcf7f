"""What assignments and holds share: how far ahead their end may lie, and how a refused
change is explained (item_controls_diagnose, read only on the failure path)."""

from __future__ import annotations

from datetime import datetime

from server.domain.failures import InvalidInput, ItemNotWaiting, NotFound
from server.domain.model import Principal
from server.store import sql
from server.store.database import Database, Row

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


def until_refusal(field: str) -> InvalidInput:
    days = MAX_RESERVATION_SECONDS // 86400
    return InvalidInput(f"{field} must lie ahead, at most {days} days from now", field)
