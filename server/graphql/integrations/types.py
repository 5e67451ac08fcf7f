"""The object types and enums of webhook endpoints and their deliveries.

As elsewhere (review/types.py), strawberry.enum marks the domain enum itself as the GraphQL
enum, so each is defined once, in the domain.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from server.domain.integrations import deliveries, endpoints, envelope

strawberry.enum(
    envelope.EndpointFormat,
    name="WebhookFormat",
    description="The body an endpoint receives. STANDARD: Standard Webhooks' envelope "
    '`{"type", "timestamp", "data"}` as application/json. CLOUDEVENTS: a CloudEvents 1.0 '
    "event in structured mode (application/cloudevents+json), its `id` the webhook-id. Both "
    "are signed alike.",
)
strawberry.enum(
    deliveries.DeliveryState,
    name="WebhookDeliveryState",
    description="PENDING: waiting its turn or a retry (or its endpoint's re-enable), or in "
    "flight. DELIVERED: the endpoint answered 2xx. FAILED: refused for good (a 4xx other "
    "than 410 and 429) or out of attempts; replayDelivery sends it again.",
)
WebhookFormat = envelope.EndpointFormat
WebhookDeliveryState = deliveries.DeliveryState


@strawberry.type(description="A signing secret in force. Its value is shown only once.")
class WebhookSecret:
    created_at: datetime
    expires_at: datetime | None = strawberry.field(
        description="When it stops signing (a rotation's overlap); null: until rotated."
    )


@strawberry.type(description="Where events are POSTed, which ones, and how they are signed.")
class WebhookEndpoint:
    id: strawberry.ID
    url: str
    description: str
    event_types: list[str] = strawberry.field(
        description="The event types it takes, by name (`decision.effective`, ...)."
    )
    queues: list[str] | None = strawberry.field(
        description="The queues whose review events it takes; null when it names workflows."
    )
    workflows: list[str] | None = strawberry.field(
        description="The workflows whose exception events it takes; null when it names queues."
    )
    format: WebhookFormat
    legacy_headers: bool = strawberry.field(
        description="Also sends Casework-Signature and Idempotency-Key, beside the Standard "
        "Webhooks headers, for a receiver written before them."
    )
    enabled: bool
    disabled_reason: str | None = strawberry.field(
        description="Why it is disabled: an admin's reason, or a receiver's 410 Gone."
    )
    disabled_at: datetime | None
    max_attempts: int = strawberry.field(
        description="Attempts per round before a delivery fails (a replay starts a new one)."
    )
    timeout_seconds: float
    created_by: str
    created_at: datetime
    updated_at: datetime
    secrets: list[WebhookSecret] = strawberry.field(
        description="The secrets signing now, newest first: more than one during a "
        "rotation's overlap, each signature sent space-separated in webhook-signature."
    )
    pending_deliveries: int
    failed_deliveries: int

    @classmethod
    def from_domain(cls, endpoint: endpoints.WebhookEndpoint) -> WebhookEndpoint:
        return cls(
            id=strawberry.ID(endpoint.id),
            url=endpoint.url,
            description=endpoint.description,
            event_types=[t.value for t in endpoint.event_types],
            queues=None if endpoint.queues is None else list(endpoint.queues),
            workflows=None if endpoint.workflows is None else list(endpoint.workflows),
            format=endpoint.format,
            legacy_headers=endpoint.legacy_headers,
            enabled=endpoint.enabled,
            disabled_reason=endpoint.disabled_reason,
            disabled_at=endpoint.disabled_at,
            max_attempts=endpoint.max_attempts,
            timeout_seconds=endpoint.timeout_seconds,
            created_by=endpoint.created_by,
            created_at=endpoint.created_at,
            updated_at=endpoint.updated_at,
            secrets=[
                WebhookSecret(created_at=s.created_at, expires_at=s.expires_at)
                for s in endpoint.secrets
            ],
            pending_deliveries=endpoint.pending_deliveries,
            failed_deliveries=endpoint.failed_deliveries,
        )


@strawberry.type(
    description="An endpoint with a secret just made for it: keep the secret now, it is "
    "never shown again."
)
class WebhookEndpointWithSecret:
    endpoint: WebhookEndpoint
    secret: str = strawberry.field(
        description="The new secret (whsec_...): what the receiver verifies with."
    )

    @classmethod
    def from_domain(cls, made: endpoints.WithSecret) -> WebhookEndpointWithSecret:
        return cls(endpoint=WebhookEndpoint.from_domain(made.endpoint), secret=made.secret)


@strawberry.type(description="Every webhook endpoint your token may change.")
class WebhookEndpointList:
    endpoints: list[WebhookEndpoint]


@strawberry.type(description="One event's delivery to one endpoint.")
class WebhookDelivery:
    endpoint_id: strawberry.ID
    webhook_id: str = strawberry.field(
        description="The event's id, sent as webhook-id on every attempt (and to every "
        "endpoint that takes the event)."
    )
    event_type: str
    occurred_at: datetime
    item_id: strawberry.ID | None
    exception_id: strawberry.ID | None
    state: WebhookDeliveryState
    attempts: int = strawberry.field(description="Every attempt made, replays included.")
    next_attempt_at: datetime | None = strawberry.field(
        description="PENDING: when it is tried next (a receiver's Retry-After is a floor); "
        "null while it waits its turn."
    )
    waiting_turn: bool = strawberry.field(
        description="PENDING behind an earlier delivery of the same item (or exception) to "
        "this endpoint: it falls due once that one is delivered or fails."
    )
    in_flight: bool
    last_status: int | None = strawberry.field(
        description="The HTTP status of the last answer; null: none came (a timeout, a "
        "refused connection) or no attempt yet."
    )
    last_error: str | None
    delivered_at: datetime | None
    cursor: str = strawberry.field(description="Pass as `before` for the older ones.")

    @classmethod
    def from_domain(cls, delivery: deliveries.WebhookDelivery) -> WebhookDelivery:
        return cls(
            endpoint_id=strawberry.ID(delivery.endpoint_id),
            webhook_id=delivery.webhook_id,
            event_type=delivery.event_type,
            occurred_at=delivery.occurred_at,
            item_id=None if delivery.item_id is None else strawberry.ID(str(delivery.item_id)),
            exception_id=None
            if delivery.exception_id is None
            else strawberry.ID(delivery.exception_id),
            state=delivery.state,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at,
            waiting_turn=delivery.waiting_turn,
            in_flight=delivery.in_flight,
            last_status=delivery.last_status,
            last_error=delivery.last_error,
            delivered_at=delivery.delivered_at,
            cursor=str(delivery.event_id),
        )


@strawberry.type(description="An endpoint's deliveries, newest event first.")
class WebhookDeliveryList:
    deliveries: list[WebhookDelivery]
