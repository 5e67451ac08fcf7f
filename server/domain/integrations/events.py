"""The event catalogue: every type an endpoint may subscribe to, named as it is sent."""

from __future__ import annotations

import enum


class EventType(enum.StrEnum):
    # Review events: an endpoint scopes them by queue.
    DECISION_EFFECTIVE = "decision.effective"
    DECISION_OVERTURNED = "decision.overturned"
    ITEM_OVERDUE = "item.overdue"
    ITEM_ESCALATED = "item.escalated"
    LEASE_LAPSED = "lease.lapsed"
    # A decision's effect failed for good (migration 0036).
    DECISION_FAILED = "decision.failed"
    # Exception events: an endpoint scopes them by workflow.
    EXCEPTION_RAISED = "exception.raised"
    EXCEPTION_NEEDS_APPROVAL = "exception.needs_approval"
    EXCEPTION_CLOSED = "exception.closed"
    REDRIVE_REQUESTED = "redrive.requested"

    @property
    def is_review_event(self) -> bool:
        return self in REVIEW_EVENTS


REVIEW_EVENTS = frozenset(
    {
        EventType.DECISION_EFFECTIVE,
        EventType.DECISION_OVERTURNED,
        EventType.ITEM_OVERDUE,
        EventType.ITEM_ESCALATED,
        EventType.LEASE_LAPSED,
        EventType.DECISION_FAILED,
    }
)
