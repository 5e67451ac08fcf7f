"""Webhook endpoints, an admin's: register, change, disable and enable, delete, rotate the
secret, and replay a delivery. Parse, call the domain, map the result."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.failures import is_failure
from server.domain.integrations import deliveries, endpoints
from server.graphql.context import Context
from server.graphql.errors import InvalidInput, NotFound, NotPermitted, from_failure
from server.graphql.integrations.types import (
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointWithSecret,
    WebhookFormat,
)

CreateWebhookEndpointResult = Annotated[
    WebhookEndpointWithSecret | NotPermitted | InvalidInput,
    strawberry.union("CreateWebhookEndpointResult"),
]
RotateWebhookEndpointSecretResult = Annotated[
    WebhookEndpointWithSecret | NotPermitted | InvalidInput | NotFound,
    strawberry.union("RotateWebhookEndpointSecretResult"),
]
UpdateWebhookEndpointResult = Annotated[
    WebhookEndpoint | NotPermitted | InvalidInput | NotFound,
    strawberry.union("UpdateWebhookEndpointResult"),
]
WebhookEndpointResult = Annotated[
    WebhookEndpoint | NotPermitted | InvalidInput | NotFound,
    strawberry.union("WebhookEndpointResult"),
]
DisableWebhookEndpointResult = Annotated[
    WebhookEndpoint | NotPermitted | InvalidInput | NotFound,
    strawberry.union("DisableWebhookEndpointResult"),
]
ReplayDeliveryResult = Annotated[
    WebhookDelivery | NotPermitted | InvalidInput | NotFound,
    strawberry.union("ReplayDeliveryResult"),
]


MAX_ATTEMPTS = (
    "Attempts before a delivery fails for good (it can be replayed), 1 to 100; null: 8 for "
    "a new endpoint, unchanged for an update."
)
TIMEOUT_SECONDS = (
    "How long one POST may take, over 0 and at most 60 s; null: 10 for a new endpoint, "
    "unchanged for an update."
)


def endpoint_input(
    given: CreateWebhookEndpointInput | UpdateWebhookEndpointInput,
) -> endpoints.EndpointInput:
    """Either input, as the domain takes it (an update's nulls leave settings as they are)."""
    return endpoints.EndpointInput(
        url=given.url,
        event_types=given.event_types,
        queues=given.queues,
        workflows=given.workflows,
        format=given.format,
        legacy_headers=given.legacy_headers,
        description=given.description,
        max_attempts=given.max_attempts,
        timeout_seconds=given.timeout_seconds,
    )


@strawberry.input(
    description="A webhook endpoint: where, which events, and for which queues (review "
    "events: decision.*, item.*, lease.lapsed) or workflows (exception.*, redrive.requested)."
)
class CreateWebhookEndpointInput:
    url: str = strawberry.field(
        description="An http(s) URL without credentials, to a host CASEWORK_EFFECT_ALLOWED_HOSTS "
        "allows (when set)."
    )
    event_types: list[str] = strawberry.field(
        description="Event type names, e.g. `decision.effective`; an unknown one is refused."
    )
    queues: list[str] | None = strawberry.field(
        default=None, description="Review events of these queues (give this or workflows)."
    )
    workflows: list[str] | None = strawberry.field(
        default=None, description="Exception events of these workflows (or queues)."
    )
    secret: str | None = strawberry.field(
        default=None,
        description="A whsec_<base64> secret (16 to 64 bytes); null: one is made and "
        "shown once in the result.",
    )
    format: WebhookFormat = WebhookFormat.STANDARD
    legacy_headers: bool = strawberry.field(
        default=False,
        description="Also send Casework-Signature and Idempotency-Key (a receiver written "
        "for Casework's decision webhooks before Standard Webhooks).",
    )
    description: str = ""
    max_attempts: int | None = strawberry.field(default=None, description=MAX_ATTEMPTS)
    timeout_seconds: float | None = strawberry.field(default=None, description=TIMEOUT_SECONDS)

    def to_domain(self) -> endpoints.EndpointInput:
        return endpoint_input(self)


@strawberry.input(
    description="What to change; null leaves a setting as it is. Giving queues drops the "
    "workflows, and the other way round. Event types and scope apply to events from now on; "
    "url, format and legacyHeaders to every attempt from now on, pending deliveries included."
)
class UpdateWebhookEndpointInput:
    url: str | None = None
    event_types: list[str] | None = None
    queues: list[str] | None = None
    workflows: list[str] | None = None
    format: WebhookFormat | None = None
    legacy_headers: bool | None = None
    description: str | None = None
    max_attempts: int | None = strawberry.field(default=None, description=MAX_ATTEMPTS)
    timeout_seconds: float | None = strawberry.field(default=None, description=TIMEOUT_SECONDS)

    def to_domain(self) -> endpoints.EndpointInput:
        return endpoint_input(self)


@strawberry.type
class IntegrationMutation:
    @strawberry.mutation(
        description="Registers a webhook endpoint. Admins, for queues and workflows their "
        "token may change."
    )
    async def create_webhook_endpoint(
        self, info: Info[Context, None], input: CreateWebhookEndpointInput
    ) -> CreateWebhookEndpointResult:
        ctx = info.context
        result = await endpoints.create_endpoint(
            ctx.db,
            ctx.principal,
            input.to_domain(),
            input.secret,
            allowed_hosts=ctx.effect_allowed_hosts,
        )
        if is_failure(result):
            return from_failure(result)
        return WebhookEndpointWithSecret.from_domain(result)

    @strawberry.mutation(description="Changes a webhook endpoint's settings. Admins.")
    async def update_webhook_endpoint(
        self, info: Info[Context, None], id: strawberry.ID, input: UpdateWebhookEndpointInput
    ) -> UpdateWebhookEndpointResult:
        ctx = info.context
        result = await endpoints.update_endpoint(
            ctx.db, ctx.principal, id, input.to_domain(), allowed_hosts=ctx.effect_allowed_hosts
        )
        return from_failure(result) if is_failure(result) else WebhookEndpoint.from_domain(result)

    @strawberry.mutation(
        description="Stops deliveries to an endpoint until it is enabled again; its pending "
        "deliveries wait. Events happening meanwhile are not recorded for it. Admins."
    )
    async def disable_webhook_endpoint(
        self, info: Info[Context, None], id: strawberry.ID, reason: str | None = None
    ) -> DisableWebhookEndpointResult:
        ctx = info.context
        result = await endpoints.disable_endpoint(ctx.db, ctx.principal, id, reason)
        return from_failure(result) if is_failure(result) else WebhookEndpoint.from_domain(result)

    @strawberry.mutation(
        description="Enables an endpoint (after an admin or a 410 disabled it): its pending "
        "deliveries go out now, in order, each with a fresh round of attempts. Admins."
    )
    async def enable_webhook_endpoint(
        self, info: Info[Context, None], id: strawberry.ID
    ) -> WebhookEndpointResult:
        ctx = info.context
        result = await endpoints.enable_endpoint(ctx.db, ctx.principal, id)
        return from_failure(result) if is_failure(result) else WebhookEndpoint.from_domain(result)

    @strawberry.mutation(
        description="Deletes an endpoint with its secrets and deliveries; answers it as it "
        "was. Admins."
    )
    async def delete_webhook_endpoint(
        self, info: Info[Context, None], id: strawberry.ID
    ) -> WebhookEndpointResult:
        ctx = info.context
        result = await endpoints.delete_endpoint(ctx.db, ctx.principal, id)
        return from_failure(result) if is_failure(result) else WebhookEndpoint.from_domain(result)

    @strawberry.mutation(
        description="A new secret signs from now on (the one given, or one made and shown "
        "once); the secrets signing now keep signing beside it for overlapHours (0: they "
        "stop now). Admins."
    )
    async def rotate_webhook_endpoint_secret(
        self,
        info: Info[Context, None],
        id: strawberry.ID,
        secret: str | None = None,
        overlap_hours: int = endpoints.DEFAULT_OVERLAP_HOURS,
    ) -> RotateWebhookEndpointSecretResult:
        ctx = info.context
        result = await endpoints.rotate_secret(ctx.db, ctx.principal, id, secret, overlap_hours)
        if is_failure(result):
            return from_failure(result)
        return WebhookEndpointWithSecret.from_domain(result)

    @strawberry.mutation(
        description="Sends a delivered or failed delivery again, with the same webhook-id "
        "and a fresh round of attempts, in its place in its item's (or exception's) order. "
        "A disabled endpoint's replay waits for it to be enabled. Admins."
    )
    async def replay_delivery(
        self, info: Info[Context, None], endpoint_id: strawberry.ID, webhook_id: str
    ) -> ReplayDeliveryResult:
        ctx = info.context
        result = await deliveries.replay(
            ctx.db, ctx.principal, endpoint_id, webhook_id, now=ctx.now
        )
        return from_failure(result) if is_failure(result) else WebhookDelivery.from_domain(result)
