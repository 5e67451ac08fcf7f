"""The records of exceptions: the exception itself, its corrections, redrives and history,
and the per-workflow catalogue they are raised against."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from server.domain.rows import from_row
from server.store.database import Row

# Who Casework is when it acts itself (raising for a failed effect, answering a redrive).
SYSTEM_ACTOR = "casework"
SYSTEM_ROLE = "system"


class ExceptionState(enum.Enum):
    NEEDS_REVIEW = "needs_review"
    AWAITING_APPROVAL = "awaiting_approval"
    REDRIVE_PENDING = "redrive_pending"
    CLOSED = "closed"


class Closure(enum.Enum):
    CORRECTED = "corrected"
    REJECTED = "rejected"
    DUPLICATE = "duplicate"
    OBSOLETE = "obsolete"


class Consequence(enum.Enum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class ExceptionAction(enum.Enum):
    ATTACH_EVIDENCE = "attach_evidence"
    SUBMIT_CORRECTION = "submit_correction"
    APPROVE_CORRECTION = "approve_correction"
    REJECT_CORRECTION = "reject_correction"
    REQUEST_REDRIVE = "request_redrive"
    REPORT_REDRIVE_RESULT = "report_redrive_result"
    CLOSE_EXCEPTION = "close_exception"
    REOPEN_EXCEPTION = "reopen_exception"


class RedriveVia(enum.Enum):
    """How the owning system learns of a redrive."""

    SUBSCRIPTION = "subscription"
    WEBHOOK = "webhook"
    CASEWORK = "casework"
    # `casework intake` publishes the corrected message back to where it failed (the origin
    # kept in intake_messages), with the redrive key as its message id.
    BROKER = "broker"


# The routes by which Casework delivers each redrive itself (exception_redrives.delivery_*):
# the apply worker POSTs WEBHOOK ones, `casework intake` publishes BROKER ones.
DELIVERED_ROUTES = frozenset({RedriveVia.WEBHOOK, RedriveVia.BROKER})


# The state machine: the states each action may start from.
ALLOWED_FROM: dict[ExceptionAction, frozenset[ExceptionState]] = {
    ExceptionAction.ATTACH_EVIDENCE: frozenset(
        {ExceptionState.NEEDS_REVIEW, ExceptionState.AWAITING_APPROVAL}
    ),
    ExceptionAction.SUBMIT_CORRECTION: frozenset({ExceptionState.NEEDS_REVIEW}),
    ExceptionAction.APPROVE_CORRECTION: frozenset({ExceptionState.AWAITING_APPROVAL}),
    ExceptionAction.REJECT_CORRECTION: frozenset({ExceptionState.AWAITING_APPROVAL}),
    ExceptionAction.REQUEST_REDRIVE: frozenset({ExceptionState.REDRIVE_PENDING}),
    ExceptionAction.REPORT_REDRIVE_RESULT: frozenset({ExceptionState.REDRIVE_PENDING}),
    ExceptionAction.CLOSE_EXCEPTION: frozenset({ExceptionState.NEEDS_REVIEW}),
    ExceptionAction.REOPEN_EXCEPTION: frozenset({ExceptionState.CLOSED}),
}


def _actions(values: list[str]) -> frozenset[ExceptionAction]:
    return frozenset(ExceptionAction(value) for value in values)


@dataclass(frozen=True)
class Workflow:
    name: str
    approval_queue: str
    redrive_via: RedriveVia
    # For WEBHOOK: where redrives are POSTed. The signing secret is never part of the record.
    redrive_target: str | None
    redrive_max_attempts: int
    redrive_timeout_seconds: float
    created_at: datetime
    # Hands-on minutes per day its operators and its approvers can give (None: not set).
    reviewer_minutes_per_day: float | None = None
    approver_minutes_per_day: float | None = None
    # Step-up (migration 0023): approvals need a sign-in at most this old, of this acr.
    require_auth_within_seconds: int | None = None
    require_acr: str | None = None
    # A redrive webhook also sends Casework-Signature and Idempotency-Key (migration 0032).
    redrive_legacy_headers: bool = False

    @classmethod
    def from_row(cls, row: Row) -> Workflow:
        return from_row(
            cls,
            row,
            optional=("require_auth_within_seconds", "require_acr"),
            redrive_via=RedriveVia(row["redrive_via"]),
        )


@dataclass(frozen=True)
class ExceptionReason:
    workflow: str
    code: str
    label: str
    owner_role: str
    escalation_role: str
    allowed_actions: frozenset[ExceptionAction]
    due_seconds: dict[Consequence, int]

    @classmethod
    def from_row(cls, row: Row) -> ExceptionReason:
        return from_row(
            cls,
            row,
            allowed_actions=_actions(row["allowed_actions"]),
            due_seconds={level: row[f"due_{level.value}_seconds"] for level in Consequence},
        )


@dataclass(frozen=True)
class ExceptionRecord:
    id: str
    workflow: str
    source_record_id: str
    reason_code: str
    reason_label: str
    detail: str
    blocked_step: str | None
    completed_steps: tuple[str, ...]
    stale_steps: tuple[str, ...]
    evidence: tuple[str, ...]
    context: Any
    consequence: Consequence
    state: ExceptionState
    closure: Closure | None
    # Who it belongs to now, evaluated at read time: past its due time, an exception
    # waiting for review belongs to its escalation owner even before a claim moves it.
    owner_role: str
    escalation_role: str
    # The reason's owner: the team it started with, which keeps sight of it after escalation.
    reason_owner_role: str
    escalated_at: datetime | None
    due_at: datetime
    overdue: bool
    attempts: int
    recurrences: int
    reopen_count: int
    version: int
    last_rejection: str | None
    item_id: int
    decision_id: int | None
    approval_queue: str
    reason_allowed_actions: frozenset[ExceptionAction]
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    # The claim on its item, for fencing and for showing who works on it. The token is
    # compared, never shown.
    item_queue: str
    item_pending: bool
    lease_owner: str | None
    lease_token: UUID | None
    lease_live: bool

    @classmethod
    def from_row(cls, row: Row) -> ExceptionRecord:
        closure = row["closure"]
        return from_row(
            cls,
            row,
            completed_steps=tuple(row["completed_steps"]),
            stale_steps=tuple(row["stale_steps"]),
            evidence=tuple(row["evidence"]),
            consequence=Consequence(row["consequence"]),
            state=ExceptionState(row["state"]),
            closure=Closure(closure) if closure else None,
            owner_role=row["effective_owner_role"],
            reason_allowed_actions=_actions(row["allowed_actions"]),
            item_pending=row["item_state"] == "pending",
            lease_live=bool(row["lease_live"]),
        )

    @property
    def allowed_actions(self) -> list[ExceptionAction]:
        """What may happen next: what the state machine allows from here, narrowed by
        the reason's catalogue entry."""
        return [
            action
            for action, states in ALLOWED_FROM.items()
            if self.state in states and action in self.reason_allowed_actions
        ]

    @property
    def holder(self) -> str | None:
        """Who works on it right now under a live lease."""
        return self.lease_owner if self.item_pending and self.lease_live else None

    @property
    def queues(self) -> tuple[str, ...]:
        """Every queue the exception can sit in; a token covering one of them sees it."""
        return (
            self.item_queue,
            self.owner_role,
            self.reason_owner_role,
            self.escalation_role,
            self.approval_queue,
        )


@dataclass(frozen=True)
class Correction:
    version: int
    reason_code: str
    changes: Any
    stale_steps: tuple[str, ...]
    evidence: tuple[str, ...]
    note: str | None
    corrected_by: str
    submitted_at: datetime

    @classmethod
    def from_row(cls, row: Row) -> Correction:
        return from_row(
            cls, row, stale_steps=tuple(row["stale_steps"]), evidence=tuple(row["evidence"])
        )


@dataclass(frozen=True)
class Redrive:
    key: str
    exception_id: str
    version: int
    resume_after: str | None
    stale_steps: tuple[str, ...]
    requested_by: str
    requested_at: datetime
    succeeded: bool | None
    result_detail: str | None
    reported_by: str | None
    reported_at: datetime | None
    # For a workflow that takes redrives by webhook or broker: pending, delivered or failed.
    delivery_state: str | None
    delivery_attempts: int
    last_delivery_error: str | None
    delivered_at: datetime | None

    @classmethod
    def from_row(cls, row: Row) -> Redrive:
        result = row["result"]
        return from_row(
            cls,
            row,
            stale_steps=tuple(row["stale_steps"]),
            succeeded=None if result is None else result == "succeeded",
        )


@dataclass(frozen=True)
class ExceptionEvent:
    id: int
    exception_id: str
    workflow: str
    kind: str
    actor: str
    actor_role: str
    from_state: ExceptionState | None
    to_state: ExceptionState
    version: int
    evidence: tuple[str, ...]
    detail: str | None
    data: Any
    at: datetime

    @classmethod
    def from_row(cls, row: Row) -> ExceptionEvent:
        from_state = row["from_state"]
        return from_row(
            cls,
            row,
            from_state=ExceptionState(from_state) if from_state else None,
            to_state=ExceptionState(row["to_state"]),
            evidence=tuple(row["evidence"]),
        )
