"""The names notifications are configured with, stored as the enum values
(db/migrations/0034_notifications.sql checks the same lists)."""

from __future__ import annotations

import enum


class NotificationEvent(enum.StrEnum):
    """What the owners of waiting work are told of."""

    # An item or exception passed its due time.
    OVERDUE = "OVERDUE"
    # An item moved up to its escalation queue (a reviewer's ESCALATE, overdue, abandoned).
    ESCALATED = "ESCALATED"
    # An item has waited unclaimed longer than the rule's bound.
    UNCLAIMED = "UNCLAIMED"
    # A correction waits for a second person's approval.
    NEEDS_APPROVAL = "NEEDS_APPROVAL"
    # A decision's effect failed for good: a person has to carry it out or redrive it.
    APPLICATION_FAILED = "APPLICATION_FAILED"


class ChannelKind(enum.StrEnum):
    """Where a channel's messages go."""

    # E-mail over SMTP (CASEWORK_SMTP_URL); the target lists the recipients.
    EMAIL = "EMAIL"
    # Incoming webhooks: one JSON POST to the target URL, in the shape each renders
    # (Slack: text and blocks; Teams: an Adaptive Card).
    SLACK = "SLACK"
    TEAMS = "TEAMS"
    # Any Apprise URL (https://github.com/caronc/apprise/wiki): a pager, a chat, a phone.
    APPRISE = "APPRISE"
