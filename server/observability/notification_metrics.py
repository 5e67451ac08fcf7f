"""The notifications' metric (issue 28), registered beside the others in the default
registry that /metrics serves."""

from __future__ import annotations

import enum

from prometheus_client import Counter


class NotificationOutcome(enum.StrEnum):
    # Sent: one per notification, a digest's each counted.
    SENT = "sent"
    # Failed; another attempt will be made.
    RETRIED = "retried"
    # Failed for good: the channel refused, or the attempts ran out.
    FAILED = "failed"


NOTIFICATIONS = Counter(
    "casework_notifications",
    "Attempts at sending notifications to owners' channels, per notification, by outcome.",
    ("outcome",),
)


def record_notifications(outcome: NotificationOutcome, count: int = 1) -> None:
    NOTIFICATIONS.labels(outcome.value).inc(count)
