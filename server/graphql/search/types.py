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
        "Items across your queues; every field left out or null does not filter, the rest "
        "must all hold. Times are half-open: after <= t < before. The decision filters match "
        "the item's current decision (the latest not superseded); an item without a decision "
        "matches none of them."
    )
)
class ItemSearch:
    queues: list[str] | None = strawberry.field(
        default=None,
        description=(
            "Only these queues, where the items are now. A queue outside your token matches "
            "nothing."
        ),
    )
    states: list[model.ItemState] | None = strawberry.field(
        default=None,
        description="Only items in these states (LEASED: waiting under a live lease).",
    )
    external_key_prefix: str | None = strawberry.field(
        default=None,
        description="Keys that start with this text (case-sensitive; not empty).",
    )
    subject_ref: str | None = strawberry.field(
        default=None, description="Items about this data subject (queues with a privacy policy)."
    )
    priority_at_least: int | None = strawberry.field(
        default=None, description="Priority at least this (included)."
    )
    priority_at_most: int | None = strawberry.field(
        default=None, description="Priority at most this (included)."
    )
    enqueued_after: datetime | None = strawberry.field(
        default=None, description="Enqueued at or after this time."
    )
    enqueued_before: datetime | None = strawberry.field(
        default=None, description="Enqueued before this time."
    )
    decided_after: datetime | None = strawberry.field(
        default=None, description="The current decision was made at or after this time."
    )
    decided_before: datetime | None = strawberry.field(
        default=None, description="The current decision was made before this time."
    )
    decided_by: str | None = strawberry.field(
        default=None, description="The reviewer who made the current decision."
    )
    verdict: model.Verdict | None = strawberry.field(
        default=None,
        description="The current decision's outcome (an overturn's is the outcome it gives).",
    )
    reason_code: str | None = strawberry.field(
        default=None, description="The reason code the current decision gives."
    )
    decision_status: model.DecisionStatus | None = strawberry.field(
        default=None,
        description=(
            "PROVISIONAL or EFFECTIVE. A current decision is never SUPERSEDED: that is bad "
            "input (use `overturned`)."
        ),
    )
    overturned: bool | None = strawberry.field(
        default=None, description="Whether the current decision is an overturn."
    )
    assigned_to: str | None = strawberry.field(
        default=None, description="Waiting items reserved for this reviewer now."
    )
    held: bool | None = strawberry.field(
        default=None, description="Waiting on a hold that has not ended (true), or not."
    )
    overdue: bool | None = strawberry.field(
        default=None, description="Waiting past the due time (true), or not."
    )
    has_notes: bool | None = strawberry.field(
        default=None, description="With at least one note on the timeline (true), or none."
    )
    order: filters.SearchOrder = strawberry.field(
        default=filters.SearchOrder.NEWEST_FIRST,
        description="By the item's latest activity, newest first unless OLDEST_FIRST.",
    )

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
