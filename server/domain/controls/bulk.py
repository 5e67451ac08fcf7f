"""Bulk actions: a manager releases, assigns, moves or holds many items at once, named by
id (up to MAX_BULK_ITEMS) or by a filter over one queue's waiting items.

Each call is one fenced statement (db/queries/bulk.sql), all or nothing: an unknown id, one
outside the token's queues, an exception's item, or a bad reviewer, hold reason or
destination refuses the whole call and writes nothing. Items the action cannot change are
left as they were and listed with why: under a live lease (unless the call revokes it),
not waiting (decided), or already so. Managers only, as for the single-item controls.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from server.domain.controls import reservations
from server.domain.controls.assignments import MAX_REVIEWER_NAME
from server.domain.failures import InvalidHoldReason, InvalidInput, NotFound, NotPermitted
from server.domain.model import Item, ItemState, Principal, Role
from server.domain.parsing import check_instant, parse_id
from server.domain.review.queues import not_covered
from server.domain.text import check_text
from server.store import sql
from server.store.database import Database, Row
from server.store.queries import Query

MAX_BULK_ITEMS = 500
# olderThanSeconds up to ten years: an interval PostgreSQL takes, and more than any backlog.
MAX_AGE_SECONDS = 10 * 366 * 86400


class SkipReason(enum.StrEnum):
    """Why a selected item was left as it was (db/queries/bulk.sql `outcome`)."""

    LEASED = "leased"
    NOT_WAITING = "not_waiting"
    ALREADY_SO = "already_so"


@dataclass(frozen=True)
class ItemFilter:
    queue: str
    # PENDING (waiting, no live lease) or LEASED; None: both.
    state: ItemState | None = None
    overdue: bool | None = None
    assigned: bool | None = None
    # Enqueued longer ago than this.
    older_than_seconds: int | None = None


@dataclass(frozen=True)
class Selection:
    """Exactly one of the two."""

    item_ids: list[str] | None = None
    filter: ItemFilter | None = None


@dataclass(frozen=True)
class Skipped:
    item: Item
    reason: SkipReason
    # Who holds the live lease, for LEASED.
    lease_owner: str | None = None


@dataclass(frozen=True)
class Applied:
    changed: tuple[Item, ...]
    skipped: tuple[Skipped, ...]
    # The filter matched more than MAX_BULK_ITEMS: only the oldest were taken.
    more: bool


BulkRefusal = NotFound | NotPermitted | InvalidInput | InvalidHoldReason


@dataclass(frozen=True)
class _Parsed:
    """The selection as the statements take it."""

    item_ids: list[int] | None
    queue: str | None
    state: str | None
    overdue: bool | None
    assigned: bool | None
    older_than_seconds: int | None

    def params(self) -> dict[str, Any]:
        return {
            "item_ids": self.item_ids,
            "queue": self.queue,
            "state": self.state,
            "overdue": self.overdue,
            "assigned": self.assigned,
            "older_than_seconds": self.older_than_seconds,
            "batch": MAX_BULK_ITEMS,
        }


def _parse(principal: Principal, selection: Selection) -> _Parsed | BulkRefusal:
    if principal.role is not Role.MANAGER:
        return NotPermitted("only a manager token may apply bulk actions")
    if (selection.item_ids is None) == (selection.filter is None):
        return InvalidInput("items takes exactly one of itemIds and filter", "items")
    if selection.item_ids is not None:
        if not 1 <= len(selection.item_ids) <= MAX_BULK_ITEMS:
            return InvalidInput(f"itemIds takes 1 to {MAX_BULK_ITEMS} ids", "itemIds")
        ids: set[int] = set()
        for raw in selection.item_ids:
            parsed = parse_id(raw, "itemIds")
            if isinstance(parsed, InvalidInput):
                return parsed
            ids.add(parsed)
        # Sorted: the statement locks in id order; distinct: it counts what it found.
        return _Parsed(sorted(ids), None, None, None, None, None)
    found = selection.filter
    assert found is not None
    if found.state not in (None, ItemState.PENDING, ItemState.LEASED):
        return InvalidInput("filter.state is PENDING or LEASED (waiting items only)", "state")
    age = found.older_than_seconds
    if age is not None and not 0 <= age <= MAX_AGE_SECONDS:
        return InvalidInput(
            f"olderThanSeconds must be between 0 and {MAX_AGE_SECONDS}", "olderThanSeconds"
        )
    if not principal.works_in(found.queue):
        return not_covered(found.queue)
    return _Parsed(
        None,
        found.queue,
        found.state.value if found.state else None,
        found.overdue,
        found.assigned,
        age,
    )


def _revocation_reason(revoke_leases: bool, reason: str | None) -> InvalidInput | None:
    """A revocation says why, as revokeLease does; otherwise the reason is optional."""
    return check_text(reason, "reason", required=revoke_leases)


def _body(reason: str | None) -> str | None:
    return reason.strip() if reason and reason.strip() else None


def _applied(rows: list[Row]) -> Applied | None:
    """The statement's answer, or None when its fence refused."""
    first = rows[0]
    if not first["passes"]:
        return None
    changed: list[Item] = []
    skipped: list[Skipped] = []
    for row in rows:
        if row["id"] is None:
            continue
        if row["outcome"] == "changed":
            changed.append(Item.from_row(row))
        else:
            skipped.append(
                Skipped(Item.from_row(row), SkipReason(row["outcome"]), row["skipped_owner"])
            )
    return Applied(tuple(changed), tuple(skipped), bool(first["more"]))


async def _diagnose(
    db: Database,
    principal: Principal,
    parsed: _Parsed,
    *,
    until: datetime | None = None,
    reason: str | None = None,
    reviewer: str | None = None,
    to_queue: str | None = None,
) -> BulkRefusal | None:
    """Why the fence refused; None if every condition now holds (something changed)."""
    found = await db.fetchrow(
        sql.bulk.ITEMS_BULK_DIAGNOSE,
        item_ids=parsed.item_ids,
        queue=parsed.queue,
        queue_scope=principal.queue_scope(),
        reason=reason,
        reviewer=reviewer,
        to_queue=to_queue,
        until=until,
        max_seconds=reservations.MAX_RESERVATION_SECONDS,
    )
    assert found is not None, "the diagnosis always returns a row"
    if found["missing_id"] is not None:
        return NotFound("item", str(found["missing_id"]))
    if found["exception_id"] is not None:
        return InvalidInput(
            f"item {found['exception_id']} stands for an exception: its queue follows the "
            "exception's state, so no bulk action applies to it; nothing was written",
            "itemIds",
        )
    if not found["queue_known"]:
        return not_covered(parsed.queue or "")
    if not found["to_queue_known"]:
        return InvalidInput(f"no queue named {(to_queue or '')[:100]!r}", "toQueue")
    if found["reason_missing_in"] is not None:
        return InvalidHoldReason(found["reason_missing_in"], reason or "")
    if found["reviewer_missing_in"] is not None:
        return InvalidInput(
            f"no reviewer named {(reviewer or '')[:100]!r} has a live token for queue "
            f"{found['reviewer_missing_in']!r}",
            "reviewer",
        )
    if not found["until_in_range"]:
        return reservations.until_refusal("until")
    return None


async def _run(
    db: Database,
    principal: Principal,
    parsed: _Parsed,
    query: Query[Any],
    params: dict[str, Any],
    checks: dict[str, Any],
) -> Applied | BulkRefusal:
    # A second try only if the diagnosis finds every condition met: something changed in
    # between (an item moved back into the token's queues, a token created).
    for _ in range(2):
        rows = await db.fetch(
            query,
            **parsed.params(),
            queue_scope=principal.queue_scope(),
            **principal.actor(),
            **params,
        )
        applied = _applied(rows)
        if applied is not None:
            return applied
        if refusal := await _diagnose(db, principal, parsed, **checks):
            return refusal
    raise AssertionError(f"{query.name} refused twice, for no reason it can find")


async def bulk_release(
    db: Database,
    principal: Principal,
    selection: Selection,
    *,
    revoke_leases: bool = False,
    reason: str | None = None,
) -> Applied | BulkRefusal:
    """Makes the items claimable by anyone now: ends their holds and assignments and, with
    revoke_leases, their live leases."""
    parsed = _parse(principal, selection)
    if not isinstance(parsed, _Parsed):
        return parsed
    if problem := _revocation_reason(revoke_leases, reason):
        return problem
    return await _run(
        db,
        principal,
        parsed,
        sql.bulk.ITEMS_BULK_RELEASE,
        {"revoke_leases": revoke_leases, "body": _body(reason)},
        {},
    )


async def bulk_assign(
    db: Database,
    principal: Principal,
    selection: Selection,
    *,
    reviewer: str,
    until: datetime | None = None,
    revoke_leases: bool = False,
    reason: str | None = None,
) -> Applied | BulkRefusal:
    """assignItem for each item: reserved for one reviewer until a time."""
    parsed = _parse(principal, selection)
    if not isinstance(parsed, _Parsed):
        return parsed
    name = reviewer.strip()
    if not 1 <= len(name) <= MAX_REVIEWER_NAME:
        return InvalidInput(
            f"reviewer is the user name of a reviewer token, 1 to {MAX_REVIEWER_NAME} characters",
            "reviewer",
        )
    if problem := check_instant(until, "until") or _revocation_reason(revoke_leases, reason):
        return problem
    return await _run(
        db,
        principal,
        parsed,
        sql.bulk.ITEMS_BULK_ASSIGN,
        {
            "reviewer": name,
            "until": until,
            "max_seconds": reservations.MAX_RESERVATION_SECONDS,
            "revoke_leases": revoke_leases,
            "body": _body(reason),
        },
        {"reviewer": name, "until": until},
    )


async def bulk_move(
    db: Database,
    principal: Principal,
    selection: Selection,
    *,
    to_queue: str,
    revoke_leases: bool = False,
    reason: str | None = None,
) -> Applied | BulkRefusal:
    """Moves waiting items to another queue of the token's, with their priority."""
    parsed = _parse(principal, selection)
    if not isinstance(parsed, _Parsed):
        return parsed
    if not principal.works_in(to_queue):
        return not_covered(to_queue)
    if problem := _revocation_reason(revoke_leases, reason):
        return problem
    return await _run(
        db,
        principal,
        parsed,
        sql.bulk.ITEMS_BULK_MOVE,
        {"to_queue": to_queue, "revoke_leases": revoke_leases, "body": _body(reason)},
        {"to_queue": to_queue},
    )


async def bulk_hold(
    db: Database,
    principal: Principal,
    selection: Selection,
    *,
    until: datetime,
    reason: str,
    revoke_leases: bool = False,
) -> Applied | BulkRefusal:
    """Parks waiting items until a time, for a hold reason of their queue's catalogue."""
    parsed = _parse(principal, selection)
    if not isinstance(parsed, _Parsed):
        return parsed
    if problem := check_instant(until, "until"):
        return problem
    return await _run(
        db,
        principal,
        parsed,
        sql.bulk.ITEMS_BULK_HOLD,
        {
            "reason": reason,
            "until": until,
            "max_seconds": reservations.MAX_RESERVATION_SECONDS,
            "revoke_leases": revoke_leases,
        },
        {"reason": reason, "until": until},
    )
