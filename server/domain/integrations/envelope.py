"""What an endpoint receives for one event: the body, in the endpoint's format.

STANDARD, the Standard Webhooks convention's envelope: `{"type", "timestamp", "data"}`.
CLOUDEVENTS, a CloudEvents 1.0 structured-mode event (`application/cloudevents+json`):
`id` is the same message id as `webhook-id`, `source` names the deployment's queue or
workflow, `subject` the item or exception. Both are sent as canonical JSON (sorted keys, no
whitespace, UTF-8) and signed alike.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


class EndpointFormat(enum.StrEnum):
    STANDARD = "STANDARD"
    CLOUDEVENTS = "CLOUDEVENTS"


JSON = "application/json"
CLOUDEVENTS_JSON = "application/cloudevents+json"
# CloudEvents' `source`: a URI reference naming where the event happened.
SOURCE_PREFIX = "urn:casework"


@dataclass(frozen=True)
class OutboxEvent:
    message_id: str
    event_type: str
    occurred_at: datetime
    data: dict[str, Any]
    item_id: int | None = None
    exception_id: str | None = None
    queue: str | None = None
    workflow: str | None = None

    @property
    def subject(self) -> str:
        return (
            f"item/{self.item_id}" if self.item_id is not None else f"exception/{self.exception_id}"
        )

    @property
    def source(self) -> str:
        if self.queue is not None:
            return f"{SOURCE_PREFIX}:queue:{self.queue}"
        return f"{SOURCE_PREFIX}:workflow:{self.workflow}"


def timestamp_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def render(event: OutboxEvent, endpoint_format: EndpointFormat) -> tuple[dict[str, Any], str]:
    """The body (before canonical JSON) and its Content-Type."""
    if endpoint_format is EndpointFormat.CLOUDEVENTS:
        return {
            "specversion": "1.0",
            "id": event.message_id,
            "source": event.source,
            "type": event.event_type,
            "subject": event.subject,
            "time": timestamp_text(event.occurred_at),
            "datacontenttype": JSON,
            "data": event.data,
        }, CLOUDEVENTS_JSON
    return {
        "type": event.event_type,
        "timestamp": timestamp_text(event.occurred_at),
        "data": event.data,
    }, JSON
