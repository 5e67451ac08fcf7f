"""Erasure of a subject's personal data: on request (four-eyes), by retention, and again
after a restore (docs/privacy.md).

- `request_erasure`: a compliance officer asks, with a basis. The request covers the
  subject's items in the officer's queues.
- `approve_erasure`: another compliance officer approves. If a hold or a retention period
  that has not ended keeps any of those items, the answer is a deferral with the basis and
  the date it ends (None when unknown), and the subject is restricted (GDPR Art. 18: only
  compliance sees its values) until the worker carries the erasure out. Otherwise the
  erasure happens now and the answer is a receipt. Approving again answers the same receipt.
- Every erasure runs `casework_erase_subject` (migration 0028), the only way values, salts
  and keys are destroyed; its ledger line is appended before the transaction commits, and
  the process's cached copy of the subject's key is dropped after.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.model import Principal
from server.domain.privacy.holds import (
    compliance_refusal,
    live_holds,
    subject_in_scope,
    text_problem,
)
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger, LedgerEntry
from server.domain.privacy.receipts import (
    DeferralReason,
    ErasureDeferred,
    ErasureReceipt,
    deferral_of,
    evidence_of,
)
from server.domain.privacy.retention import retention_periods
from server.store import sql
from server.store.database import Database, Row

# How the worker and `casework privacy replay` appear in the privacy log.
WORKER_ACTOR = "casework:retention-worker"
REPLAY_ACTOR = "casework:privacy-replay"
SYSTEM_ROLE = "system"


@dataclass(frozen=True)
class ErasureRequest:
    id: int
    subject_ref: str
    basis: str
    requested_by: str
    requested_at: datetime
    queues: tuple[str, ...] | None


@dataclass(frozen=True)
class FourEyesRequired:
    request_id: int
    message: str = (
        "four-eyes: whoever requested an erasure may not approve it; another compliance "
        "officer must; nothing was written"
    )


@dataclass(frozen=True)
class Erased:
    """What one call of casework_erase_subject did."""

    subject_ref: str
    erased_at: datetime
    paths: dict[int, tuple[str, ...]]
    fields_erased: int
    notes_erased: int
    keys_shredded: int
    held_item_ids: tuple[int, ...]

    @property
    def changed(self) -> bool:
        return self.fields_erased + self.notes_erased + self.keys_shredded > 0

    @classmethod
    def of(cls, result: dict[str, Any]) -> Erased:
        return cls(
            subject_ref=result["subject_ref"],
            erased_at=datetime.fromisoformat(result["erased_at"]),
            paths={int(i["item_id"]): tuple(i["paths"]) for i in result["items"]},
            fields_erased=result["fields_erased"],
            notes_erased=result["notes_erased"],
            keys_shredded=result["keys_shredded"],
            held_item_ids=tuple(result["held_item_ids"]),
        )


async def erase(
    tx: Database,
    ledger: ErasureLedger,
    *,
    subject_ref: str,
    item_ids: Sequence[int] | None,
    queues: Sequence[str] | None,
    request_id: int | None,
    actor: str,
    actor_role: str,
    reason_kind: str,
    ledger_kind: str | None,
) -> Erased:
    """Runs the erasure inside `tx` and, if it changed anything, appends its ledger line
    before the caller commits. The caller forgets the subject's key once committed."""
    row = await tx.fetchrow(
        sql.privacy_erasure.ERASE_SUBJECT,
        subject_ref=subject_ref,
        item_ids=None if item_ids is None else list(item_ids),
        queues=None if queues is None else list(queues),
        request_id=request_id,
        actor=actor,
        actor_role=actor_role,
        reason_kind=reason_kind,
    )
    assert row is not None
    erased = Erased.of(row["result"])
    if erased.changed and ledger_kind is not None:
        entry = LedgerEntry(
            subject_ref=subject_ref,
            kind=ledger_kind,
            at=erased.erased_at,
            item_ids=tuple(sorted(erased.paths)),
            request_id=request_id,
            queues=None if queues is None else tuple(queues),
        )
        await asyncio.to_thread(ledger.append, [entry])
    return erased


def _request(row: Row) -> ErasureRequest:
    return ErasureRequest(
        id=row["id"],
        subject_ref=row["subject_ref"],
        basis=row["basis"],
        requested_by=row["requested_by"],
        requested_at=row["requested_at"],
        queues=None if row["queues"] is None else tuple(row["queues"]),
    )


def _covers(principal: Principal, queues: tuple[str, ...] | None) -> bool:
    scope = principal.queue_scope()
    if scope is None:
        return True
    return queues is not None and set(queues) <= set(scope)


async def request_erasure(
    db: Database, principal: Principal, subject_ref: str, basis: str
) -> ErasureRequest | NotPermitted | InvalidInput | NotFound:
    if refusal := compliance_refusal(principal, "request an erasure"):
        return refusal
    if problem := text_problem(basis, "basis"):
        return problem
    if not await subject_in_scope(db, principal, subject_ref):
        return NotFound("subject", subject_ref)
    row = await db.fetchrow(
        sql.privacy_erasure.ERASURE_REQUEST_INSERT,
        subject_ref=subject_ref,
        basis=basis,
        queues=principal.queue_scope(),
        **principal.actor(),
    )
    assert row is not None
    return _request(row)


async def blockers(
    db: Database, subject_ref: str, queues: Sequence[str] | None, now: datetime
) -> tuple[DeferralReason, ...]:
    """What keeps the subject's items (in `queues`) from being erased at `now`."""
    items = await db.fetch(
        sql.privacy_erasure.SUBJECT_ITEMS,
        subject_ref=subject_ref,
        queues=None if queues is None else list(queues),
    )
    ids = [r["id"] for r in items if r["has_personal"]]
    reasons = [
        DeferralReason("hold", h.basis, h.until, h.item_ids, hold_id=h.id)
        for h in await live_holds(db, ids, now)
    ]
    by_class: dict[str, list[Any]] = {}
    for period in await retention_periods(db, ids):
        if period.running(now):
            by_class.setdefault(period.retention_class, []).append(period)
    for name, periods in sorted(by_class.items()):
        ends = [p.ends_at for p in periods]
        reasons.append(
            DeferralReason(
                "retention",
                periods[0].basis,
                None if any(e is None for e in ends) else max(ends),
                tuple(sorted(p.item_id for p in periods)),
                retention_class=name,
            )
        )
    return tuple(reasons)


async def approve_erasure(
    db: Database,
    principal: Principal,
    request_id: int,
    keyring: Keyring | None,
    ledger: ErasureLedger,
    now: datetime | None = None,
) -> ErasureReceipt | ErasureDeferred | FourEyesRequired | NotPermitted | NotFound:
    if refusal := compliance_refusal(principal, "approve an erasure"):
        return refusal
    now = now or datetime.now(UTC)
    async with db.transaction() as tx:
        row = await tx.fetchrow(sql.privacy_erasure.ERASURE_REQUEST_GET, request_id=request_id)
        if row is None or not _covers(principal, _request(row).queues):
            return NotFound("erasure request", str(request_id))
        if row["requested_by"] == principal.user:
            return FourEyesRequired(request_id)
        await tx.fetchrow(sql.privacy_erasure.SUBJECT_LOCK, subject_ref=row["subject_ref"])
        # Read again under the subject's lock: an approval just committed is seen here.
        row = await tx.fetchrow(sql.privacy_erasure.ERASURE_REQUEST_GET, request_id=request_id)
        assert row is not None
        if row["outcome"] == "executed":
            return ErasureReceipt.from_json(row["receipt"])
        request = _request(row)
        reasons = await blockers(tx, request.subject_ref, request.queues, now)
        if reasons:
            return await _defer(tx, principal, request, reasons, now, row)
        receipt = await _execute(
            tx,
            ledger,
            request,
            approved_by=principal.user,
            actor=principal.user,
            actor_role=principal.role.value,
        )
    if keyring is not None:
        keyring.forget(request.subject_ref)
    return receipt


async def _defer(
    tx: Database,
    principal: Principal,
    request: ErasureRequest,
    reasons: Sequence[DeferralReason],
    now: datetime,
    latest: Row,
) -> ErasureDeferred:
    basis, until = deferral_of(reasons)
    restricted = await tx.fetchrow(
        sql.privacy_erasure.SUBJECT_RESTRICT, subject_ref=request.subject_ref, at=now
    )
    assert restricted is not None
    deferred_by = principal.user
    same = (
        latest["outcome"] == "deferred"
        and latest["deferred_basis"] == basis
        and latest["deferred_until"] == until
    )
    if same:
        deferred_by = latest["decided_by"]
    else:
        await tx.fetchrow(
            sql.privacy_erasure.ERASURE_OUTCOME_INSERT,
            request_id=request.id,
            outcome="deferred",
            deferred_basis=basis,
            deferred_until=until,
            receipt=None,
            subject_ref=request.subject_ref,
            **principal.actor(),
        )
    return ErasureDeferred(
        request_id=request.id,
        subject_ref=request.subject_ref,
        basis=basis,
        until=until,
        restricted_at=restricted["restricted_at"],
        deferred_by=deferred_by,
        reasons=tuple(reasons),
    )


async def _execute(
    tx: Database,
    ledger: ErasureLedger,
    request: ErasureRequest,
    *,
    approved_by: str,
    actor: str,
    actor_role: str,
) -> ErasureReceipt:
    erased = await erase(
        tx,
        ledger,
        subject_ref=request.subject_ref,
        item_ids=None,
        queues=request.queues,
        request_id=request.id,
        actor=actor,
        actor_role=actor_role,
        reason_kind="erasure_executed",
        ledger_kind="request",
    )
    receipt = ErasureReceipt(
        request_id=request.id,
        subject_ref=request.subject_ref,
        erased_at=erased.erased_at,
        requested_by=request.requested_by,
        approved_by=approved_by,
        basis=request.basis,
        items=await evidence_of(tx, erased.paths),
        fields_erased=erased.fields_erased,
        notes_erased=erased.notes_erased,
        keys_shredded=erased.keys_shredded,
        held_item_ids=erased.held_item_ids,
    )
    await tx.fetchrow(
        sql.privacy_erasure.ERASURE_OUTCOME_INSERT,
        request_id=request.id,
        outcome="executed",
        deferred_basis=None,
        deferred_until=None,
        receipt=receipt.to_json(),
        subject_ref=request.subject_ref,
        actor=actor,
        actor_role=actor_role,
    )
    if not erased.held_item_ids:
        await tx.fetch(sql.privacy_erasure.SUBJECT_UNRESTRICT, subject_ref=request.subject_ref)
    return receipt


async def execute_deferred(
    db: Database, keyring: Keyring | None, ledger: ErasureLedger, now: datetime, batch: int
) -> list[ErasureReceipt]:
    """The worker's: carries out deferred requests whose holds and periods have ended."""
    receipts = []
    for due in await db.fetch(sql.privacy_erasure.ERASURE_DEFERRED_PENDING, now=now, batch=batch):
        async with db.transaction() as tx:
            await tx.fetchrow(sql.privacy_erasure.SUBJECT_LOCK, subject_ref=due["subject_ref"])
            row = await tx.fetchrow(sql.privacy_erasure.ERASURE_REQUEST_GET, request_id=due["id"])
            if row is None or row["outcome"] != "deferred":
                continue  # carried out meanwhile
            request = _request(row)
            if await blockers(tx, request.subject_ref, request.queues, now):
                continue
            receipts.append(
                await _execute(
                    tx,
                    ledger,
                    request,
                    approved_by=due["approved_by"],
                    actor=WORKER_ACTOR,
                    actor_role=SYSTEM_ROLE,
                )
            )
        if keyring is not None:
            keyring.forget(request.subject_ref)
    return receipts


async def erase_retained(
    db: Database,
    keyring: Keyring | None,
    ledger: ErasureLedger,
    subject_ref: str,
    item_ids: Sequence[int],
) -> Erased:
    """The worker's: erases items whose retention period ended (holds are re-checked by
    the erasure function itself)."""
    async with db.transaction() as tx:
        erased = await erase(
            tx,
            ledger,
            subject_ref=subject_ref,
            item_ids=item_ids,
            queues=None,
            request_id=None,
            actor=WORKER_ACTOR,
            actor_role=SYSTEM_ROLE,
            reason_kind="retention_erased",
            ledger_kind="retention",
        )
    if keyring is not None:
        keyring.forget(subject_ref)
    return erased


@dataclass(frozen=True)
class Replayed:
    entries: int
    fields_erased: int
    notes_erased: int
    keys_shredded: int
    # Items a hold in the restored database still keeps: check whether the hold was released
    # after the backup was taken; release it again, then replay again.
    held_item_ids: tuple[int, ...]


async def replay(db: Database, ledger: ErasureLedger, keyring: Keyring | None = None) -> Replayed:
    """Applies every ledger entry again (after a restore): idempotent, each logged as
    erasure_replayed."""
    totals = [0, 0, 0, 0]
    held: set[int] = set()
    for entry in ledger.entries():
        async with db.transaction() as tx:
            erased = await erase(
                tx,
                ledger,
                subject_ref=entry.subject_ref,
                # The items name what was erased; their queue then may not be their queue in
                # the restored copy.
                item_ids=entry.item_ids,
                queues=None,
                request_id=entry.request_id,
                actor=REPLAY_ACTOR,
                actor_role=SYSTEM_ROLE,
                reason_kind="erasure_replayed",
                ledger_kind=None,
            )
        if keyring is not None:
            keyring.forget(entry.subject_ref)
        totals[0] += 1
        totals[1] += erased.fields_erased
        totals[2] += erased.notes_erased
        totals[3] += erased.keys_shredded
        held.update(erased.held_item_ids)
    return Replayed(
        entries=totals[0],
        fields_erased=totals[1],
        notes_erased=totals[2],
        keys_shredded=totals[3],
        held_item_ids=tuple(sorted(held)),
    )
