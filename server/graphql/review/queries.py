"""Reads. What a caller may not see reads as null, never as someone else's data."""

from __future__ import annotations

from typing import Protocol, TypeVar

import strawberry
from strawberry.types import Info
from typing_extensions import TypeIs

from server.domain.failures import InvalidInput
from server.domain.model import Principal
from server.domain.parsing import parse_id
from server.domain.review import queues
from server.graphql.codes import ClientError, ErrorCode
from server.graphql.context import Context
from server.graphql.review.me import Me
from server.graphql.review.queues import Queue
from server.graphql.review.types import Decision, ReviewItem
from server.store.routing import ReadKind


def _parse_id(value: strawberry.ID, field: str) -> int:
    parsed = parse_id(value, field)
    if isinstance(parsed, InvalidInput):
        raise ClientError(parsed.message, ErrorCode.BAD_REQUEST)
    return parsed


class _OfQueue(Protocol):
    @property
    def queue(self) -> str: ...


Found = TypeVar("Found", bound=_OfQueue)


def _visible(found: Found | None, caller: Principal) -> TypeIs[Found]:
    """A record read by id, in a queue the caller's token covers: any other reads as null."""
    return found is not None and caller.works_in(found.queue)


@strawberry.type
class Query:
    @strawberry.field(description="The queues your token covers.")
    async def queues(self, info: Info[Context, None]) -> list[Queue]:
        db = info.context.database(ReadKind.QUEUE_LIST)
        found = await queues.list_queues(db, info.context.principal)
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
        return ReviewItem.from_domain(found) if _visible(found, info.context.principal) else None

    @strawberry.field
    async def decision(self, info: Info[Context, None], id: strawberry.ID) -> Decision | None:
        found = await info.context.loaders.decision.load(_parse_id(id, "id"))
        return Decision.from_domain(found) if _visible(found, info.context.principal) else None

    @strawberry.field(description="Who the credentials belong to, and how they signed in.")
    def me(self, info: Info[Context, None]) -> Me:
        return Me.of(info.context.principal)
