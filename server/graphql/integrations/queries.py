"""Reading webhook endpoints and their deliveries, an admin's. Parse, call the domain, map."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain import failures
from server.domain.failures import is_failure
from server.domain.integrations import deliveries, endpoints
from server.graphql.codes import ClientError
from server.graphql.context import Context
from server.graphql.errors import NotFound, NotPermitted, from_failure
from server.graphql.integrations.types import (
    WebhookDelivery,
    WebhookDeliveryList,
    WebhookDeliveryState,
    WebhookEndpoint,
    WebhookEndpointList,
)

WebhookEndpointsResult = Annotated[
    WebhookEndpointList | NotPermitted, strawberry.union("WebhookEndpointsResult")
]
WebhookEndpointQueryResult = Annotated[
    WebhookEndpoint | NotPermitted | NotFound, strawberry.union("WebhookEndpointQueryResult")
]
WebhookDeliveriesResult = Annotated[
    WebhookDeliveryList | NotPermitted | NotFound, strawberry.union("WebhookDeliveriesResult")
]


@strawberry.type
class IntegrationQuery:
    @strawberry.field(description="Every webhook endpoint your token may change. Admins.")
    async def webhook_endpoints(self, info: Info[Context, None]) -> WebhookEndpointsResult:
        ctx = info.context
        result = await endpoints.list_endpoints(ctx.db, ctx.principal)
        if is_failure(result):
            return from_failure(result)
        return WebhookEndpointList(endpoints=[WebhookEndpoint.from_domain(e) for e in result])

    @strawberry.field(description="One webhook endpoint. Admins.")
    async def webhook_endpoint(
        self, info: Info[Context, None], id: strawberry.ID
    ) -> WebhookEndpointQueryResult:
        ctx = info.context
        result = await endpoints.get_endpoint(ctx.db, ctx.principal, id)
        return from_failure(result) if is_failure(result) else WebhookEndpoint.from_domain(result)

    @strawberry.field(
        description="An endpoint's deliveries, newest event first: their state, attempts, "
        "and the last answer. Admins."
    )
    async def webhook_deliveries(
        self,
        info: Info[Context, None],
        endpoint_id: strawberry.ID,
        state: WebhookDeliveryState | None = None,
        first: int = 50,
        before: str | None = None,
    ) -> WebhookDeliveriesResult:
        ctx = info.context
        cursor: int | None = None
        if before is not None:
            if not before.isdigit() or len(before) > 18:
                # A query's malformed argument is a request error, as for every page.
                raise ClientError(f"malformed cursor {before[:40]!r}")
            cursor = int(before)
        result = await deliveries.list_deliveries(
            ctx.db, ctx.principal, endpoint_id, state=state, first=first, before=cursor, now=ctx.now
        )
        if isinstance(result, failures.InvalidInput):
            raise ClientError(result.message)
        if is_failure(result):
            return from_failure(result)
        return WebhookDeliveryList(deliveries=[WebhookDelivery.from_domain(d) for d in result])
