"""Holds: a reviewer parks a claimed item until a time, for a reason from the queue's
catalogue (waiting for a customer's document, a provider's answer). The item is not
claimable until then; a claim after that finds it again, with its priority, with no
sweeper job. A hold can be ended early.

- holdItem is the lease holder's: it is fenced by the lease token, and it ends the lease.
- resumeItem has no lease to fence it (nobody holds a held item). It is for a manager, or
  for any reviewer of the queue: the answer a hold waits for may reach any member of the
  team, not only the one who parked the item.
- The catalogue is an admin's, like reason codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from server.domain.controls import reservations
from server.domain.failures import (
    InvalidHoldReason,
    InvalidInput,
    ItemNotWaiting,
    NotFound,
    NotHeld,
    NotPermitted,
    StaleLease,
)
from server.domain.model import HoldReason, Item, Principal, Role
from server.domain.parsing import check_instant, holds_lease, reviewer_lease
from server.domain.review.queues import admin_refusal
from server.domain.rows import grouped
from server.domain.text import check_label
from server.store import sql
from server.store.database import Database
from server.store.errors import IntegrityViolation

HOLD_REASON_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


@dataclass(frozen=True)
class Hold:
    item_id: str
    lease_token: str
    until: datetime
    reason: str


async def define_hold_reason(
    db: Database, principal: Principal, *, queue: str, code: str, label: str
) -> HoldReason | NotPermitted | InvalidInput:
    if refusal := admin_refusal(principal, "change a hold-reason catalogue", queue):
        return refusal
    if not HOLD_REASON_CODE.fullmatch(code):
        return InvalidInput(
            "a hold reason is 1 to 63 characters of letters, digits, '_', '.', '-'", "code"
        )
    if problem := check_label(label):
        return problem
    try:
        row = await db.fetchrow(
            sql.controls.HOLD_REASON_UPSERT, queue=queue, code=code, label=label.strip()
        )
    except IntegrityViolation as violation:
        if violation.kind == "foreign_key":
            return InvalidInput(f"unknown queue {queue!r}", "queue")
        raise
    assert row is not None
    return HoldReason.from_row(row)


async def get_hold_reasons(db: Database, queues: list[str]) -> dict[str, list[HoldReason]]:
    rows = await db.fetch(sql.controls.HOLD_REASONS_GET_BY_QUEUES, queues=queues)
    return grouped(queues, "queue", rows, HoldReason.from_row)


async def hold_item(
    db: Database, principal: Principal, hold: Hold
) -> Item | StaleLease | InvalidHoldReason | NotFound | NotPermitted | InvalidInput:
    refused = "only a reviewer token may hold items (under its lease)"
    parsed = reviewer_lease(principal, hold, refused=refused)
    if isinstance(parsed, NotPermitted | InvalidInput):
        return parsed
    item_id, token = parsed
    if problem := check_instant(hold.until, "until"):
        return problem
    # A second try only if the diagnosis finds every condition met (a reason defined in
    # between, say): the write may pass now.
    for _ in range(2):
        row = await db.fetchrow(
            sql.controls.ITEM_HOLD,
            item_id=item_id,
            lease_token=token,
            **principal.actor(),
            queue_scope=sorted(principal.queues),
            until=hold.until,
            max_seconds=reservations.MAX_RESERVATION_SECONDS,
            reason=hold.reason,
        )
        if row is not None:
            return Item.from_row(row)
        # The fence refused: say which condition failed, the lease first (as a decision).
        found = await reservations.diagnose(db, item_id, until=hold.until, reason=hold.reason)
        if refusal := reservations.missing(principal, item_id, found, review_only=True):
            return refusal
        assert found is not None
        # A decided item's lease is over too: the answer a console's lease flow knows.
        if not holds_lease(found, token, principal.user):
            return StaleLease(item_id, queue=found["queue"])
        if not found["reason_known"]:
            return InvalidHoldReason(found["queue"], hold.reason)
        if not found["until_in_range"]:
            return reservations.until_refusal("until")
    raise AssertionError(f"item_hold refused item {item_id} twice, for no reason it can find")


async def resume_item(
    db: Database, principal: Principal, item_id: str
) -> Item | NotHeld | ItemNotWaiting | NotFound | NotPermitted | InvalidInput:
    if principal.role not in (Role.MANAGER, Role.REVIEWER):
        return NotPermitted("only a manager or a reviewer of the queue may resume a held item")
    return await reservations.end(db, principal, sql.controls.ITEM_RESUME, item_id, NotHeld)
