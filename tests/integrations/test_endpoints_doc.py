"""The endpoints section of docs/integrations.md shows bodies as the server renders them."""

from __future__ import annotations

import json
import re
from datetime import datetime

from cloudevents.core.bindings.http import HTTPMessage, from_structured_event

from server.config import REPO_ROOT
from server.domain.integrations.envelope import EndpointFormat, OutboxEvent, render
from server.domain.review.evidence import canonical_json

DOC = REPO_ROOT / "docs" / "integrations.md"


def section() -> str:
    text = DOC.read_text()
    start = text.index("## Event endpoints")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def json_examples() -> list[str]:
    return re.findall(r"```json\n(.*?)\n```", section(), flags=re.DOTALL)


def test_the_doc_bodies_are_what_render_sends_byte_for_byte() -> None:
    standard, cloudevents = json_examples()
    shown = json.loads(cloudevents)
    event = OutboxEvent(
        message_id=shown["id"],
        event_type=shown["type"],
        occurred_at=datetime.fromisoformat(shown["time"]),
        data=shown["data"],
        item_id=int(shown["subject"].removeprefix("item/")),
        queue=shown["source"].removeprefix("urn:casework:queue:"),
    )
    body, content_type = render(event, EndpointFormat.CLOUDEVENTS)
    assert canonical_json(body).decode() == cloudevents
    assert content_type == "application/cloudevents+json"
    parsed = from_structured_event(
        HTTPMessage(headers={"content-type": content_type}, body=cloudevents.encode())
    )
    assert parsed.get_id() == shown["id"]
    envelope = json.loads(standard)
    event = OutboxEvent(
        message_id=shown["id"],
        event_type=envelope["type"],
        occurred_at=datetime.fromisoformat(envelope["timestamp"]),
        data=envelope["data"],
        item_id=7,
        queue="kyc",
    )
    body, content_type = render(event, EndpointFormat.STANDARD)
    assert canonical_json(body).decode() == standard
    assert content_type == "application/json"


def test_the_doc_names_every_operation_of_the_registry() -> None:
    text = section()
    for name in (
        "createWebhookEndpoint",
        "webhookEndpoints",
        "webhookEndpoint(id)",
        "updateWebhookEndpoint",
        "disableWebhookEndpoint",
        "enableWebhookEndpoint",
        "deleteWebhookEndpoint",
        "rotateWebhookEndpointSecret",
        "webhookDeliveries",
        "replayDelivery",
        "casework_webhook_endpoints_disabled_total",
        "casework_event_deliveries_total",
        "CASEWORK_EVENT_RETENTION_DAYS",
    ):
        assert name in text, name
