"""The object types of exceptions, each built from a domain record."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from server.domain.exceptions import records, workflows
from server.domain.measures.figures import DEFAULT_WINDOW_SECONDS
from server.domain.review import apply, queues
from server.graphql.context import Context
from server.graphql.exceptions.measures import WorkflowMeasures, workflow_measures
from server.graphql.pagination import PageInfo
from server.graphql.review.types import Decision, ReviewItem

# As in types.py: strawberry.enum marks the domain enum itself, and the names below are the
# classes, so mypy reads them as types.
strawberry.enum(records.ExceptionState, name="ExceptionState")
strawberry.enum(records.Closure, name="ExceptionClosure")
strawberry.enum(
    records.Consequence, name="Consequence", description="Sets the due time, with the reason."
)
strawberry.enum(records.ExceptionAction, name="ExceptionAction")
strawberry.enum(
    records.RedriveVia,
    name="RedriveVia",
    description="SUBSCRIPTION: the owning system follows exceptionEvents. WEBHOOK: Casework "
    "POSTs each redrive to it, signed, with the redrive key as Idempotency-Key. CASEWORK: "
    "Casework carries the redrive out itself (apply_decision re-applies the decision). "
    "BROKER: `casework intake` publishes the corrected message (the original with the "
    "correction's changes merged in) back to the broker queue it was dead-lettered from, with "
    "the redrive key as its message id.",
)
ExceptionState = records.ExceptionState
ExceptionClosure = records.Closure
Consequence = records.Consequence
ExceptionAction = records.ExceptionAction
RedriveVia = records.RedriveVia


@strawberry.type
class DueSeconds:
    low: int
    medium: int
    high: int
    critical: int


@strawberry.type(description="One entry of a workflow's closed catalogue of reasons.")
class ExceptionReason:
    workflow: str
    code: str
    label: str
    owner_role: str = strawberry.field(description="The team (queue) that owns it.")
    escalation_owner_role: str = strawberry.field(
        description="The team (queue) it passes to when overdue."
    )
    allowed_actions: list[ExceptionAction]
    due_seconds: DueSeconds

    @classmethod
    def from_domain(cls, reason: records.ExceptionReason) -> ExceptionReason:
        return cls(
            workflow=reason.workflow,
            code=reason.code,
            label=reason.label,
            owner_role=reason.owner_role,
            escalation_owner_role=reason.escalation_role,
            allowed_actions=sorted(reason.allowed_actions, key=_action_order),
            due_seconds=DueSeconds(
                **{level.value: seconds for level, seconds in reason.due_seconds.items()}
            ),
        )


def _action_order(action: records.ExceptionAction) -> int:
    return list(records.ExceptionAction).index(action)


@strawberry.type
class Workflow:
    _workflow: strawberry.Private[records.Workflow]
    name: str
    approval_queue: str
    redrive_via: RedriveVia
    redrive_target: str | None
    redrive_max_attempts: int
    redrive_timeout_seconds: float
    redrive_legacy_headers: bool = strawberry.field(
        description="A redrive webhook also sends Casework-Signature and Idempotency-Key "
        "beside the Standard Webhooks headers (on for webhooks configured before them)."
    )
    reviewer_minutes_per_day: float | None = strawberry.field(
        description="Hands-on minutes per day its operators can give (capacity)."
    )
    approver_minutes_per_day: float | None = strawberry.field(
        description="Hands-on minutes per day its approvers can give (approvalCapacity)."
    )
    require_auth_within_seconds: int | None = strawberry.field(
        description="Step-up: approvals need a sign-in at most this many seconds old; null: "
        "not required."
    )
    require_acr: str | None = strawberry.field(
        description="Step-up: approvals need this authentication context class; null: any."
    )

    @strawberry.field(
        description="Until when the redrive webhook's rotated-out secret still signs beside "
        "the new one (rotateRedriveSecret); null: only the current secret signs."
    )
    async def redrive_secret_overlap_ends_at(self, info: Info[Context, None]) -> datetime | None:
        overlaps = await workflows.redrive_secret_overlaps(info.context.db, [self.name])
        return overlaps.get(self.name)

    @strawberry.field
    async def reasons(self, info: Info[Context, None]) -> list[ExceptionReason]:
        found = await info.context.loaders.exception_reasons.load(self.name)
        return [ExceptionReason.from_domain(r) for r in found]

    @strawberry.field(description="The exception owner's dashboard. Managers and admins only.")
    def measures(
        self, info: Info[Context, None], since_seconds: int | None = DEFAULT_WINDOW_SECONDS
    ) -> WorkflowMeasures:
        return workflow_measures(info, self._workflow, since_seconds)

    @classmethod
    def from_domain(cls, workflow: records.Workflow) -> Workflow:
        return cls(
            _workflow=workflow,
            reviewer_minutes_per_day=workflow.reviewer_minutes_per_day,
            approver_minutes_per_day=workflow.approver_minutes_per_day,
            require_auth_within_seconds=workflow.require_auth_within_seconds,
            require_acr=workflow.require_acr,
            name=workflow.name,
            approval_queue=workflow.approval_queue,
            redrive_via=workflow.redrive_via,
            redrive_target=queues.shown_target(workflow.redrive_target),
            redrive_max_attempts=workflow.redrive_max_attempts,
            redrive_timeout_seconds=workflow.redrive_timeout_seconds,
            redrive_legacy_headers=workflow.redrive_legacy_headers,
        )


@strawberry.type(description="One correction version; never changed once submitted.")
class Correction:
    version: int
    reason_code: str
    changes: JSON
    stale_steps: list[str]
    evidence: list[str]
    note: str | None
    corrected_by: str
    submitted_at: datetime

    @classmethod
    def from_domain(cls, correction: records.Correction) -> Correction:
        return cls(
            version=correction.version,
            reason_code=correction.reason_code,
            changes=correction.changes,
            stale_steps=list(correction.stale_steps),
            evidence=list(correction.evidence),
            note=correction.note,
            corrected_by=correction.corrected_by,
            submitted_at=correction.submitted_at,
        )


@strawberry.type(description="A request to re-enter the workflow with one correction version.")
class Redrive:
    key: str = strawberry.field(
        description="workflow:sourceRecordId:v<version>; the owning system's idempotency key."
    )
    version: int
    resume_after: str | None = strawberry.field(
        description="Resume after this completed step; null: from the start."
    )
    stale_steps: list[str]
    requested_by: str
    requested_at: datetime
    succeeded: bool | None = strawberry.field(description="Null until the result is reported.")
    result_detail: str | None
    reported_by: str | None
    reported_at: datetime | None
    delivery_state: str | None = strawberry.field(
        description="WEBHOOK and BROKER workflows: pending, delivered (POSTed, or published "
        "and confirmed by the broker) or failed. Delivered is not done: the owning system "
        "reports the result."
    )
    delivery_attempts: int
    last_delivery_error: str | None = strawberry.field(
        description="What the receiver answered, cut to 1000 characters. Shown to admin and "
        "integration tokens of the exception's queues; null for other roles."
    )
    delivered_at: datetime | None

    @classmethod
    def from_domain(cls, redrive: records.Redrive, *, receiver_text_shown: bool) -> Redrive:
        return cls(
            key=redrive.key,
            version=redrive.version,
            resume_after=redrive.resume_after,
            stale_steps=list(redrive.stale_steps),
            requested_by=redrive.requested_by,
            requested_at=redrive.requested_at,
            succeeded=redrive.succeeded,
            result_detail=redrive.result_detail,
            reported_by=redrive.reported_by,
            reported_at=redrive.reported_at,
            delivery_state=redrive.delivery_state,
            delivery_attempts=redrive.delivery_attempts,
            last_delivery_error=redrive.last_delivery_error if receiver_text_shown else None,
            delivered_at=redrive.delivered_at,
        )


@strawberry.type(description="One immutable entry of an exception's history.")
class ExceptionEvent:
    _event: strawberry.Private[records.ExceptionEvent]
    id: strawberry.ID
    exception_id: strawberry.ID
    workflow: str
    kind: str = strawberry.field(
        description="raised, recurred, evidence_attached, correction_submitted, "
        "correction_approved, correction_rejected, redrive_requested, redrive_succeeded, "
        "redrive_failed, closed, reopened or escalated"
    )
    actor: str
    actor_role: str
    from_state: ExceptionState | None
    to_state: ExceptionState
    version: int
    evidence: list[str]
    detail: str | None
    data: JSON | None
    at: datetime

    @strawberry.field(description="For redrive events: the redrive key.")
    def redrive_key(self) -> str | None:
        data = self._event.data
        key = data.get("redriveKey") if isinstance(data, dict) else None
        return key if isinstance(key, str) else None

    @strawberry.field(description="The exception as it is now.")
    async def exception(self, info: Info[Context, None]) -> ExceptionNode:
        found = await info.context.loaders.exception.load(self._event.exception_id)
        assert found is not None, "exceptions are never deleted"
        return ExceptionNode.from_domain(found)

    @classmethod
    def from_domain(cls, event: records.ExceptionEvent) -> ExceptionEvent:
        return cls(
            _event=event,
            id=strawberry.ID(str(event.id)),
            exception_id=strawberry.ID(event.exception_id),
            workflow=event.workflow,
            kind=event.kind,
            actor=event.actor,
            actor_role=event.actor_role,
            from_state=event.from_state,
            to_state=event.to_state,
            version=event.version,
            evidence=list(event.evidence),
            detail=event.detail,
            data=event.data,
            at=event.at,
        )


@strawberry.type(
    name="Exception",
    description="Automated work that could not finish and needs a person: what completed, "
    "what blocks, who owns it, what correction is allowed, and how it may re-enter.",
)
class ExceptionNode:
    _exception: strawberry.Private[records.ExceptionRecord]
    id: strawberry.ID
    workflow: str
    source_record_id: str
    reason_code: str
    reason_label: str
    detail: str
    blocked_step: str | None
    completed_steps: list[str]
    stale_steps: list[str] = strawberry.field(
        description="Completed steps the current correction says must run again."
    )
    evidence: list[str] = strawberry.field(description="References, never documents.")
    context: JSON
    consequence: Consequence
    state: ExceptionState
    closure: ExceptionClosure | None
    owner_role: str = strawberry.field(
        description="The team that owns it now; past the due time, the escalation owner."
    )
    owner: str | None = strawberry.field(description="Who holds it under a live lease.")
    escalation_owner_role: str
    escalated_at: datetime | None
    due_at: datetime
    overdue: bool
    attempts: int = strawberry.field(
        description="Tries at the automated work: the first, then one per failed redrive."
    )
    recurrences: int = strawberry.field(description="Raised again while open.")
    reopen_count: int
    version: int = strawberry.field(description="The latest correction version; 0: none.")
    last_rejection: str | None = strawberry.field(
        description="Why the approver rejected the latest correction."
    )
    allowed_actions: list[ExceptionAction] = strawberry.field(
        description="What may happen next, by its state and its reason."
    )
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None

    @classmethod
    def from_domain(cls, exception: records.ExceptionRecord) -> ExceptionNode:
        return cls(
            _exception=exception,
            id=strawberry.ID(exception.id),
            workflow=exception.workflow,
            source_record_id=exception.source_record_id,
            reason_code=exception.reason_code,
            reason_label=exception.reason_label,
            detail=exception.detail,
            blocked_step=exception.blocked_step,
            completed_steps=list(exception.completed_steps),
            stale_steps=list(exception.stale_steps),
            evidence=list(exception.evidence),
            context=exception.context,
            consequence=exception.consequence,
            state=exception.state,
            closure=exception.closure,
            owner_role=exception.owner_role,
            owner=exception.holder,
            escalation_owner_role=exception.escalation_role,
            escalated_at=exception.escalated_at,
            due_at=exception.due_at,
            overdue=exception.overdue,
            attempts=exception.attempts,
            recurrences=exception.recurrences,
            reopen_count=exception.reopen_count,
            version=exception.version,
            last_rejection=exception.last_rejection,
            allowed_actions=exception.allowed_actions,
            created_at=exception.created_at,
            updated_at=exception.updated_at,
            closed_at=exception.closed_at,
        )

    @strawberry.field(description="The review item it is claimed through.")
    async def item(self, info: Info[Context, None]) -> ReviewItem:
        found = await info.context.loaders.item.load(self._exception.item_id)
        assert found is not None, "an exception always has its item"
        return ReviewItem.from_domain(found)

    @strawberry.field(description="For apply_decision: the decision whose effect failed.")
    async def decision(self, info: Info[Context, None]) -> Decision | None:
        if self._exception.decision_id is None:
            return None
        found = await info.context.loaders.decision.load(self._exception.decision_id)
        return Decision.from_domain(found) if found else None

    @strawberry.field(description="Every correction version, oldest first.")
    async def corrections(self, info: Info[Context, None]) -> list[Correction]:
        found = await info.context.loaders.exception_corrections.load(self._exception.id)
        return [Correction.from_domain(c) for c in found]

    @strawberry.field(description="The correction of the current version, if any.")
    async def current_correction(self, info: Info[Context, None]) -> Correction | None:
        found = await info.context.loaders.exception_corrections.load(self._exception.id)
        current = [c for c in found if c.version == self._exception.version]
        return Correction.from_domain(current[0]) if current else None

    @strawberry.field(description="Every redrive requested, oldest first.")
    async def redrives(self, info: Info[Context, None]) -> list[Redrive]:
        found = await info.context.loaders.exception_redrives.load(self._exception.id)
        shown = self._receiver_text_shown(info)
        return [Redrive.from_domain(r, receiver_text_shown=shown) for r in found]

    @strawberry.field(description="The redrive of the current version, if requested.")
    async def redrive(self, info: Info[Context, None]) -> Redrive | None:
        found = await info.context.loaders.exception_redrives.load(self._exception.id)
        current = [r for r in found if r.version == self._exception.version]
        shown = self._receiver_text_shown(info)
        return Redrive.from_domain(current[0], receiver_text_shown=shown) if current else None

    def _receiver_text_shown(self, info: Info[Context, None]) -> bool:
        return apply.may_read_receiver_text(info.context.principal, self._exception.queues)

    @strawberry.field(description="The full history, oldest first.")
    async def events(self, info: Info[Context, None]) -> list[ExceptionEvent]:
        found = await info.context.loaders.exception_events.load(self._exception.id)
        return [ExceptionEvent.from_domain(e) for e in found]


@strawberry.type
class ExceptionEdge:
    cursor: str
    node: ExceptionNode


@strawberry.type
class ExceptionConnection:
    edges: list[ExceptionEdge]
    page_info: PageInfo


@strawberry.input
class ExceptionFilter:
    workflow: str | None = None
    state: ExceptionState | None = None
    owner_role: str | None = strawberry.field(
        default=None, description="The owner now, as overdue escalation evaluates it."
    )
    overdue: bool | None = None
    source_record_id: str | None = None
