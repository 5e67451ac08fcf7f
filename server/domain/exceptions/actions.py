"""Exceptions: raising them, and the actions of their state machine.

An exception rides on a review item: it is claimed with claimNext, and every action taken
under that claim carries the lease token. Each action is one fenced statement in
db/queries/exceptions.sql; when the fence refuses, `why_refused` (exception_refusals.py)
reads the record once and names the first condition that failed. Redrives are in
redrives.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.domain.exceptions.records import (
    Closure,
    Consequence,
    ExceptionAction,
    ExceptionRecord,
)
from server.domain.exceptions.refusals import reload_exception, why_refused
from server.domain.exceptions.rules import (
    MAX_STEP,
    check_exception_id,
    check_facts,
    check_references,
    check_steps,
)
from server.domain.exceptions.workflows import get_reasons
from server.domain.failures import (
    InvalidInput,
    InvalidTransition,
    NotPermitted,
    ReauthenticationRequired,
    StaleLease,
)
from server.domain.model import Principal, Role
from server.domain.parsing import parse_lease_token
from server.domain.step_up import provenance, step_up, step_up_refusal
from server.domain.text import check_text
from server.store import constraints, sql
from server.store.database import Database
from server.store.errors import IntegrityViolation
from server.store.queries import Query

# Corrections are numbered per source record; two exceptions of one record corrected at
# the same instant race for a number, and the loser takes the next.
CORRECTION_NUMBER_RETRIES = 3


@dataclass(frozen=True)
class RaiseInput:
    workflow: str
    source_record_id: str
    reason_code: str
    detail: str
    consequence: Consequence
    completed_steps: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    blocked_step: str | None = None
    context: Any = None


@dataclass(frozen=True)
class Raised:
    exception: ExceptionRecord
    created: bool


RaiseResult = Raised | NotPermitted | InvalidInput


async def raise_exception(db: Database, principal: Principal, raised: RaiseInput) -> RaiseResult:
    if principal.role is not Role.INTEGRATION:
        return NotPermitted("only an integration token may raise exceptions")
    problem = (
        check_text(raised.source_record_id, "sourceRecordId", required=True, limit=200)
        or check_text(raised.detail, "detail", required=True)
        or check_text(raised.blocked_step, "blockedStep", required=False, limit=MAX_STEP)
        or check_steps(raised.completed_steps, "completedSteps")
        or check_references(raised.evidence, "evidence", required=False)
        or check_facts(raised.context, "context")
    )
    if problem:
        return problem
    # A reason whose owner the token does not cover reads as absent, as does a workflow
    # with no such reason: the answer names only what the caller could raise.
    reasons = [
        r
        for r in (await get_reasons(db, [raised.workflow])).get(raised.workflow, [])
        if principal.works_in(r.owner_role)
    ]
    reason = next((r for r in reasons if r.code == raised.reason_code), None)
    if reason is None:
        known = ", ".join(r.code for r in reasons) or "none (is the workflow configured?)"
        return InvalidInput(
            f"reason code {raised.reason_code[:100]!r} is not in the catalogue of workflow "
            f"{raised.workflow[:100]!r}; known: {known}",
            "reasonCode",
        )
    return await raise_checked(db, raised, **principal.actor())


async def raise_checked(
    db: Database,
    raised: RaiseInput,
    *,
    actor: str,
    actor_role: str,
    decision_id: int | None = None,
) -> Raised:
    """Raises input that is known to be valid (the API checked it, or Casework built it)."""
    row = await db.fetchrow(
        sql.exceptions.EXCEPTION_RAISE,
        workflow=raised.workflow,
        source_record_id=raised.source_record_id,
        reason_code=raised.reason_code,
        detail=raised.detail,
        blocked_step=raised.blocked_step,
        completed_steps=raised.completed_steps,
        evidence=raised.evidence,
        context=raised.context if raised.context is not None else {},
        consequence=raised.consequence.value,
        actor=actor,
        actor_role=actor_role,
        decision_id=decision_id,
    )
    assert row is not None
    return Raised(await reload_exception(db, row["exception_id"]), bool(row["created"]))


# --- actions under a claim -----------------------------------------------------------------

ActionResult = ExceptionRecord | StaleLease | InvalidTransition | NotPermitted | InvalidInput


async def attach_evidence(
    db: Database,
    principal: Principal,
    exception_id: str,
    lease_token: str,
    evidence: list[str],
    note: str | None,
) -> ActionResult:
    problem = check_references(evidence, "evidence", required=True) or check_text(
        note, "note", required=False
    )
    if problem:
        return problem
    return await _under_lease(
        db,
        principal,
        ExceptionAction.ATTACH_EVIDENCE,
        exception_id,
        lease_token,
        sql.exceptions.EXCEPTION_ATTACH_EVIDENCE,
        {"evidence": evidence, "note": note},
    )


@dataclass(frozen=True)
class CorrectionInput:
    exception_id: str
    lease_token: str
    reason_code: str
    changes: Any
    evidence: list[str]
    stale_steps: list[str] = field(default_factory=list)
    note: str | None = None


async def submit_correction(
    db: Database, principal: Principal, correction: CorrectionInput
) -> ActionResult:
    problem = (
        check_references(correction.evidence, "evidence", required=True)
        or check_facts(correction.changes, "changes")
        or check_steps(correction.stale_steps, "staleSteps")
        or check_text(correction.note, "note", required=False)
    )
    if problem:
        return problem
    if not correction.changes:
        return InvalidInput("a correction names what it changes", "changes")
    for _ in range(CORRECTION_NUMBER_RETRIES):
        try:
            return await _under_lease(
                db,
                principal,
                ExceptionAction.SUBMIT_CORRECTION,
                correction.exception_id,
                correction.lease_token,
                sql.exceptions.EXCEPTION_SUBMIT_CORRECTION,
                {
                    "reason_code": correction.reason_code,
                    "changes": correction.changes,
                    "evidence": correction.evidence,
                    "stale_steps": correction.stale_steps,
                    "note": correction.note,
                },
                reason_code=correction.reason_code,
                stale_steps=correction.stale_steps,
            )
        except IntegrityViolation as violation:
            if violation.constraint != constraints.EXCEPTION_CORRECTIONS_ONE_PER_VERSION:
                raise
    raise RuntimeError("could not number a correction: too many concurrent corrections")


async def approve_correction(
    db: Database,
    principal: Principal,
    exception_id: str,
    lease_token: str,
    version: int,
    note: str | None,
) -> ActionResult | ReauthenticationRequired:
    if principal.role is not Role.APPROVER:
        return NotPermitted("approval belongs to the approver role")
    if problem := check_text(note, "note", required=False):
        return problem
    result = await _under_lease(
        db,
        principal,
        ExceptionAction.APPROVE_CORRECTION,
        exception_id,
        lease_token,
        sql.exceptions.EXCEPTION_APPROVE_CORRECTION,
        {"version": version, "note": note, **step_up(principal)},
        version=version,
    )
    if isinstance(result, ExceptionRecord | NotPermitted | InvalidInput):
        return result
    # Refused under the lease: the workflow's step-up setting may be why (a read on this
    # failure path only).
    state = await db.fetchrow(
        sql.exceptions.EXCEPTION_APPROVAL_STEP_UP_DIAGNOSE,
        exception_id=exception_id,
        **step_up(principal),
    )
    return step_up_refusal(principal, state) or result


async def reject_correction(
    db: Database, principal: Principal, exception_id: str, lease_token: str, reason: str
) -> ActionResult:
    if principal.role is not Role.APPROVER:
        return NotPermitted("rejecting a correction belongs to the approver role")
    if problem := check_text(reason, "reason", required=True):
        return problem
    return await _under_lease(
        db,
        principal,
        ExceptionAction.REJECT_CORRECTION,
        exception_id,
        lease_token,
        sql.exceptions.EXCEPTION_REJECT_CORRECTION,
        {"reason": reason},
    )


async def close_exception(
    db: Database,
    principal: Principal,
    exception_id: str,
    lease_token: str,
    closure: Closure,
    note: str | None,
) -> ActionResult:
    if closure is Closure.CORRECTED:
        return InvalidInput(
            "an exception closes as corrected only when the owning system reports a "
            "successful redrive",
            "closure",
        )
    if problem := check_text(note, "note", required=False):
        return problem
    return await _under_lease(
        db,
        principal,
        ExceptionAction.CLOSE_EXCEPTION,
        exception_id,
        lease_token,
        sql.exceptions.EXCEPTION_CLOSE,
        {"closure": closure.value, "note": note},
    )


async def _under_lease(
    db: Database,
    principal: Principal,
    action: ExceptionAction,
    exception_id: str,
    lease_token: str,
    query: Query[...],
    arguments: dict[str, Any],
    *,
    reason_code: str | None = None,
    stale_steps: list[str] | None = None,
    version: int | None = None,
) -> ActionResult:
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver works on exceptions under a claim")
    if problem := check_exception_id(exception_id):
        return problem
    token = parse_lease_token(lease_token)
    if isinstance(token, InvalidInput):
        return token
    row = await db.fetchrow(
        query,
        exception_id=exception_id,
        lease_token=token,
        **principal.actor(),
        **provenance(principal),
        queue_scope=principal.queue_scope(),
        **arguments,
    )
    if row is not None:
        return await reload_exception(db, exception_id)
    return await why_refused(
        db,
        principal,
        action,
        exception_id,
        token,
        reason_code=reason_code,
        stale_steps=stale_steps,
        version=version,
    )


# --- reopening: no claim; the state is the fence ------------------------------------------


async def reopen_exception(
    db: Database, principal: Principal, exception_id: str, reason: str
) -> ActionResult:
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver may reopen an exception")
    if problem := check_exception_id(exception_id) or check_text(reason, "reason", required=True):
        return problem
    try:
        row = await db.fetchrow(
            sql.exceptions.EXCEPTION_REOPEN,
            exception_id=exception_id,
            **principal.actor(),
            queue_scope=principal.queue_scope(),
            reason=reason,
        )
    except IntegrityViolation as violation:
        if violation.constraint != constraints.EXCEPTIONS_OPEN_ONCE:
            raise
        return InvalidInput(
            "another exception is open for the same workflow, record and reason; work on that one",
            "exceptionId",
        )
    if row is not None:
        return await reload_exception(db, exception_id)
    return await why_refused(db, principal, ExceptionAction.REOPEN_EXCEPTION, exception_id, None)
