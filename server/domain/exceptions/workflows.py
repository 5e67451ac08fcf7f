"""Workflows and their exception-reason catalogues. Changing them is the admin's job."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from server.domain.exceptions.records import (
    Consequence,
    ExceptionAction,
    ExceptionReason,
    RedriveVia,
    Workflow,
)
from server.domain.exceptions.rules import NAME
from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal, Role
from server.domain.review.queues import REASON_CODE, admin_refusal, check_webhook
from server.domain.review.webhook_secrets import DEFAULT_OVERLAP_HOURS, checked_rotation
from server.domain.rows import grouped
from server.domain.step_up import check_step_up
from server.domain.text import check_label
from server.store import sql
from server.store.database import Database
from server.store.errors import IntegrityViolation

MAX_DUE_SECONDS = 365 * 86400
# A team's hands-on minutes per day: a thousand people working around the clock.
MAX_MINUTES_PER_DAY = 1000 * 24 * 60


class WorkflowSetting(enum.Enum):
    """A setting that may be unset again (configureWorkflow's `clear`): a None in
    WorkflowSettings leaves a setting as it is."""

    REVIEWER_MINUTES_PER_DAY = "reviewer_minutes_per_day"
    APPROVER_MINUTES_PER_DAY = "approver_minutes_per_day"


@dataclass(frozen=True)
class WorkflowSettings:
    name: str
    approval_queue: str | None = None
    # How redrives reach the owning system; None leaves it (and the webhook) as it is.
    redrive_via: RedriveVia | None = None
    redrive_target: str | None = None
    redrive_secret: str | None = None
    redrive_max_attempts: int | None = None
    redrive_timeout_seconds: float | None = None
    # A redrive webhook also sends Casework-Signature and Idempotency-Key (migration 0032).
    redrive_legacy_headers: bool | None = None
    # Capacity: the hands-on minutes per day its operators and approvers can give.
    reviewer_minutes_per_day: float | None = None
    approver_minutes_per_day: float | None = None
    # Settings to unset (to NULL: capacity unknown again).
    clear: frozenset[WorkflowSetting] = frozenset()
    # Step-up (migration 0023): approvals need a sign-in at most this many seconds old (0
    # clears it), of this acr ("" clears it). None leaves a setting as it is.
    require_auth_within_seconds: int | None = None
    require_acr: str | None = None


def _check_workflow(
    settings: WorkflowSettings, allowed_hosts: frozenset[str]
) -> InvalidInput | None:
    if not NAME.fullmatch(settings.name):
        return InvalidInput(
            "a workflow name is 1 to 63 characters of a-z, 0-9, '_', '.', '-'", "name"
        )
    via = settings.redrive_via
    if via is RedriveVia.WEBHOOK:
        problem = check_webhook(
            settings.redrive_target, settings.redrive_secret, "redrive", allowed_hosts
        )
        if problem:
            return problem
    elif settings.redrive_target or settings.redrive_secret:
        return InvalidInput("only redriveVia WEBHOOK takes a target and secret", "redriveVia")
    if settings.redrive_legacy_headers and via not in (None, RedriveVia.WEBHOOK):
        return InvalidInput("only a redrive webhook sends headers", "redriveLegacyHeaders")
    attempts = settings.redrive_max_attempts
    if attempts is not None and not 1 <= attempts <= 100:
        return InvalidInput("redriveMaxAttempts must be between 1 and 100", "redriveMaxAttempts")
    timeout = settings.redrive_timeout_seconds
    if timeout is not None and not 0 < timeout <= 300:
        return InvalidInput(
            "redriveTimeoutSeconds must be above 0 and at most 300", "redriveTimeoutSeconds"
        )
    for field, minutes in (
        ("reviewerMinutesPerDay", settings.reviewer_minutes_per_day),
        ("approverMinutesPerDay", settings.approver_minutes_per_day),
    ):
        if minutes is not None and not 0 <= minutes <= MAX_MINUTES_PER_DAY:
            return InvalidInput(f"{field} must be between 0 and {MAX_MINUTES_PER_DAY}", field)
    for setting in settings.clear:
        if getattr(settings, setting.value) is not None:
            return InvalidInput(f"{setting.name} is both given and cleared", "clear")
    return check_step_up(settings.require_auth_within_seconds, settings.require_acr)


async def configure_workflow(
    db: Database,
    principal: Principal,
    settings: WorkflowSettings,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
) -> Workflow | NotPermitted | InvalidInput:
    """allowed_hosts: where redrive webhooks may point (empty: anywhere)."""
    name, approval_queue = settings.name, settings.approval_queue
    if refusal := admin_refusal(principal, "configure workflows", approval_queue):
        return refusal
    if problem := _check_workflow(settings, allowed_hosts):
        return problem
    # Another team's workflow answers as a new one would...
    existing = await workflows_in_scope(db, principal, [name])
    if name not in existing and approval_queue is None:
        return InvalidInput("a new workflow needs its approval queue", "approvalQueue")
    if name not in existing and await get_workflows(db, [name]):
        # ...until it would be created: names are one namespace, so a name another team's
        # workflow holds is the one thing this answer tells (not what the workflow is).
        return NotPermitted(
            f"workflow name {name[:100]!r} is taken by a workflow your token does not cover"
        )
    if name in existing and existing[name].redrive_via is RedriveVia.CASEWORK:
        if settings.redrive_via not in (None, RedriveVia.CASEWORK):
            return InvalidInput(
                f"Casework carries out the redrives of {name!r} itself", "redriveVia"
            )
    elif settings.redrive_via is RedriveVia.CASEWORK:
        return InvalidInput(
            "only Casework's own workflow (apply_decision) is redriven by Casework", "redriveVia"
        )
    if approval_queue is not None:
        owners = await db.fetch(
            sql.exception_reasons.EXCEPTION_REASONS_GET_BY_WORKFLOWS,
            workflows=await _workflow_names(db),
        )
        if any(approval_queue in (r["owner_role"], r["escalation_role"]) for r in owners):
            return InvalidInput(
                f"queue {approval_queue!r} is an owner role; approvals need a queue of their "
                "own, worked by approvers",
                "approvalQueue",
            )
    if approval_queue is None:
        # An upsert checks NOT NULL on the row it proposes before it finds the conflict.
        approval_queue = existing[name].approval_queue
    try:
        row = await db.fetchrow(
            sql.workflows.WORKFLOW_UPSERT,
            name=name,
            approval_queue=approval_queue,
            redrive_via=settings.redrive_via.value if settings.redrive_via else None,
            redrive_target=settings.redrive_target,
            redrive_secret=settings.redrive_secret,
            redrive_max_attempts=settings.redrive_max_attempts,
            redrive_timeout_seconds=settings.redrive_timeout_seconds,
            redrive_legacy_headers=settings.redrive_legacy_headers,
            reviewer_minutes_per_day=settings.reviewer_minutes_per_day,
            approver_minutes_per_day=settings.approver_minutes_per_day,
            clear_reviewer_minutes=WorkflowSetting.REVIEWER_MINUTES_PER_DAY in settings.clear,
            clear_approver_minutes=WorkflowSetting.APPROVER_MINUTES_PER_DAY in settings.clear,
            require_auth_within_seconds=settings.require_auth_within_seconds,
            require_acr=settings.require_acr,
        )
    except IntegrityViolation as violation:
        if violation.kind == "foreign_key":
            return InvalidInput(
                f"unknown queue {approval_queue!r}; configure it first", "approvalQueue"
            )
        raise
    assert row is not None
    return Workflow.from_row(row)


@dataclass(frozen=True)
class ReasonDefinition:
    workflow: str
    code: str
    label: str
    owner_role: str
    escalation_role: str
    allowed_actions: list[ExceptionAction]
    due_seconds: dict[Consequence, int]


async def define_exception_reason(
    db: Database, principal: Principal, reason: ReasonDefinition
) -> ExceptionReason | NotPermitted | InvalidInput:
    what = "change an exception-reason catalogue"
    if refusal := admin_refusal(principal, what, reason.owner_role, reason.escalation_role):
        return refusal
    if not REASON_CODE.fullmatch(reason.code):
        return InvalidInput(
            "a reason code is 1 to 63 characters of letters, digits, '_', '.', '-'", "code"
        )
    if problem := check_label(reason.label):
        return problem
    if not reason.allowed_actions:
        return InvalidInput("name at least one action the reason allows", "allowedActions")
    for level in Consequence:
        seconds = reason.due_seconds.get(level)
        if seconds is None or not 1 <= seconds <= MAX_DUE_SECONDS:
            return InvalidInput(
                f"dueSeconds.{level.value} must be between 1 and {MAX_DUE_SECONDS}",
                "dueSeconds",
            )
    workflows = await workflows_in_scope(db, principal, [reason.workflow])
    if reason.workflow not in workflows:
        return unknown_workflow(reason.workflow)
    holders = {
        row["name"]: row["holder_role"]
        for row in await db.fetch(
            sql.queues.QUEUES_GET_HOLDER_ROLES, names=[reason.owner_role, reason.escalation_role]
        )
    }
    for field, queue in (
        ("ownerRole", reason.owner_role),
        ("escalationOwnerRole", reason.escalation_role),
    ):
        if queue not in holders:
            return InvalidInput(
                f"unknown queue {queue!r}: an owner role is the queue its team works", field
            )
        if holders[queue] != Role.REVIEWER.value:
            return InvalidInput(f"queue {queue!r} is an approval queue, not a team's", field)
    row = await db.fetchrow(
        sql.exception_reasons.EXCEPTION_REASON_UPSERT,
        workflow=reason.workflow,
        code=reason.code,
        label=reason.label.strip(),
        owner_role=reason.owner_role,
        escalation_role=reason.escalation_role,
        allowed_actions=sorted({action.value for action in reason.allowed_actions}),
        due_low_seconds=reason.due_seconds[Consequence.LOW],
        due_medium_seconds=reason.due_seconds[Consequence.MEDIUM],
        due_high_seconds=reason.due_seconds[Consequence.HIGH],
        due_critical_seconds=reason.due_seconds[Consequence.CRITICAL],
    )
    assert row is not None
    return ExceptionReason.from_row(row)


async def get_workflows(db: Database, names: list[str]) -> dict[str, Workflow]:
    rows = await db.fetch(sql.workflows.WORKFLOWS_GET_BY_NAMES, names=names)
    return {row["name"]: Workflow.from_row(row) for row in rows}


async def list_workflows(db: Database) -> list[Workflow]:
    return [Workflow.from_row(row) for row in await db.fetch(sql.workflows.WORKFLOWS_LIST)]


async def get_reasons(db: Database, workflows: list[str]) -> dict[str, list[ExceptionReason]]:
    reasons = await db.fetch(
        sql.exception_reasons.EXCEPTION_REASONS_GET_BY_WORKFLOWS, workflows=workflows
    )
    return grouped(workflows, "workflow", reasons, ExceptionReason.from_row)


def queues_of(workflow: Workflow, reasons: list[ExceptionReason]) -> list[str]:
    """Every queue a workflow's exceptions can sit in: a token covering one sees it."""
    return [workflow.approval_queue] + [
        queue for reason in reasons for queue in (reason.owner_role, reason.escalation_role)
    ]


def changeable_by(principal: Principal, workflow: Workflow, reasons: list[ExceptionReason]) -> bool:
    """An admin changes a workflow only if the token covers every queue it uses.

    Changing a workflow (its approval queue, its redrive route and webhook, its reasons)
    changes the work of every team whose queue it uses: an admin of one of those teams is
    not the admin of the others. Reading takes one queue (`queues_of`, `visible_to`): a team
    sees the workflows its work comes from."""
    return all(map(principal.works_in, queues_of(workflow, reasons)))


def readable_by(principal: Principal, workflow: Workflow, reasons: list[ExceptionReason]) -> bool:
    """A token reads a workflow when it covers one of the queues it uses."""
    return any(map(principal.works_in, queues_of(workflow, reasons)))


async def readable_workflows(
    db: Database, principal: Principal, names: list[str] | None = None
) -> list[tuple[Workflow, list[ExceptionReason]]]:
    """The workflows the principal may read, by name (None: every workflow), each with its
    reasons (read to judge the scope: a reader need not read them again); the others read
    as nonexistent."""
    found = (
        await list_workflows(db)
        if names is None
        else list((await get_workflows(db, names)).values())
    )
    reasons = await get_reasons(db, [w.name for w in found])
    return sorted(
        ((w, reasons[w.name]) for w in found if readable_by(principal, w, reasons[w.name])),
        key=lambda pair: pair[0].name,
    )


async def workflows_in_scope(
    db: Database, principal: Principal, names: list[str]
) -> dict[str, Workflow]:
    """The named workflows the principal may change; the others read as nonexistent."""
    found = await get_workflows(db, names)
    reasons = await get_reasons(db, list(found))
    return {
        name: workflow
        for name, workflow in found.items()
        if changeable_by(principal, workflow, reasons[name])
    }


def unknown_workflow(name: str) -> InvalidInput:
    """The answer for a workflow that does not exist and for one outside the token's scope."""
    return InvalidInput(f"unknown workflow {name[:100]!r}", "workflow")


async def _workflow_names(db: Database) -> list[str]:
    return [workflow.name for workflow in await list_workflows(db)]


@dataclass(frozen=True)
class RedriveSecretRotated:
    workflow: Workflow
    # The new secret when Casework generated it (shown this once); None when it was given.
    generated_secret: str | None
    # Until when a rotated-out secret still signs beside the new one; None: none does.
    overlap_ends_at: datetime | None


async def rotate_redrive_secret(
    db: Database,
    principal: Principal,
    workflow: str,
    secret: str | None,
    overlap_hours: int = DEFAULT_OVERLAP_HOURS,
) -> RedriveSecretRotated | NotPermitted | InvalidInput:
    """The redrive webhook's secret, rotated with an overlap (server/domain/review/
    webhook_secrets.py says how); secret None: Casework generates one."""
    if refusal := admin_refusal(principal, "rotate a workflow's redrive secret"):
        return refusal
    if workflow not in await workflows_in_scope(db, principal, [workflow]):
        return unknown_workflow(workflow)
    rotation = checked_rotation(secret, overlap_hours)
    if isinstance(rotation, InvalidInput):
        return rotation
    row = await db.fetchrow(
        sql.workflows.WORKFLOW_REDRIVE_SECRET_ROTATE,
        workflow=workflow,
        secret=rotation.secret,
        overlap_seconds=rotation.overlap_seconds,
    )
    if row is None:
        return InvalidInput(f"the redrives of {workflow[:100]!r} do not go by webhook", "workflow")
    return RedriveSecretRotated(
        workflow=Workflow.from_row(row),
        generated_secret=rotation.secret if rotation.generated else None,
        overlap_ends_at=row["overlap_ends_at"],
    )


async def redrive_secret_overlaps(db: Database, workflows: list[str]) -> dict[str, datetime]:
    """For each of `workflows` whose rotated-out redrive secret still signs: until when."""
    rows = await db.fetch(sql.workflows.WORKFLOW_REDRIVE_SECRET_OVERLAPS, workflows=workflows)
    return {row["workflow"]: row["overlap_ends_at"] for row in rows}
