"""A manager's hand in who works on what: assigning an item to a named reviewer, ending
an assignment, and revoking someone's lease.

Managers manage people's work (reviewers claim and decide, admins configure, managers read
the dashboards and, here, direct the work), so these three are theirs alone, within their
token's queues. An admin configures queues and catalogues but does not direct reviewers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from server.domain.controls import reservations
from server.domain.failures import (
    InvalidInput,
    ItemNotWaiting,
    NotAssigned,
    NotFound,
    NotLeased,
    NotPermitted,
)
from server.domain.model import Item, Principal, Role
from server.domain.parsing import check_instant, parse_id
from server.domain.step_up import provenance
from server.domain.text import check_text
from server.store import sql
from server.store.database import Database

MAX_REVIEWER_NAME = 200


@dataclass(frozen=True)
class Assignment:
    item_id: str
    reviewer: str
    # None: until unassigned, or until the item is decided or moves to another queue.
    until: datetime | None = None


@dataclass(frozen=True)
class Revoked:
    item: Item
    # Whose lease ended.
    owner: str


def _manager_only(principal: Principal, what: str) -> NotPermitted | None:
    if principal.role is not Role.MANAGER:
        return NotPermitted(f"only a manager token may {what}")
    return None


async def assign_item(
    db: Database, principal: Principal, assignment: Assignment
) -> Item | ItemNotWaiting | NotFound | NotPermitted | InvalidInput:
    if refusal := _manager_only(principal, "assign items"):
        return refusal
    item_id = parse_id(assignment.item_id, "itemId")
    if isinstance(item_id, InvalidInput):
        return item_id
    reviewer = assignment.reviewer.strip()
    if not 1 <= len(reviewer) <= MAX_REVIEWER_NAME:
        return InvalidInput(
            f"reviewer is the user name of a reviewer token, 1 to {MAX_REVIEWER_NAME} characters",
            "reviewer",
        )
    if problem := check_instant(assignment.until, "until"):
        return problem
    # A second try only if the diagnosis finds every condition met: something changed in
    # between (a token created, an item moved back), and the write may now pass.
    for _ in range(2):
        row = await db.fetchrow(
            sql.controls.ITEM_ASSIGN,
            item_id=item_id,
            reviewer=reviewer,
            until=assignment.until,
            max_seconds=reservations.MAX_RESERVATION_SECONDS,
            queue_scope=principal.queue_scope(),
            **principal.actor(),
        )
        if row is not None:
            return Item.from_row(row)
        found = await reservations.diagnose(db, item_id, until=assignment.until, reviewer=reviewer)
        if closed := reservations.missing_or_closed(principal, item_id, found, review_only=True):
            return closed
        assert found is not None
        if not found["reviewer_works_here"]:
            return InvalidInput(
                f"no reviewer named {reviewer[:100]!r} has a live token for queue "
                f"{found['queue']!r}",
                "reviewer",
            )
        if not found["until_in_range"]:
            return reservations.until_refusal("until")
    raise AssertionError(f"item_assign refused item {item_id} twice, for no reason it can find")


async def unassign_item(
    db: Database, principal: Principal, item_id: str
) -> Item | NotAssigned | ItemNotWaiting | NotFound | NotPermitted | InvalidInput:
    if refusal := _manager_only(principal, "unassign items"):
        return refusal
    return await reservations.end(db, principal, sql.controls.ITEM_UNASSIGN, item_id, NotAssigned)


async def revoke_lease(
    db: Database, principal: Principal, item_id: str, reason: str
) -> Revoked | NotLeased | ItemNotWaiting | NotFound | NotPermitted | InvalidInput:
    """Ends a live lease at once, whoever holds it: the holder's token is stale from now
    on, and its console hears LEASE_LOST. The reason goes into the item's timeline."""
    if refusal := _manager_only(principal, "revoke leases"):
        return refusal
    parsed = parse_id(item_id, "itemId")
    if isinstance(parsed, InvalidInput):
        return parsed
    if blank := check_text(reason, "reason", required=True):
        return blank
    row = await db.fetchrow(
        sql.leases.LEASE_REVOKE,
        item_id=parsed,
        queue_scope=principal.queue_scope(),
        **principal.actor(),
        **provenance(principal),
        reason=reason.strip(),
    )
    if row is not None:
        return Revoked(Item.from_row(row), row["revoked_owner"])
    return await reservations.ending_refused(db, principal, parsed, NotLeased(parsed))
