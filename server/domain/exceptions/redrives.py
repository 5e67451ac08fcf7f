"""Redrives: issuing the one redrive of an approved correction, and recording the owning
system's durable result. No one holds an exception once its correction is approved (its
item is parked), so these are fenced by the state, the version and the redrive key rather
than a lease."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from server.domain.exceptions import reads
from server.domain.exceptions.records import (
    DELIVERED_ROUTES,
    SYSTEM_ACTOR,
    SYSTEM_ROLE,
    ExceptionAction,
    ExceptionRecord,
    RedriveVia,
)
from server.domain.exceptions.refusals import (
    no_such_exception,
    reload_exception,
    transition_refused,
    visible_exception,
    why_refused,
)
from server.domain.exceptions.rules import check_exception_id
from server.domain.exceptions.workflows import get_workflows
from server.domain.failures import (
    AlreadyQueued,
    InvalidInput,
    InvalidTransition,
    NotPermitted,
    StaleLease,
)
from server.domain.model import Principal, Role
from server.domain.text import check_text
from server.store import sql
from server.store.database import Database, Row

log = logging.getLogger("casework.exceptions")


@dataclass(frozen=True)
class RedriveQueued:
    exception: ExceptionRecord
    redrive_key: str


async def request_redrive(
    db: Database, principal: Principal, exception_id: str, version: int
) -> RedriveQueued | AlreadyQueued | InvalidTransition | NotPermitted | InvalidInput:
    if principal.role not in (Role.REVIEWER, Role.APPROVER):
        return NotPermitted("only a reviewer or approver may request a redrive")
    if problem := check_exception_id(exception_id):
        return problem
    async with db.transaction() as tx:
        row = await tx.fetchrow(
            sql.exceptions.EXCEPTION_REQUEST_REDRIVE,
            exception_id=exception_id,
            version=version,
            **principal.actor(),
            queue_scope=principal.queue_scope(),
        )
        if row is not None and row["nothing_to_reapply"]:
            # The decision was carried out already: the work is done, say so at once.
            await answer_as_casework(
                tx,
                row["key"],
                True,
                "the decision had been carried out already; nothing to re-apply",
            )
    if row is not None:
        if not row["queued"]:
            return AlreadyQueued(exception_id, row["key"])
        return RedriveQueued(await reload_exception(db, exception_id), row["key"])
    # The key of an existing redrive is told only to those who may see the exception.
    if await visible_exception(db, principal, exception_id) is None:
        return no_such_exception(exception_id)
    for redrive in await reads.redrives_of(db, exception_id):
        if redrive.version == version:
            return AlreadyQueued(exception_id, redrive.key)
    refusal = await why_refused(
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
    if problem := check_text(detail, "detail", required=False):
        return problem
    return await report_checked(
        db,
        redrive_key,
        succeeded,
        detail,
        **principal.actor(),
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
    row = await _write_report(db, redrive_key, succeeded, detail, actor, actor_role, scope)
    if row is not None:
        return RedriveReported(await reload_exception(db, row["id"]), already_reported=False)
    return await _why_not_reported(db, redrive_key, succeeded, actor_role, principal)


async def answer_as_casework(
    db: Database, redrive_key: str, succeeded: bool, detail: str | None
) -> None:
    """Casework's own answer (a re-applied decision, a redrive undeliverable by webhook or
    by broker). No one reads a response here, so a recorded answer costs one statement."""
    row = await _write_report(db, redrive_key, succeeded, detail, SYSTEM_ACTOR, SYSTEM_ROLE, None)
    if row is not None:
        return
    refusal = await _why_not_reported(db, redrive_key, succeeded, SYSTEM_ROLE, None)
    if not isinstance(refusal, RedriveReported):
        # The exception moved on without this answer (answered meanwhile, reopened); its
        # history and the work list both still show what happened, so say it and go on.
        log.error("redrive %s: Casework's answer could not be recorded: %s", redrive_key, refusal)


async def _write_report(
    db: Database,
    redrive_key: str,
    succeeded: bool,
    detail: str | None,
    actor: str,
    actor_role: str,
    scope: list[str] | None,
) -> Row | None:
    return await db.fetchrow(
        sql.exceptions.EXCEPTION_REPORT_REDRIVE_RESULT,
        redrive_key=redrive_key,
        succeeded=succeeded,
        detail=detail,
        actor=actor,
        actor_role=actor_role,
        queue_scope=scope,
    )


async def _why_not_reported(
    db: Database,
    redrive_key: str,
    succeeded: bool,
    actor_role: str,
    principal: Principal | None,
) -> RedriveReported | InvalidTransition | NotPermitted | InvalidInput:
    """The report wrote nothing: the same answer given before, or the first condition that
    failed."""
    redrive = await reads.redrive_by_key(db, redrive_key)
    exception = None if redrive is None else await reload_exception(db, redrive.exception_id)
    # A key outside the token's scope reads as one that does not exist.
    if (
        redrive is None
        or exception is None
        or (principal is not None and not reads.visible_to(principal, exception))
    ):
        return InvalidInput(f"no redrive with key {redrive_key[:200]!r}", "redriveKey")
    workflow = (await get_workflows(db, [exception.workflow]))[exception.workflow]
    by_casework = workflow.redrive_via is RedriveVia.CASEWORK
    # Casework may also say that a redrive could not be delivered (by webhook or broker).
    undeliverable = workflow.redrive_via in DELIVERED_ROUTES and not succeeded
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
        return transition_refused(
            exception,
            ExceptionAction.REPORT_REDRIVE_RESULT,
            f"redrive {redrive.key} was answered already or is no longer the current one; "
            f"the exception is {exception.state.value}",
        )
    return transition_refused(exception, ExceptionAction.REPORT_REDRIVE_RESULT)
