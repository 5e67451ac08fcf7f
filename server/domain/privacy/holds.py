"""Holds: nothing under one is erased, by retention or by request (docs/privacy.md).

A hold names a subject (all of its items) or items, a basis (litigation, an investigation,
a regulator's request) and optionally the moment it ends by itself. Holds and their releases
are append-only rows; both are in the privacy log. Only the compliance role places and
releases them (an admin does not: holds are a legal matter, not configuration), and only for
subjects and items in its queues (a compliance token naming no queue covers all of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.model import Principal, Role
from server.store import sql
from server.store.database import Database, Row

MAX_BASIS = 2000
MAX_HOLD_ITEMS = 1000


@dataclass(frozen=True)
class Hold:
    id: int
    subject_ref: str | None
    item_ids: tuple[int, ...] | None
    basis: str
    until: datetime | None
    placed_by: str
    placed_at: datetime
    released_by: str | None = None
    released_at: datetime | None = None
    release_reason: str | None = None

    @classmethod
    def from_row(cls, row: Row) -> Hold:
        return cls(
            id=row["id"],
            subject_ref=row["subject_ref"],
            item_ids=None if row["item_ids"] is None else tuple(row["item_ids"]),
            basis=row["basis"],
            until=row["until"],
            placed_by=row["placed_by"],
            placed_at=row["placed_at"],
            released_by=row["released_by"],
            released_at=row["released_at"],
            release_reason=row["release_reason"],
        )

    def live(self, now: datetime) -> bool:
        return self.released_at is None and (self.until is None or self.until > now)


@dataclass(frozen=True)
class LiveHold:
    """A hold that keeps some of the items asked about from being erased."""

    id: int
    basis: str
    until: datetime | None
    item_ids: tuple[int, ...]


def compliance_refusal(principal: Principal, what: str) -> NotPermitted | None:
    if principal.role is not Role.COMPLIANCE:
        return NotPermitted(f"only the compliance role may {what}")
    return None


def text_problem(value: str, field: str, limit: int = MAX_BASIS) -> InvalidInput | None:
    if not value.strip() or len(value) > limit:
        return InvalidInput(f"{field} must be 1 to {limit} characters, not blank", field)
    return None


async def subject_in_scope(db: Database, principal: Principal, subject_ref: str) -> bool:
    """Whether the subject has items in the principal's queues. Subjects elsewhere answer
    like unknown ones."""
    rows = await db.fetch(
        sql.privacy_erasure.SUBJECT_ITEMS,
        subject_ref=subject_ref,
        queues=principal.queue_scope(),
    )
    return bool(rows)


async def place_hold(
    db: Database,
    principal: Principal,
    *,
    subject_ref: str | None,
    item_ids: Sequence[int] | None,
    basis: str,
    until: datetime | None,
    now: datetime | None = None,
) -> Hold | NotPermitted | InvalidInput | NotFound:
    if refusal := compliance_refusal(principal, "place a hold"):
        return refusal
    now = now or datetime.now(UTC)
    if (subject_ref is None) == (item_ids is None):
        return InvalidInput("a hold names a subjectRef or itemIds, not both", "subjectRef")
    if problem := text_problem(basis, "basis"):
        return problem
    if until is not None and until <= now:
        return InvalidInput("until must be in the future (leave it out: until released)", "until")
    async with db.transaction() as tx:
        if subject_ref is not None:
            if not await subject_in_scope(tx, principal, subject_ref):
                return NotFound("subject", subject_ref)
            await tx.fetchrow(sql.privacy_erasure.SUBJECT_LOCK, subject_ref=subject_ref)
            ids = None
        else:
            assert item_ids is not None
            ids = sorted(set(item_ids))
            if not ids or len(ids) > MAX_HOLD_ITEMS:
                return InvalidInput(f"itemIds names 1 to {MAX_HOLD_ITEMS} items", "itemIds")
            rows = await tx.fetch(sql.privacy_erasure.ITEMS_SUBJECTS, item_ids=ids)
            found = {
                r["id"]: r
                for r in rows
                if r["subject_ref"] is not None and principal.works_in(r["queue"])
            }
            if missing := [i for i in ids if i not in found]:
                return NotFound("item with personal data", str(missing[0]))
            for subject in sorted({r["subject_ref"] for r in found.values()}):
                await tx.fetchrow(sql.privacy_erasure.SUBJECT_LOCK, subject_ref=subject)
        row = await tx.fetchrow(
            sql.privacy_erasure.HOLD_INSERT,
            subject_ref=subject_ref,
            item_ids=ids,
            basis=basis,
            until=until,
            **principal.actor(),
        )
    assert row is not None
    return Hold.from_row(row)


async def release_hold(
    db: Database, principal: Principal, hold_id: int, reason: str
) -> Hold | NotPermitted | InvalidInput | NotFound:
    """Ends a hold. Releasing it again changes nothing and answers the first release."""
    if refusal := compliance_refusal(principal, "release a hold"):
        return refusal
    if problem := text_problem(reason, "reason"):
        return problem
    async with db.transaction() as tx:
        row = await tx.fetchrow(sql.privacy_erasure.HOLD_GET, hold_id=hold_id)
        if row is None or not await _hold_in_scope(tx, principal, Hold.from_row(row)):
            return NotFound("hold", str(hold_id))
        await tx.fetch(
            sql.privacy_erasure.HOLD_RELEASE, hold_id=hold_id, reason=reason, **principal.actor()
        )
        row = await tx.fetchrow(sql.privacy_erasure.HOLD_GET, hold_id=hold_id)
    assert row is not None
    return Hold.from_row(row)


async def _hold_in_scope(db: Database, principal: Principal, hold: Hold) -> bool:
    if principal.queue_scope() is None:
        return True
    if hold.subject_ref is not None:
        return await subject_in_scope(db, principal, hold.subject_ref)
    rows = await db.fetch(sql.privacy_erasure.ITEMS_SUBJECTS, item_ids=list(hold.item_ids or ()))
    return bool(rows) and all(principal.works_in(r["queue"]) for r in rows)


async def live_holds(db: Database, item_ids: Sequence[int], now: datetime) -> list[LiveHold]:
    """The holds that keep any of these items from being erased at `now`."""
    if not item_ids:
        return []
    rows = await db.fetch(sql.privacy_erasure.HOLDS_LIVE, item_ids=list(item_ids), now=now)
    return [LiveHold(r["id"], r["basis"], r["until"], tuple(r["item_ids"])) for r in rows]
