"""Reads that find cases. A resolver maps the input, calls server/domain/search, maps back."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from server.domain.failures import InvalidInput as InvalidInputFailure
from server.domain.search import decisions, items, lookups
from server.domain.search.filters import AmbiguousKey, SearchTooBroad
from server.graphql.codes import ClientError, ErrorCode
from server.graphql.context import Context
from server.graphql.errors import from_failure
from server.graphql.pagination import PageInfo, page_size
from server.graphql.review.types import (
    Decision,
    DecisionConnection,
    DecisionEdge,
    ItemConnection,
    ItemEdge,
    ReviewItem,
)
from server.graphql.search.types import (
    AmbiguousExternalKey,
    DecisionSearch,
    DecisionSearchResult,
    ItemByExternalKeyResult,
    ItemSearch,
    ItemSearchResult,
)
from server.store.routing import ReadKind


def refused_as_too_broad(refusal: SearchTooBroad) -> ClientError:
    """errors[] coded LIMIT_EXCEEDED, with `extensions.narrowBy`: the filters to add."""
    return ClientError(
        refusal.message, ErrorCode.LIMIT_EXCEEDED, details={"narrowBy": list(refusal.narrow_by)}
    )


@strawberry.type
class SearchQuery:
    @strawberry.field(
        description=(
            "Items across your queues that match every filter given, newest activity first "
            "unless `filter.order` says otherwise. A search that would read too much for one "
            "page is refused, coded LIMIT_EXCEEDED, with `extensions.narrowBy` naming the "
            "filters that would bound it."
        )
    )
    async def items(
        self,
        info: Info[Context, None],
        filter: ItemSearch,
        first: int = 50,
        after: str | None = None,
    ) -> ItemSearchResult:
        ctx = info.context
        found = await items.search_items(
            ctx.database(ReadKind.SEARCH),
            ctx.principal,
            filter.to_domain(),
            page_size(first),
            after,
        )
        if isinstance(found, SearchTooBroad):
            raise refused_as_too_broad(found)
        if isinstance(found, InvalidInputFailure):
            return from_failure(found)
        edges = [
            ItemEdge(cursor=cursor, node=ReviewItem.from_domain(item))
            for item, cursor in zip(found.items, found.cursors, strict=True)
        ]
        return ItemConnection(
            edges=edges, page_info=PageInfo.ending(edges, has_next_page=found.has_next_page)
        )

    @strawberry.field(
        description=(
            "Decisions across your queues that match every filter given, newest first unless "
            "`filter.order` says otherwise; refused like `items` when too broad."
        )
    )
    async def decisions(
        self,
        info: Info[Context, None],
        filter: DecisionSearch,
        first: int = 50,
        after: str | None = None,
    ) -> DecisionSearchResult:
        ctx = info.context
        found = await decisions.search_decisions(
            ctx.database(ReadKind.SEARCH),
            ctx.principal,
            filter.to_domain(),
            page_size(first),
            after,
        )
        if isinstance(found, SearchTooBroad):
            raise refused_as_too_broad(found)
        if isinstance(found, InvalidInputFailure):
            return from_failure(found)
        edges = [
            DecisionEdge(cursor=cursor, node=Decision.from_domain(decision))
            for decision, cursor in zip(found.decisions, found.cursors, strict=True)
        ]
        return DecisionConnection(
            edges=edges, page_info=PageInfo.ending(edges, has_next_page=found.has_next_page)
        )

    @strawberry.field(
        description=(
            "The item an integration enqueued under this key: into `queue` when given (where it "
            "was enqueued, wherever it is now), else in any of your queues. Null when there is "
            "none you may see."
        )
    )
    async def item_by_external_key(
        self, info: Info[Context, None], external_key: str, queue: str | None = None
    ) -> ItemByExternalKeyResult | None:
        ctx = info.context
        found = await lookups.item_by_external_key(
            ctx.database(ReadKind.SEARCH), ctx.principal, queue, external_key
        )
        if isinstance(found, AmbiguousKey):
            return AmbiguousExternalKey.from_domain(found)
        return None if found is None else ReviewItem.from_domain(found)
