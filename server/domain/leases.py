"""Claims and leases: a row lock settles the race, a fenced lease covers the minutes."""

from __future__ import annotations

from server.domain.exceptions.overdue import escalate_overdue_exceptions
from server.domain.failures import InvalidInput, NotPermitted, QueueEmpty, StaleLease
from server.domain.model import Claim, Item, Principal, Role
from server.domain.parsing import parse_id, parse_lease_token
from server.domain.queues import require_queue
from server.store import sql
from server.store.database import Database
from server.store.queries import Query

# Each pass of the claim leases an item, escalates an abandoned one, or moves overdue
# exceptions; the bound only guards against a pathological backlog of abandoned items.
MAX_ESCALATIONS_PER_CLAIM = 100


def _may_hold_leases(principal: Principal) -> NotPermitted | None:
    # Approvers hold leases too, on corrections waiting in an approval queue.
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver token may claim and hold items")
    return None


async def claim_next(
    db: Database, principal: Principal, queue: str
) -> Claim | QueueEmpty | NotPermitted | InvalidInput:
    refusal = _may_hold_leases(principal)
    if refusal:
        return refusal
    if not principal.works_in(queue):
        return NotPermitted(f"your token does not cover queue {queue!r}")
    for _ in range(MAX_ESCALATIONS_PER_CLAIM):
        row = await db.fetchrow(
            sql.items.ITEM_CLAIM_NEXT,
            queue=queue,
            actor=principal.user,
            actor_role=principal.role.value,
        )
        assert row is not None, "the claim always answers with one row"
        # Overdue exceptions change owner at claim time; the claim says when some wait.
        moved = await escalate_overdue_exceptions(db, queue) if row["overdue_exceptions"] else 0
        if row["id"] is None:
            if moved:
                continue  # one may have moved into this queue
            break
        if not row["escalated"]:
            return Claim(
                item=Item.from_row(row),
                lease_token=row["lease_token"],
                lease_expires_at=row["lease_expires_at"],
            )
    # The empty path is the place to tell an unknown queue from an empty one.
    known = await require_queue(db, principal, queue)
    if isinstance(known, InvalidInput | NotPermitted):
        return known
    if known.holder_role is not principal.role:
        return NotPermitted(f"queue {queue!r} is worked by {known.holder_role.value}s")
    return QueueEmpty(queue)


async def renew_lease(
    db: Database, principal: Principal, item_id: str, lease_token: str
) -> Item | StaleLease | NotPermitted | InvalidInput:
    # The renewal goes into the item's timeline with the holder's role.
    return await _fenced_lease_write(
        db,
        principal,
        sql.leases.LEASE_RENEW,
        item_id,
        lease_token,
        actor_role=principal.role.value,
    )


async def release_lease(
    db: Database, principal: Principal, item_id: str, lease_token: str
) -> Item | StaleLease | NotPermitted | InvalidInput:
    # The release goes into the item's timeline with the releaser's role.
    return await _fenced_lease_write(
        db,
        principal,
        sql.leases.LEASE_RELEASE,
        item_id,
        lease_token,
        actor_role=principal.role.value,
    )


async def _fenced_lease_write(
    db: Database,
    principal: Principal,
    query: Query[...],
    item_id: str,
    lease_token: str,
    **recorded: str,
) -> Item | StaleLease | NotPermitted | InvalidInput:
    """recorded: what the statement writes beside the lease (the timeline's actor role)."""
    refusal = _may_hold_leases(principal)
    if refusal:
        return refusal
    parsed_id = parse_id(item_id, "itemId")
    if isinstance(parsed_id, InvalidInput):
        return parsed_id
    token = parse_lease_token(lease_token)
    if isinstance(token, InvalidInput):
        return token
    row = await db.fetchrow(
        query,
        item_id=parsed_id,
        lease_token=token,
        actor=principal.user,
        queue_scope=principal.queue_scope(),
        **recorded,
    )
    if row is None:
        # The fence refused. An item outside the token's scope answers as one that does not
        # exist, and both as a lease that no longer holds: the caller holds nothing there.
        return StaleLease(parsed_id)
    return Item.from_row(row)
