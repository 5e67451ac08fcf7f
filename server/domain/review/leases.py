"""Claims and leases: a row lock settles the race, a fenced lease covers the minutes."""

from __future__ import annotations

from server.domain.exceptions.overdue import escalate_overdue_exceptions
from server.domain.failures import (
    InvalidInput,
    LeaseLimitReached,
    NotPermitted,
    QueueEmpty,
    StaleLease,
)
from server.domain.model import Claim, Item, Principal, Role
from server.domain.parsing import parse_item_lease
from server.domain.review.due import escalate_overdue_items
from server.domain.review.queues import require_queue
from server.store import sql
from server.store.database import Database
from server.store.queries import Query

# Each pass of the claim leases an item, escalates an abandoned one, moves overdue
# exceptions or items, or clears ended holds and assignments; the bound only guards against
# a pathological backlog of abandoned items.
MAX_ESCALATIONS_PER_CLAIM = 100
# Ended holds and assignments cleared per statement; the claim clears batches until none
# is left (a large hold ending at one moment is cleared in a few round trips, once).
RESERVATIONS_PER_BATCH = 500


def _may_hold_leases(principal: Principal) -> NotPermitted | None:
    # Approvers hold leases too, on corrections waiting in an approval queue.
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver token may claim and hold items")
    return None


async def claim_next(
    db: Database, principal: Principal, queue: str
) -> Claim | QueueEmpty | LeaseLimitReached | NotPermitted | InvalidInput:
    if refusal := _may_hold_leases(principal):
        return refusal
    if not principal.works_in(queue):
        return NotPermitted(f"your token does not cover queue {queue!r}")
    for _ in range(MAX_ESCALATIONS_PER_CLAIM):
        row = await db.fetchrow(sql.items.ITEM_CLAIM_NEXT, queue=queue, **principal.actor())
        assert row is not None, "the claim always answers with one row"
        # Overdue work changes queue at claim time; the claim says when some waits.
        moved = await escalate_overdue_exceptions(db, queue) if row["overdue_exceptions"] else 0
        moved += await escalate_overdue_items(db, queue) if row["overdue_items"] else 0
        if row["lease_limit_reached"]:
            held = await held_leases(db, principal, queue)
            if len(held) < row["lease_limit"]:
                continue  # one ran out since the claim counted: there is room again
            return LeaseLimitReached(queue, row["lease_limit"], tuple(held))
        if row["id"] is None:
            if row["reservations_ended"]:
                # Nothing was claimed so that an item whose hold or assignment ended comes
                # back with its priority: clear them, then claim again.
                await end_reservations(db, queue)
                continue
            if moved:
                continue  # one may have moved into this queue
            break
        if not row["escalated"]:
            return Claim.from_row(row)
    # The empty path is the place to tell an unknown queue from an empty one.
    known = await require_queue(db, principal, queue)
    if isinstance(known, InvalidInput | NotPermitted):
        return known
    if known.holder_role is not principal.role:
        return NotPermitted(f"queue {queue!r} is worked by {known.holder_role.value}s")
    return QueueEmpty(queue)


async def end_reservations(db: Database, queue: str) -> int:
    """Clears the queue's holds and assignments whose time has run out; returns how many."""
    cleared = 0
    while True:
        row = await db.fetchrow(
            sql.controls.ITEMS_END_RESERVATIONS, queue=queue, batch=RESERVATIONS_PER_BATCH
        )
        assert row is not None, "an aggregate always returns a row"
        batch = int(row["cleared"])
        cleared += batch
        if batch < RESERVATIONS_PER_BATCH:
            return cleared


async def held_leases(db: Database, principal: Principal, queue: str | None = None) -> list[Claim]:
    """The caller's live leases (in one queue, or in every queue its token covers), with
    their tokens: what a console needs to take its work up again after losing track of it."""
    if _may_hold_leases(principal):
        return []
    rows = await db.fetch(
        sql.leases.LEASES_GET_HELD,
        actor=principal.user,
        queue=queue,
        queue_scope=principal.queue_scope(),
    )
    return [Claim.from_row(row) for row in rows]


async def renew_lease(
    db: Database, principal: Principal, item_id: str, lease_token: str
) -> Item | StaleLease | NotPermitted | InvalidInput:
    """The renewal goes into the item's timeline, with the holder's role."""
    return await _fenced_lease_write(db, principal, sql.leases.LEASE_RENEW, item_id, lease_token)


async def release_lease(
    db: Database, principal: Principal, item_id: str, lease_token: str
) -> Item | StaleLease | NotPermitted | InvalidInput:
    """The release goes into the item's timeline, with the releaser's role."""
    return await _fenced_lease_write(db, principal, sql.leases.LEASE_RELEASE, item_id, lease_token)


async def _fenced_lease_write(
    db: Database, principal: Principal, query: Query[...], item_id: str, lease_token: str
) -> Item | StaleLease | NotPermitted | InvalidInput:
    if refusal := _may_hold_leases(principal):
        return refusal
    parsed = parse_item_lease(item_id, lease_token)
    if isinstance(parsed, InvalidInput):
        return parsed
    parsed_id, token = parsed
    row = await db.fetchrow(
        query,
        item_id=parsed_id,
        lease_token=token,
        queue_scope=principal.queue_scope(),
        **principal.actor(),
    )
    if row is None:
        # The fence refused. An item outside the token's scope answers as one that does not
        # exist, and both as a lease that no longer holds: the caller holds nothing there.
        return StaleLease(parsed_id)
    return Item.from_row(row)
