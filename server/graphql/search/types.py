"""The search inputs, as GraphQL spells them, and what a look-up may answer besides a record.

An input maps field for field onto the domain's search (server/domain/search/filters.py);
the rules (which combinations make sense, what a page may scan) live there.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from server.domain import model
from server.domain.search import filters
from server.graphql.errors import Error, InvalidInput
from server.graphql.review.types import DecisionConnection, ItemConnection, ReviewItem

SearchOrder = strawberry.enum(
    filters.SearchOrder,
    name="SearchOrder",
    description="Newest activity first, or oldest first; ties broken by id.",
)


def _names(values: list[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


@strawberry.input(
    description=(
        "Items across your queues; every field left out or null does not filter. Times are "
        "half-open: after <= t < before. The decision filters match the item's current "
        "decision (the latest not superseded)."
    )
)
class ItemSearch:
    queues: list[str] | None = strawberry.field(
        default=None, description="Only these queues (within your token's)."
    )
    states: list[model.ItemState] | None = None
    external_key_prefix: str | None = strawberry.field(
        default=None, description="Keys that start with this text (case-sensitive)."
    )
    subject_ref: str | None = strawberry.field(
        default=None, description="Items about this data subject (queues with a privacy policy)."
    )
    priority_at_least: int | None = None
    priority_at_most: int | None = None
    enqueued_after: datetime | None = None
    enqueued_before: datetime | None = None
    decided_after: datetime | None = None
    decided_before: datetime | None = None
    decided_by: str | None = strawberry.field(
        default=None, description="The reviewer who made the current decision."
    )
    verdict: model.Verdict | None = None
    reason_code: str | None = None
    decision_status: model.DecisionStatus | None = None
    overturned: bool | None = strawberry.field(
        default=None, description="Whether the current decision is an overturn."
    )
    assigned_to: str | None = None
    held: bool | None = None
    overdue: bool | None = None
    has_notes: bool | None = None
    order: filters.SearchOrder = filters.SearchOrder.NEWEST_FIRST

    def to_domain(self) -> filters.ItemSearch:
        return filters.ItemSearch(
            queues=_names(self.queues),
            states=None if self.states is None else tuple(self.states),
            external_key_prefix=self.external_key_prefix,
            subject_ref=self.subject_ref,
            priority_at_least=self.priority_at_least,
            priority_at_most=self.priority_at_most,
            enqueued_after=self.enqueued_after,
            enqueued_before=self.enqueued_before,
            decided_after=self.decided_after,
            decided_before=self.decided_before,
            decided_by=self.decided_by,
            verdict=self.verdict,
            reason_code=self.reason_code,
            decision_status=self.decision_status,
            overturned=self.overturned,
            assigned_to=self.assigned_to,
            held=self.held,
            overdue=self.overdue,
            has_notes=self.has_notes,
            order=self.order,
        )


@strawberry.input(
    description=(
        "Decisions across your queues, overturns included; every field left out or null does "
        "not filter. Times are half-open: after <= t < before."
    )
)
class DecisionSearch:
    queues: list[str] | None = None
    reviewer: str | None = None
    verdict: model.Verdict | None = None
    reason_code: str | None = None
    decided_after: datetime | None = None
    decided_before: datetime | None = None
    status: model.DecisionStatus | None = None
    order: filters.SearchOrder = filters.SearchOrder.NEWEST_FIRST

    def to_domain(self) -> filters.DecisionSearch:
        return filters.DecisionSearch(
            queues=_names(self.queues),
            reviewer=self.reviewer,
            verdict=self.verdict,
            reason_code=self.reason_code,
            decided_after=self.decided_after,
            decided_before=self.decided_before,
            status=self.status,
            order=self.order,
        )


@strawberry.type(
    description="No queue was given, and the key names an item in several: ask again with one."
)
class AmbiguousExternalKey(Error):
    external_key: str
    queues: list[str]

    @classmethod
    def from_domain(cls, found: filters.AmbiguousKey) -> AmbiguousExternalKey:
        return cls(message=found.message, external_key=found.key, queues=list(found.places))


ItemSearchResult = Annotated[ItemConnection | InvalidInput, strawberry.union("ItemSearchResult")]
DecisionSearchResult = Annotated[
    DecisionConnection | InvalidInput, strawberry.union("DecisionSearchResult")
]
ItemByExternalKeyResult = Annotated[
    ReviewItem | AmbiguousExternalKey, strawberry.union("ItemByExternalKeyResult")
]
