"""Claim-control mutations (assignments, lease revocation, holds): parse, call the domain,
map the result. The rules are in server/domain/controls/assignments.py and holds.py."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain import model
from server.domain.controls import assignments, holds
from server.domain.failures import is_failure
from server.graphql.context import Context
from server.graphql.controls.types import HoldReason
from server.graphql.errors import (
    InvalidHoldReason,
    InvalidInput,
    ItemNotWaiting,
    NotAssigned,
    NotFound,
    NotHeld,
    NotLeased,
    NotPermitted,
    StaleLease,
    from_failure,
)
from server.graphql.review.mutations import ItemAnswer
from server.graphql.review.types import ReviewItem

# --- payloads -----------------------------------------------------------------------------


@strawberry.type
class ItemAssigned(ItemAnswer):
    pass


@strawberry.type
class ItemUnassigned(ItemAnswer):
    pass


@strawberry.type
class LeaseRevoked:
    item: ReviewItem
    owner: str = strawberry.field(description="Whose lease ended.")

    @classmethod
    def of(cls, revoked: assignments.Revoked) -> LeaseRevoked:
        return cls(item=ReviewItem.from_domain(revoked.item), owner=revoked.owner)


@strawberry.type
class ItemHeld(ItemAnswer):
    pass


@strawberry.type
class ItemResumed(ItemAnswer):
    pass


@strawberry.type
class HoldReasonDefined:
    queue: str
    hold_reason: HoldReason

    @classmethod
    def of(cls, reason: model.HoldReason) -> HoldReasonDefined:
        return cls(queue=reason.queue, hold_reason=HoldReason.from_domain(reason))


# NotFound: an unknown item id, or an item outside the token's queues, as the bulk actions.
AssignItemResult = Annotated[
    ItemAssigned | ItemNotWaiting | NotFound | NotPermitted | InvalidInput,
    strawberry.union("AssignItemResult"),
]
UnassignItemResult = Annotated[
    ItemUnassigned | NotAssigned | ItemNotWaiting | NotFound | NotPermitted | InvalidInput,
    strawberry.union("UnassignItemResult"),
]
RevokeLeaseResult = Annotated[
    LeaseRevoked | NotLeased | ItemNotWaiting | NotFound | NotPermitted | InvalidInput,
    strawberry.union("RevokeLeaseResult"),
]
HoldItemResult = Annotated[
    ItemHeld | StaleLease | InvalidHoldReason | NotFound | NotPermitted | InvalidInput,
    strawberry.union("HoldItemResult"),
]
ResumeItemResult = Annotated[
    ItemResumed | NotHeld | ItemNotWaiting | NotFound | NotPermitted | InvalidInput,
    strawberry.union("ResumeItemResult"),
]
DefineHoldReasonResult = Annotated[
    HoldReasonDefined | NotPermitted | InvalidInput, strawberry.union("DefineHoldReasonResult")
]

# --- inputs -------------------------------------------------------------------------------


@strawberry.input
class AssignItemInput:
    item_id: strawberry.ID
    reviewer: str = strawberry.field(
        description="The user name of a reviewer whose token covers the item's queue."
    )
    until: datetime | None = strawberry.field(
        default=None,
        description="When the assignment ends (at most 366 days ahead); null: when it is "
        "unassigned, or the item is decided or moves to another queue.",
    )

    def to_domain(self) -> assignments.Assignment:
        return assignments.Assignment(self.item_id, self.reviewer, self.until)


@strawberry.input
class UnassignItemInput:
    item_id: strawberry.ID


@strawberry.input
class RevokeLeaseInput:
    item_id: strawberry.ID
    reason: str = strawberry.field(description="Why, for the item's timeline (required).")


@strawberry.input
class HoldItemInput:
    item_id: strawberry.ID
    lease_token: str
    until: datetime = strawberry.field(
        description="When the item is claimable again (at most 366 days ahead)."
    )
    reason: str = strawberry.field(description="A code of the queue's holdReasons.")

    def to_domain(self) -> holds.Hold:
        return holds.Hold(self.item_id, self.lease_token, self.until, self.reason)


@strawberry.input
class ResumeItemInput:
    item_id: strawberry.ID


@strawberry.input
class DefineHoldReasonInput:
    queue: str
    code: str
    label: str


# --- resolvers ----------------------------------------------------------------------------


@strawberry.type
class ControlMutation:
    @strawberry.mutation(
        description="Reserves a waiting review item for one reviewer: only their claimNext "
        "returns it, before their other work, until the assignment ends. Managers only."
    )
    async def assign_item(
        self, info: Info[Context, None], input: AssignItemInput
    ) -> AssignItemResult:
        ctx = info.context
        result = await assignments.assign_item(ctx.db, ctx.principal, input.to_domain())
        return from_failure(result) if is_failure(result) else ItemAssigned.of(result)

    @strawberry.mutation(description="Ends an assignment early. Managers only.")
    async def unassign_item(
        self, info: Info[Context, None], input: UnassignItemInput
    ) -> UnassignItemResult:
        result = await assignments.unassign_item(
            info.context.db, info.context.principal, input.item_id
        )
        return from_failure(result) if is_failure(result) else ItemUnassigned.of(result)

    @strawberry.mutation(
        description="Ends someone's live lease now: their token is stale at once and their "
        "console hears LEASE_LOST; the item is claimable again. Managers only."
    )
    async def revoke_lease(
        self, info: Info[Context, None], input: RevokeLeaseInput
    ) -> RevokeLeaseResult:
        result = await assignments.revoke_lease(
            info.context.db, info.context.principal, input.item_id, input.reason
        )
        return from_failure(result) if is_failure(result) else LeaseRevoked.of(result)

    @strawberry.mutation(
        description="Parks a claimed review item until a time, for a reason of the queue's "
        "catalogue; ends the lease. Fenced by the lease token."
    )
    async def hold_item(self, info: Info[Context, None], input: HoldItemInput) -> HoldItemResult:
        result = await holds.hold_item(info.context.db, info.context.principal, input.to_domain())
        return from_failure(result) if is_failure(result) else ItemHeld.of(result)

    @strawberry.mutation(
        description="Ends a hold early: the item is claimable again, with its priority. A "
        "manager, or a reviewer of the item's queue."
    )
    async def resume_item(
        self, info: Info[Context, None], input: ResumeItemInput
    ) -> ResumeItemResult:
        result = await holds.resume_item(info.context.db, info.context.principal, input.item_id)
        return from_failure(result) if is_failure(result) else ItemResumed.of(result)

    @strawberry.mutation(
        description="Adds or relabels a reason in a queue's hold-reason catalogue. Admins only."
    )
    async def define_hold_reason(
        self, info: Info[Context, None], input: DefineHoldReasonInput
    ) -> DefineHoldReasonResult:
        result = await holds.define_hold_reason(
            info.context.db,
            info.context.principal,
            queue=input.queue,
            code=input.code,
            label=input.label,
        )
        return from_failure(result) if is_failure(result) else HoldReasonDefined.of(result)
