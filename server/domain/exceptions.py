"""Exceptions: raising them, and the actions of their state machine.

An exception rides on a review item: it is claimed with claimNext, and every action taken
under that claim carries the lease token. Each action is one fenced statement in
db/queries/exceptions.sql; when the fence refuses, `_why_refused` reads the record once
and names the first condition that failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from server.domain import exception_reads
from server.domain.exception_records import (
    ALLOWED_FROM,
    Closure,
    Consequence,
    ExceptionAction,
    ExceptionRecord,
    RedriveVia,
)
from server.domain.exception_rules import (
    MAX_STEP,
    check_exception_id,
    check_facts,
    check_references,
    check_steps,
    check_text,
)
from server.domain.failures import (
    AlreadyQueued,
    InvalidInput,
    InvalidTransition,
    NotPermitted,
    StaleLease,
)
from server.domain.model import Principal, Role
from server.domain.parsing import parse_lease_token
from server.domain.workflows import get_reasons, get_workflows
from server.store.database import Database
from server.store.errors import IntegrityViolation

# Corrections are numbered per source record; two exceptions of one record corrected at
# the same instant race for a number, and the loser takes the next.
CORRECTION_NUMBER_RETRIES = 3
SYSTEM_ACTOR = "casework"
SYSTEM_ROLE = "system"


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
    reasons = (await get_reasons(db, [raised.workflow])).get(raised.workflow, [])
    reason = next((r for r in reasons if r.code == raised.reason_code), None)
    if reason is None:
        known = ", ".join(r.code for r in reasons) or "none (is the workflow configured?)"
        return InvalidInput(
            f"reason code {raised.reason_code!r} is not in the catalogue of workflow "
            f"{raised.workflow!r}; known: {known}",
            "reasonCode",
        )
    if not principal.works_in(reason.owner_role):
        return NotPermitted(f"your token does not cover queue {reason.owner_role!r}")
    return await raise_checked(db, raised, actor=principal.user, actor_role=principal.role.value)


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
        "exception_raise",
        raised.workflow,
        raised.source_record_id,
        raised.reason_code,
        raised.detail,
        raised.blocked_step,
        raised.completed_steps,
        raised.evidence,
        raised.context if raised.context is not None else {},
        raised.consequence.value,
        actor,
        actor_role,
        decision_id,
    )
    assert row is not None
    return Raised(await _reload(db, row["exception_id"]), bool(row["created"]))


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
        "exception_attach_evidence",
        evidence,
        note,
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
                "exception_submit_correction",
                correction.reason_code,
                correction.changes,
                correction.evidence,
                correction.stale_steps,
                correction.note,
                reason_code=correction.reason_code,
                stale_steps=correction.stale_steps,
            )
        except IntegrityViolation as violation:
            if violation.constraint != "exception_corrections_pkey":
                raise
    raise RuntimeError("could not number a correction: too many concurrent corrections")


async def approve_correction(
    db: Database,
    principal: Principal,
    exception_id: str,
    lease_token: str,
    version: int,
    note: str | None,
) -> ActionResult:
    if principal.role is not Role.APPROVER:
        return NotPermitted("approval belongs to the approver role")
    problem = check_text(note, "note", required=False)
    if problem:
        return problem
    return await _under_lease(
        db,
        principal,
        ExceptionAction.APPROVE_CORRECTION,
        exception_id,
        lease_token,
        "exception_approve_correction",
        version,
        note,
        version=version,
    )


async def reject_correction(
    db: Database, principal: Principal, exception_id: str, lease_token: str, reason: str
) -> ActionResult:
    if principal.role is not Role.APPROVER:
        return NotPermitted("rejecting a correction belongs to the approver role")
    problem = check_text(reason, "reason", required=True)
    if problem:
        return problem
    return await _under_lease(
        db,
        principal,
        ExceptionAction.REJECT_CORRECTION,
        exception_id,
        lease_token,
        "exception_reject_correction",
        reason,
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
    problem = check_text(note, "note", required=False)
    if problem:
        return problem
    return await _under_lease(
        db,
        principal,
        ExceptionAction.CLOSE_EXCEPTION,
        exception_id,
        lease_token,
        "exception_close",
        closure.value,
        note,
    )


async def _under_lease(
    db: Database,
    principal: Principal,
    action: ExceptionAction,
    exception_id: str,
    lease_token: str,
    query: str,
    *args: Any,
    reason_code: str | None = None,
    stale_steps: list[str] | None = None,
    version: int | None = None,
) -> ActionResult:
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver works on exceptions under a claim")
    problem = check_exception_id(exception_id)
    if problem:
        return problem
    token = parse_lease_token(lease_token)
    if isinstance(token, InvalidInput):
        return token
    row = await db.fetchrow(
        query,
        exception_id,
        token,
        principal.user,
        principal.role.value,
        principal.queue_scope(),
        *args,
    )
    if row is not None:
        return await _reload(db, exception_id)
    return await _why_refused(
        db,
        principal,
        action,
        exception_id,
        token,
        reason_code=reason_code,
        stale_steps=stale_steps,
        version=version,
    )


# --- redrives and reopening: no claim; the state and version are the fence -----------------


@dataclass(frozen=True)
class RedriveQueued:
    exception: ExceptionRecord
    redrive_key: str


async def request_redrive(
    db: Database, principal: Principal, exception_id: str, version: int
) -> RedriveQueued | AlreadyQueued | InvalidTransition | NotPermitted | InvalidInput:
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver may request a redrive")
    problem = check_exception_id(exception_id)
    if problem:
        return problem
    async with db.transaction() as tx:
        row = await tx.fetchrow(
            "exception_request_redrive",
            exception_id,
            version,
            principal.user,
            principal.role.value,
            principal.queue_scope(),
        )
        if row is not None and row["nothing_to_reapply"]:
            # The decision was carried out already: the work is done, say so at once.
            await report_checked(
                tx,
                row["key"],
                True,
                "the decision had been carried out already; nothing to re-apply",
                actor=SYSTEM_ACTOR,
                actor_role=SYSTEM_ROLE,
            )
    if row is not None:
        if not row["queued"]:
            return AlreadyQueued(exception_id, row["key"])
        return RedriveQueued(await _reload(db, exception_id), row["key"])
    for redrive in await exception_reads.redrives_of(db, exception_id):
        if redrive.version == version:
            return AlreadyQueued(exception_id, redrive.key)
    refusal = await _why_refused(
        db, principal, ExceptionAction.REQUEST_REDRIVE, exception_id, None, version=version
    )
    # Without a lease there is no lease to be stale, and a refused write returns no record.
    assert not isinstance(refusal, ExceptionRecord | StaleLease)
    return refusal


@dataclass(frozen=True)
class RedriveReported:
    exception: ExceptionRecord
    # The same result for the same key was reported before: nothing changed.
    already_reported: bool


async def report_redrive_result(
    db: Database, principal: Principal, redrive_key: str, succeeded: bool, detail: str | None
) -> RedriveReported | InvalidTransition | NotPermitted | InvalidInput:
    if principal.role is not Role.INTEGRATION:
        return NotPermitted("the owning system (an integration token) reports redrive results")
    problem = check_text(detail, "detail", required=False)
    if problem:
        return problem
    return await report_checked(
        db,
        redrive_key,
        succeeded,
        detail,
        actor=principal.user,
        actor_role=principal.role.value,
        scope=principal.queue_scope(),
        principal=principal,
    )


async def report_checked(
    db: Database,
    redrive_key: str,
    succeeded: bool,
    detail: str | None,
    *,
    actor: str,
    actor_role: str,
    scope: list[str] | None = None,
    principal: Principal | None = None,
) -> RedriveReported | InvalidTransition | NotPermitted | InvalidInput:
    row = await db.fetchrow(
        "exception_report_redrive_result",
        redrive_key,
        succeeded,
        detail,
        actor,
        actor_role,
        scope,
    )
    redrive = await exception_reads.redrive_by_key(db, redrive_key)
    if redrive is None:
        return InvalidInput(f"no redrive with key {redrive_key[:200]!r}", "redriveKey")
    exception = await _reload(db, redrive.exception_id)
    if row is not None:
        return RedriveReported(exception, already_reported=False)
    if principal is not None and not any(map(principal.works_in, exception.queues)):
        return NotPermitted(f"your token does not cover the queues of {exception.id}")
    workflow = (await get_workflows(db, [exception.workflow]))[exception.workflow]
    by_casework = workflow.redrive_via is RedriveVia.CASEWORK
    # Casework may also say that a webhook redrive could not be delivered.
    undeliverable = workflow.redrive_via is RedriveVia.WEBHOOK and not succeeded
    if by_casework != (actor_role == SYSTEM_ROLE) and not (
        undeliverable and actor_role == SYSTEM_ROLE
    ):
        answerer = "Casework itself" if by_casework else "the owning system"
        return NotPermitted(
            f"redrives of workflow {exception.workflow!r} are answered by {answerer}"
        )
    if redrive.succeeded is succeeded:
        return RedriveReported(exception, already_reported=True)
    if redrive.version != exception.version or redrive.succeeded is not None:
        return _transition_refused(
            exception,
            ExceptionAction.REPORT_REDRIVE_RESULT,
            f"redrive {redrive.key} was answered already or is no longer the current one; "
            f"the exception is {exception.state.value}",
        )
    return _transition_refused(exception, ExceptionAction.REPORT_REDRIVE_RESULT)


async def reopen_exception(
    db: Database, principal: Principal, exception_id: str, reason: str
) -> ActionResult:
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver may reopen an exception")
    problem = check_exception_id(exception_id) or check_text(reason, "reason", required=True)
    if problem:
        return problem
    try:
        row = await db.fetchrow(
            "exception_reopen",
            exception_id,
            principal.user,
            principal.role.value,
            principal.queue_scope(),
            reason,
        )
    except IntegrityViolation as violation:
        if violation.constraint != "exceptions_open_once":
            raise
        return InvalidInput(
            "another exception is open for the same workflow, record and reason; work on that one",
            "exceptionId",
        )
    if row is not None:
        return await _reload(db, exception_id)
    return await _why_refused(db, principal, ExceptionAction.REOPEN_EXCEPTION, exception_id, None)


# --- refusals ------------------------------------------------------------------------------


async def _reload(db: Database, exception_id: str) -> ExceptionRecord:
    found = await exception_reads.exceptions_by_ids(db, [exception_id])
    return found[exception_id]


def _transition_refused(
    exception: ExceptionRecord, action: ExceptionAction, message: str | None = None
) -> InvalidTransition:
    allowed = tuple(a.value for a in exception.allowed_actions)
    if message is None:
        if exception.state not in ALLOWED_FROM[action]:
            message = (
                f"{action.value} is not allowed while the exception is "
                f"{exception.state.value}; allowed now: {', '.join(allowed) or 'nothing'}"
            )
        else:
            message = (
                f"reason {exception.reason_code!r} of workflow {exception.workflow!r} does not "
                f"allow {action.value}"
            )
    return InvalidTransition(exception.id, exception.state.value, action.value, allowed, message)


async def _why_refused(
    db: Database,
    principal: Principal,
    action: ExceptionAction,
    exception_id: str,
    token: UUID | None,
    *,
    reason_code: str | None = None,
    stale_steps: list[str] | None = None,
    version: int | None = None,
) -> ActionResult:
    """The fence refused the write; name the first condition that failed."""
    found = await exception_reads.exceptions_by_ids(db, [exception_id])
    exception = found.get(exception_id)
    if exception is None:
        return InvalidInput(f"no exception {exception_id}", "exceptionId")
    if not any(map(principal.works_in, exception.queues)):
        return NotPermitted(f"your token does not cover the queues of {exception_id}")
    if (
        exception.state not in ALLOWED_FROM[action]
        or action not in exception.reason_allowed_actions
    ):
        return _transition_refused(exception, action)
    if token is not None:
        holds = (
            exception.item_pending
            and exception.lease_live
            and exception.lease_token == token
            and exception.lease_owner == principal.user
        )
        if not holds:
            return StaleLease(exception.item_id)
        if not principal.works_in(exception.item_queue):
            return NotPermitted(f"your token does not cover queue {exception.item_queue!r}")
    if reason_code is not None and reason_code != exception.reason_code:
        return InvalidInput(
            f"a correction is for the exception's own reason, {exception.reason_code!r}",
            "reasonCode",
        )
    if stale_steps and not set(stale_steps) <= set(exception.completed_steps):
        return InvalidInput("a stale step must be one of the completed steps", "staleSteps")
    if version is not None and version != exception.version:
        return InvalidInput(
            f"version {version} is not the current correction (v{exception.version})", "version"
        )
    if action is ExceptionAction.APPROVE_CORRECTION:
        corrections = await exception_reads.corrections_of(db, exception_id)
        current = next((c for c in corrections if c.version == exception.version), None)
        if current is not None and current.corrected_by == principal.user:
            return NotPermitted("four-eyes: whoever submitted a correction may not approve it")
    if token is not None:
        # Every condition holds now, so it failed an instant ago: a concurrent write won.
        return StaleLease(exception.item_id)
    return _transition_refused(exception, action)
