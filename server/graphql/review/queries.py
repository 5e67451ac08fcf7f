"""Reads. What a caller may not see reads as null, never as someone else's data."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from server.domain.failures import InvalidInput
from server.domain.parsing import parse_id
from server.domain.review import queues
from server.graphql.codes import ClientError, ErrorCode
from server.graphql.context import Context
from server.graphql.review.queues import Queue
from server.graphql.review.types import Decision, Me, ReviewItem


def _parse_id(value: strawberry.ID, field: str) -> int:
    parsed = parse_id(value, field)
    if isinstance(parsed, InvalidInput):
        raise ClientError(parsed.message, ErrorCode.BAD_REQUEST)
    return parsed


@strawberry.type
class Query:
    @strawberry.field(description="The queues your token covers.")
    async def queues(self, info: Info[Context, None]) -> list[Queue]:
        found = await queues.list_queues(info.context.db, info.context.principal)
        return [Queue.from_domain(q) for q in found]

    @strawberry.field
    async def queue(self, info: Info[Context, None], name: str) -> Queue | None:
        if not info.context.principal.works_in(name):
            return None
        found = await info.context.loaders.queue.load(name)
        return Queue.from_domain(found) if found else None

    @strawberry.field
    async def item(self, info: Info[Context, None], id: strawberry.ID) -> ReviewItem | None:
        found = await info.context.loaders.item.load(_parse_id(id, "id"))
        if found is None or not info.context.principal.works_in(found.queue):
            return None
        return ReviewItem.from_domain(found)

    @strawberry.field
    async def decision(self, info: Info[Context, None], id: strawberry.ID) -> Decision | None:
        found = await info.context.loaders.decision.load(_parse_id(id, "id"))
        if found is None or not info.context.principal.works_in(found.queue):
            return None
        return Decision.from_domain(found)

    @strawberry.field(description="Who the bearer token belongs to.")
    def me(self, info: Info[Context, None]) -> Me:
        principal = info.context.principal
        return Me(user=principal.user, role=principal.role.value, queues=sorted(principal.queues))
