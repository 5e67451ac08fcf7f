"""Bulk-action mutations (bulkRelease, bulkAssign, bulkMove, bulkHold): parse, call the
domain, map the result. The rules are in server/domain/controls/bulk.py."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.controls import bulk
from server.domain.failures import is_failure
from server.graphql.context import Context
from server.graphql.errors import (
    InvalidHoldReason,
    InvalidInput,
    NotFound,
    NotPermitted,
    from_failure,
)
from server.graphql.review.types import ItemState, ReviewItem

# --- payloads -----------------------------------------------------------------------------


@strawberry.enum
class SkipReason(enum.Enum):
    LEASED = strawberry.enum_value(
        bulk.SkipReason.LEASED.value,
        description="Under a live lease (leaseOwner holds it), and the call did not revoke it.",
    )
    NOT_WAITING = strawberry.enum_value(
        bulk.SkipReason.NOT_WAITING.value, description="Decided: no action applies to it."
    )
    ALREADY_SO = strawberry.enum_value(
        bulk.SkipReason.ALREADY_SO.value,
        description="Already as the action would leave it (free, assigned so, in the queue, held).",
    )


@strawberry.type
class SkippedItem:
    item: ReviewItem
    reason: SkipReason
    lease_owner: str | None = strawberry.field(description="For LEASED: who holds the lease.")


@strawberry.type
class BulkApplied:
    changed: list[ReviewItem] = strawberry.field(description="The items changed, as they are now.")
    skipped: list[SkippedItem] = strawberry.field(description="Left as they were, with why.")
    more: bool = strawberry.field(
        description="The filter matched more than 500 items: only the oldest 500 were taken; "
        "call again for the rest."
    )

    @classmethod
    def from_domain(cls, applied: bulk.Applied) -> BulkApplied:
        return cls(
            changed=[ReviewItem.from_domain(item) for item in applied.changed],
            skipped=[
                SkippedItem(
                    item=ReviewItem.from_domain(skipped.item),
                    reason=SkipReason(skipped.reason.value),
                    lease_owner=skipped.lease_owner,
                )
                for skipped in applied.skipped
            ],
            more=applied.more,
        )


# What any bulk action may be refused with; the same for all four.
BulkRefusal = NotFound | NotPermitted | InvalidInput | InvalidHoldReason
BulkReleaseResult = Annotated[BulkApplied | BulkRefusal, strawberry.union("BulkReleaseResult")]
BulkAssignResult = Annotated[BulkApplied | BulkRefusal, strawberry.union("BulkAssignResult")]
BulkMoveResult = Annotated[BulkApplied | BulkRefusal, strawberry.union("BulkMoveResult")]
BulkHoldResult = Annotated[BulkApplied | BulkRefusal, strawberry.union("BulkHoldResult")]

# --- inputs -------------------------------------------------------------------------------


@strawberry.input(description="A queue's waiting review items; every condition given must hold.")
class ItemFilter:
    queue: str
    state: ItemState | None = strawberry.field(
        default=None, description="PENDING (no live lease) or LEASED; null: both."
    )
    overdue: bool | None = None
    assigned: bool | None = None
    older_than_seconds: int | None = strawberry.field(
        default=None, description="Enqueued longer ago than this."
    )


@strawberry.input(description="Exactly one of itemIds and filter.")
class ItemSelection:
    item_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="1 to 500 ids, all in your token's queues."
    )
    filter: ItemFilter | None = strawberry.field(
        default=None,
        description="The oldest 500 matching items (BulkApplied.more: there are more).",
    )

    def to_domain(self) -> bulk.Selection:
        found = self.filter
        return bulk.Selection(
            item_ids=[str(item_id) for item_id in self.item_ids]
            if self.item_ids is not None
            else None,
            filter=bulk.ItemFilter(
                found.queue, found.state, found.overdue, found.assigned, found.older_than_seconds
            )
            if found is not None
            else None,
        )


REVOKE_LEASES = (
    "Revoke live leases (the reason goes into each item's timeline) instead of skipping their "
    "items."
)


@strawberry.input
class BulkReleaseInput:
    items: ItemSelection
    revoke_leases: bool = strawberry.field(default=False, description=REVOKE_LEASES)
    reason: str | None = strawberry.field(
        default=None, description="For the timeline; required with revokeLeases."
    )


@strawberry.input
class BulkAssignInput:
    items: ItemSelection
    reviewer: str = strawberry.field(
        description="The user name of a reviewer whose token covers every item's queue."
    )
    until: datetime | None = strawberry.field(
        default=None, description="When the assignments end (at most 366 days ahead)."
    )
    revoke_leases: bool = strawberry.field(default=False, description=REVOKE_LEASES)
    reason: str | None = strawberry.field(
        default=None, description="For the timeline; required with revokeLeases."
    )


@strawberry.input
class BulkMoveInput:
    items: ItemSelection
    to_queue: str = strawberry.field(description="A queue your token covers.")
    revoke_leases: bool = strawberry.field(default=False, description=REVOKE_LEASES)
    reason: str | None = strawberry.field(
        default=None, description="For the timeline; required with revokeLeases."
    )


@strawberry.input
class BulkHoldInput:
    items: ItemSelection
    until: datetime = strawberry.field(
        description="When the items are claimable again (at most 366 days ahead)."
    )
    reason: str = strawberry.field(description="A code of the holdReasons of each item's queue.")
    revoke_leases: bool = strawberry.field(default=False, description=REVOKE_LEASES)


# --- resolvers ----------------------------------------------------------------------------


def _answer(result: bulk.Applied | bulk.BulkRefusal) -> BulkApplied | BulkRefusal:
    """What every bulk mutation answers: the outcome, or the refusal as its member."""
    if is_failure(result):
        return from_failure(result)
    return BulkApplied.from_domain(result)


@strawberry.type
class BulkMutation:
    @strawberry.mutation(
        description="Makes the items claimable by anyone now: ends their holds and "
        "assignments (and, with revokeLeases, their leases). All or nothing. Managers only."
    )
    async def bulk_release(
        self, info: Info[Context, None], input: BulkReleaseInput
    ) -> BulkReleaseResult:
        result = await bulk.bulk_release(
            info.context.db,
            info.context.principal,
            input.items.to_domain(),
            revoke_leases=input.revoke_leases,
            reason=input.reason,
        )
        return _answer(result)

    @strawberry.mutation(
        description="Assigns the items to one reviewer, as assignItem does each. All or "
        "nothing. Managers only."
    )
    async def bulk_assign(
        self, info: Info[Context, None], input: BulkAssignInput
    ) -> BulkAssignResult:
        result = await bulk.bulk_assign(
            info.context.db,
            info.context.principal,
            input.items.to_domain(),
            reviewer=input.reviewer,
            until=input.until,
            revoke_leases=input.revoke_leases,
            reason=input.reason,
        )
        return _answer(result)

    @strawberry.mutation(
        description="Moves the items to another queue with their priority; their assignment "
        "and hold end, and they take that queue's due time. All or nothing. Managers only."
    )
    async def bulk_move(self, info: Info[Context, None], input: BulkMoveInput) -> BulkMoveResult:
        result = await bulk.bulk_move(
            info.context.db,
            info.context.principal,
            input.items.to_domain(),
            to_queue=input.to_queue,
            revoke_leases=input.revoke_leases,
            reason=input.reason,
        )
        return _answer(result)

    @strawberry.mutation(
        description="Parks the items until a time, for a hold reason of their queue. All or "
        "nothing. Managers only."
    )
    async def bulk_hold(self, info: Info[Context, None], input: BulkHoldInput) -> BulkHoldResult:
        result = await bulk.bulk_hold(
            info.context.db,
            info.context.principal,
            input.items.to_domain(),
            until=input.until,
            reason=input.reason,
            revoke_leases=input.revoke_leases,
        )
        return _answer(result)
