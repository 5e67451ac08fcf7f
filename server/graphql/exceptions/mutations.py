"""Exception mutations: parse, call the domain, map the result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Concatenate, ParamSpec, Protocol

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from server.domain.exceptions import actions, records, redrives, workflows
from server.domain.exceptions.records import Consequence as DomainConsequence
from server.domain.failures import is_failure
from server.domain.model import Principal
from server.graphql.context import Context
from server.graphql.errors import (
    AlreadyQueued,
    InvalidInput,
    InvalidTransition,
    NotPermitted,
    ReauthenticationRequired,
    StaleLease,
    from_failure,
)
from server.graphql.exceptions.types import (
    Consequence,
    ExceptionAction,
    ExceptionClosure,
    ExceptionNode,
    ExceptionReason,
    RedriveVia,
    Workflow,
)
from server.graphql.exceptions.webhook_secrets import RedriveSecretMutation
from server.store.database import Database

# As in types.py: strawberry.enum marks the domain enum itself.
strawberry.enum(
    workflows.WorkflowSetting,
    name="WorkflowSetting",
    description="A workflow setting configureWorkflow can unset (its `clear`).",
)
WorkflowSetting = workflows.WorkflowSetting

# --- payloads -----------------------------------------------------------------------------


@strawberry.type
class ExceptionRaised:
    exception: ExceptionNode
    created: bool = strawberry.field(
        description="False: the same exception was open, and this counted as a recurrence."
    )

    @classmethod
    def of(cls, raised: actions.Raised) -> ExceptionRaised:
        return cls(exception=ExceptionNode.from_domain(raised.exception), created=raised.created)


@strawberry.type
class ExceptionUpdated:
    exception: ExceptionNode


@strawberry.type
class RedriveQueued:
    exception: ExceptionNode
    redrive_key: str

    @classmethod
    def of(cls, queued: redrives.RedriveQueued) -> RedriveQueued:
        return cls(
            exception=ExceptionNode.from_domain(queued.exception), redrive_key=queued.redrive_key
        )


@strawberry.type
class RedriveResultRecorded:
    exception: ExceptionNode
    already_reported: bool = strawberry.field(
        description="The same result for this key was reported before; nothing changed."
    )

    @classmethod
    def of(cls, reported: redrives.RedriveReported) -> RedriveResultRecorded:
        return cls(
            exception=ExceptionNode.from_domain(reported.exception),
            already_reported=reported.already_reported,
        )


@strawberry.type
class WorkflowConfigured:
    workflow: Workflow

    @classmethod
    def of(cls, workflow: records.Workflow) -> WorkflowConfigured:
        return cls(workflow=Workflow.from_domain(workflow))


@strawberry.type
class ExceptionReasonDefined:
    reason: ExceptionReason

    @classmethod
    def of(cls, reason: records.ExceptionReason) -> ExceptionReasonDefined:
        return cls(reason=ExceptionReason.from_domain(reason))


RaiseExceptionResult = Annotated[
    ExceptionRaised | NotPermitted | InvalidInput, strawberry.union("RaiseExceptionResult")
]
ExceptionActionResult = Annotated[
    ExceptionUpdated | StaleLease | InvalidTransition | NotPermitted | InvalidInput,
    strawberry.union("ExceptionActionResult"),
]
ApproveCorrectionResult = Annotated[
    ExceptionUpdated
    | StaleLease
    | InvalidTransition
    | ReauthenticationRequired
    | NotPermitted
    | InvalidInput,
    strawberry.union("ApproveCorrectionResult"),
]
RequestRedriveResult = Annotated[
    RedriveQueued | AlreadyQueued | InvalidTransition | NotPermitted | InvalidInput,
    strawberry.union("RequestRedriveResult"),
]
ReportRedriveResultResult = Annotated[
    RedriveResultRecorded | InvalidTransition | NotPermitted | InvalidInput,
    strawberry.union("ReportRedriveResultResult"),
]
ConfigureWorkflowResult = Annotated[
    WorkflowConfigured | NotPermitted | InvalidInput, strawberry.union("ConfigureWorkflowResult")
]
DefineExceptionReasonResult = Annotated[
    ExceptionReasonDefined | NotPermitted | InvalidInput,
    strawberry.union("DefineExceptionReasonResult"),
]

# --- inputs -------------------------------------------------------------------------------


@strawberry.input
class RaiseExceptionInput:
    workflow: str
    source_record_id: str
    reason_code: str
    detail: str = strawberry.field(description="Plain language: what blocks the next step.")
    consequence: Consequence
    completed_steps: list[str] = strawberry.field(default_factory=list)
    blocked_step: str | None = None
    evidence: list[str] = strawberry.field(
        default_factory=list, description="References (URIs, document ids), never documents."
    )
    context: JSON | None = strawberry.field(
        default=None, description="Minimum facts as a JSON object; no credential-like keys."
    )

    def to_domain(self) -> actions.RaiseInput:
        return actions.RaiseInput(
            workflow=self.workflow,
            source_record_id=self.source_record_id,
            reason_code=self.reason_code,
            detail=self.detail,
            consequence=self.consequence,
            completed_steps=list(self.completed_steps),
            evidence=list(self.evidence),
            blocked_step=self.blocked_step,
            context=self.context,
        )


@strawberry.input
class AttachEvidenceInput:
    exception_id: strawberry.ID
    lease_token: str
    evidence: list[str]
    note: str | None = None


@strawberry.input
class SubmitCorrectionInput:
    exception_id: strawberry.ID
    lease_token: str
    reason_code: str = strawberry.field(description="Must be the exception's own reason.")
    changes: JSON = strawberry.field(description="What the correction changes: a JSON object.")
    evidence: list[str] = strawberry.field(description="At least one reference.")
    stale_steps: list[str] = strawberry.field(
        default_factory=list, description="Completed steps that must run again."
    )
    note: str | None = None

    def to_domain(self) -> actions.CorrectionInput:
        return actions.CorrectionInput(
            exception_id=self.exception_id,
            lease_token=self.lease_token,
            reason_code=self.reason_code,
            changes=self.changes,
            evidence=list(self.evidence),
            stale_steps=list(self.stale_steps),
            note=self.note,
        )


@strawberry.input
class ApproveCorrectionInput:
    exception_id: strawberry.ID
    lease_token: str
    version: int = strawberry.field(description="The correction version you reviewed.")
    note: str | None = None


@strawberry.input
class RejectCorrectionInput:
    exception_id: strawberry.ID
    lease_token: str
    reason: str = strawberry.field(description="Shown to whoever corrects next.")


@strawberry.input
class RequestRedriveInput:
    exception_id: strawberry.ID
    version: int = strawberry.field(description="The approved correction version.")


@strawberry.input
class ReportRedriveResultInput:
    redrive_key: str
    succeeded: bool = strawberry.field(description="The durable result, not an attempt.")
    detail: str | None = None


@strawberry.input
class CloseExceptionInput:
    exception_id: strawberry.ID
    lease_token: str
    closure: ExceptionClosure
    note: str | None = None


@strawberry.input
class ReopenExceptionInput:
    exception_id: strawberry.ID
    reason: str


@strawberry.input
class ConfigureWorkflowInput:
    name: str
    approval_queue: str | None = strawberry.field(
        default=None, description="Where corrections wait for an approver; required at first."
    )
    redrive_via: RedriveVia | None = None
    redrive_target: str | None = strawberry.field(
        default=None, description="WEBHOOK: the URL redrives are POSTed to."
    )
    redrive_secret: str | None = strawberry.field(
        default=None,
        description="WEBHOOK: the signing secret, `whsec_` + the base64 of 16 to 64 random "
        "bytes (Standard Webhooks).",
    )
    redrive_max_attempts: int | None = None
    redrive_timeout_seconds: float | None = None
    redrive_legacy_headers: bool | None = strawberry.field(
        default=None,
        description="WEBHOOK: also send Casework-Signature and Idempotency-Key; null: "
        "unchanged (off for a new webhook).",
    )
    reviewer_minutes_per_day: float | None = strawberry.field(
        default=None,
        description="Hands-on minutes per day its operators can give: measures.capacity.",
    )
    approver_minutes_per_day: float | None = strawberry.field(
        default=None,
        description="Hands-on minutes per day its approvers can give: measures.approvalCapacity.",
    )
    clear: list[WorkflowSetting] = strawberry.field(
        default_factory=list,
        description="Settings to unset: capacity unknown again. A setting given as null, or "
        "left out, stays as it is.",
    )
    require_auth_within_seconds: int | None = strawberry.field(
        default=None,
        description="Step-up: approveCorrection needs a sign-in at most this many seconds "
        "old (1 to 86400); older, or unknown (a CLI token), is refused with "
        "ReauthenticationRequired. 0: not required; null: unchanged.",
    )
    require_acr: str | None = strawberry.field(
        default=None,
        description='Step-up: approveCorrection needs this authentication context class. "": '
        "not required; null: unchanged.",
    )

    def to_domain(self) -> workflows.WorkflowSettings:
        return workflows.WorkflowSettings(
            name=self.name,
            approval_queue=self.approval_queue,
            redrive_via=self.redrive_via,
            redrive_target=self.redrive_target,
            redrive_secret=self.redrive_secret,
            redrive_max_attempts=self.redrive_max_attempts,
            redrive_timeout_seconds=self.redrive_timeout_seconds,
            redrive_legacy_headers=self.redrive_legacy_headers,
            reviewer_minutes_per_day=self.reviewer_minutes_per_day,
            approver_minutes_per_day=self.approver_minutes_per_day,
            clear=frozenset(self.clear),
            require_auth_within_seconds=self.require_auth_within_seconds,
            require_acr=self.require_acr,
        )


@strawberry.input
class DueSecondsInput:
    low: int
    medium: int
    high: int
    critical: int

    def to_domain(self) -> dict[DomainConsequence, int]:
        return {level: getattr(self, level.value) for level in DomainConsequence}


@strawberry.input
class DefineExceptionReasonInput:
    workflow: str
    code: str
    label: str
    owner_role: str = strawberry.field(description="The queue of the team that owns it.")
    escalation_owner_role: str = strawberry.field(
        description="The queue of the team it passes to when overdue."
    )
    allowed_actions: list[ExceptionAction]
    due_seconds: DueSecondsInput = strawberry.field(description="By consequence level.")

    def to_domain(self) -> workflows.ReasonDefinition:
        return workflows.ReasonDefinition(
            workflow=self.workflow,
            code=self.code,
            label=self.label,
            owner_role=self.owner_role,
            escalation_role=self.escalation_owner_role,
            allowed_actions=list(self.allowed_actions),
            due_seconds=self.due_seconds.to_domain(),
        )


# --- resolvers ----------------------------------------------------------------------------


def _updated(result: actions.ActionResult) -> ExceptionActionResult:
    if is_failure(result):
        return from_failure(result)
    return ExceptionUpdated(exception=ExceptionNode.from_domain(result))


class _UnderClaim(Protocol):
    """The input of an action taken under the caller's claim of an exception."""

    @property
    def exception_id(self) -> strawberry.ID: ...
    @property
    def lease_token(self) -> str: ...


Rest = ParamSpec("Rest")


async def _claimed_action(
    info: Info[Context, None],
    claimed: _UnderClaim,
    action: Callable[
        Concatenate[Database, Principal, str, str, Rest], Awaitable[actions.ActionResult]
    ],
    *rest: Rest.args,
    **named: Rest.kwargs,
) -> ExceptionActionResult:
    """The actions under a claim take the exception and the lease token first, then their
    own arguments (`rest`), and all answer with the exception as it is now."""
    ctx = info.context
    return _updated(
        await action(
            ctx.db, ctx.principal, claimed.exception_id, claimed.lease_token, *rest, **named
        )
    )


@strawberry.type
class ExceptionMutation(RedriveSecretMutation):
    @strawberry.mutation(description="Raises an exception, idempotently. Integrations only.")
    async def raise_exception(
        self, info: Info[Context, None], input: RaiseExceptionInput
    ) -> RaiseExceptionResult:
        ctx = info.context
        result = await actions.raise_exception(ctx.db, ctx.principal, input.to_domain())
        return from_failure(result) if is_failure(result) else ExceptionRaised.of(result)

    @strawberry.mutation(description="Adds evidence references under your claim.")
    async def attach_evidence(
        self, info: Info[Context, None], input: AttachEvidenceInput
    ) -> ExceptionActionResult:
        return await _claimed_action(
            info, input, actions.attach_evidence, list(input.evidence), input.note
        )

    @strawberry.mutation(description="Submits a correction with evidence; it goes to approval.")
    async def submit_correction(
        self, info: Info[Context, None], input: SubmitCorrectionInput
    ) -> ExceptionActionResult:
        ctx = info.context
        return _updated(await actions.submit_correction(ctx.db, ctx.principal, input.to_domain()))

    @strawberry.mutation(description="Approves a correction (approvers; never its corrector).")
    async def approve_correction(
        self, info: Info[Context, None], input: ApproveCorrectionInput
    ) -> ApproveCorrectionResult:
        ctx = info.context
        result = await actions.approve_correction(
            ctx.db, ctx.principal, input.exception_id, input.lease_token, input.version, input.note
        )
        if is_failure(result):
            return from_failure(result)
        return ExceptionUpdated(exception=ExceptionNode.from_domain(result))

    @strawberry.mutation(description="Rejects a correction; it returns to its owner.")
    async def reject_correction(
        self, info: Info[Context, None], input: RejectCorrectionInput
    ) -> ExceptionActionResult:
        return await _claimed_action(info, input, actions.reject_correction, input.reason)

    @strawberry.mutation(description="Issues the redrive of the approved version, once.")
    async def request_redrive(
        self, info: Info[Context, None], input: RequestRedriveInput
    ) -> RequestRedriveResult:
        result = await redrives.request_redrive(
            info.context.db, info.context.principal, input.exception_id, input.version
        )
        return from_failure(result) if is_failure(result) else RedriveQueued.of(result)

    @strawberry.mutation(description="The owning system's durable result of a redrive.")
    async def report_redrive_result(
        self, info: Info[Context, None], input: ReportRedriveResultInput
    ) -> ReportRedriveResultResult:
        ctx = info.context
        result = await redrives.report_redrive_result(
            ctx.db, ctx.principal, input.redrive_key, input.succeeded, input.detail
        )
        return from_failure(result) if is_failure(result) else RedriveResultRecorded.of(result)

    @strawberry.mutation(description="Closes without a correction: rejected, duplicate, obsolete.")
    async def close_exception(
        self, info: Info[Context, None], input: CloseExceptionInput
    ) -> ExceptionActionResult:
        return await _claimed_action(
            info, input, actions.close_exception, input.closure, input.note
        )

    @strawberry.mutation(description="Reopens a closed exception; its history stays.")
    async def reopen_exception(
        self, info: Info[Context, None], input: ReopenExceptionInput
    ) -> ExceptionActionResult:
        ctx = info.context
        return _updated(
            await actions.reopen_exception(ctx.db, ctx.principal, input.exception_id, input.reason)
        )

    @strawberry.mutation(description="Creates a workflow or changes its settings. Admins only.")
    async def configure_workflow(
        self, info: Info[Context, None], input: ConfigureWorkflowInput
    ) -> ConfigureWorkflowResult:
        result = await workflows.configure_workflow(
            info.context.db,
            info.context.principal,
            input.to_domain(),
            allowed_hosts=info.context.effect_allowed_hosts,
        )
        return from_failure(result) if is_failure(result) else WorkflowConfigured.of(result)

    @strawberry.mutation(description="Adds or changes a reason of a workflow. Admins only.")
    async def define_exception_reason(
        self, info: Info[Context, None], input: DefineExceptionReasonInput
    ) -> DefineExceptionReasonResult:
        ctx = info.context
        result = await workflows.define_exception_reason(ctx.db, ctx.principal, input.to_domain())
        return from_failure(result) if is_failure(result) else ExceptionReasonDefined.of(result)
