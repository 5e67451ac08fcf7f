"""Expected failures as members of result unions, mapped from the domain's failures."""

from __future__ import annotations

from datetime import datetime
from typing import overload

import strawberry

from server.domain import failures, model
from server.domain.exceptions import records
from server.graphql.exceptions.types import ExceptionAction, ExceptionState
from server.graphql.observe import note_error_member
from server.graphql.review.types import HeldLease, ItemState


@strawberry.interface(description="An expected failure. Nothing was written.")
class Error:
    message: str


@strawberry.type
class NotPermitted(Error):
    pass


@strawberry.type
class InvalidInput(Error):
    field: str | None


@strawberry.type(
    description="Nothing with this id, or nothing your token covers: the two answer alike."
)
class NotFound(Error):
    id: strawberry.ID


@strawberry.type
class QueueEmpty(Error):
    queue: str


@strawberry.type
class StaleLease(Error):
    item_id: strawberry.ID
    decided_under_this_lease: bool = strawberry.field(
        description="submitDecision only: a verdict of yours was recorded under this lease, "
        "and this one differs from it (the same one again is answered with DecisionRecorded, "
        "replay true). Always false for anyone but the lease's holder."
    )
    decision_id: strawberry.ID | None = strawberry.field(
        description="The decision recorded under this lease, when decidedUnderThisLease."
    )


@strawberry.type
class EvidenceChanged(Error):
    item_id: strawberry.ID
    current_evidence_hash: str


@strawberry.type
class InvalidReasonCode(Error):
    queue: str
    code: str
    verdict: str


@strawberry.type
class AlreadySuperseded(Error):
    decision_id: strawberry.ID
    superseded_by: strawberry.ID | None


@strawberry.type(description="An exception action its state, or its reason, does not allow.")
class InvalidTransition(Error):
    exception_id: strawberry.ID
    state: ExceptionState = strawberry.field(description="The state the exception is in.")
    action: ExceptionAction
    allowed_actions: list[ExceptionAction] = strawberry.field(
        description="What may happen from here."
    )


@strawberry.type(description="This correction version's redrive was requested already.")
class AlreadyQueued(Error):
    exception_id: strawberry.ID
    redrive_key: str


@strawberry.type(
    description="You hold as many live leases in the queue as its maxLeasesPerReviewer "
    "allows. Nothing was claimed."
)
class LeaseLimitReached(Error):
    limit: int
    held: list[HeldLease] = strawberry.field(
        description="Those leases, your own, with their tokens: take the work up again "
        "(decide, renew or release) instead of waiting for them to lapse."
    )


@strawberry.type(description="The code is not in the queue's hold-reason catalogue.")
class InvalidHoldReason(Error):
    queue: str
    code: str


@strawberry.type(description="Nobody holds a live lease on the item.")
class NotLeased(Error):
    item_id: strawberry.ID


@strawberry.type(description="The item is not held now.")
class NotHeld(Error):
    item_id: strawberry.ID


@strawberry.type(description="The item is not assigned to anyone now.")
class NotAssigned(Error):
    item_id: strawberry.ID


@strawberry.type(description="The item is decided, or parked: nothing waits to be done.")
class ItemNotWaiting(Error):
    item_id: strawberry.ID
    state: ItemState


@strawberry.type(
    description="The queue or workflow asks for a recent sign-in (requireAuthWithinSeconds, "
    "requireAcr) and yours is older, of another authentication context, or unknown (a CLI "
    "token proves none). Nothing was written and a lease held is untouched: sign in again "
    "(the console sends you through the provider with prompt=login) and retry."
)
class ReauthenticationRequired(Error):
    required_within_seconds: int | None = strawberry.field(
        description="The most a sign-in may be old, in seconds; null: any age."
    )
    acr: str | None = strawberry.field(
        description="The authentication context class required; null: any."
    )
    authenticated_at: datetime | None = strawberry.field(
        description="When you last signed in, as your credentials say; null: unknown."
    )


ErrorType = (
    NotPermitted
    | InvalidInput
    | NotFound
    | QueueEmpty
    | StaleLease
    | EvidenceChanged
    | InvalidReasonCode
    | AlreadySuperseded
    | InvalidTransition
    | AlreadyQueued
    | LeaseLimitReached
    | InvalidHoldReason
    | NotLeased
    | NotHeld
    | NotAssigned
    | ItemNotWaiting
    | ReauthenticationRequired
)


def _id(value: int | None) -> strawberry.ID | None:
    return None if value is None else strawberry.ID(str(value))


# One overload per failure: mypy applies them member by member to a union, so a domain
# result narrowed to its failures maps onto exactly the members of the resolver's union.
@overload
def from_failure(failure: failures.NotPermitted) -> NotPermitted: ...
@overload
def from_failure(failure: failures.InvalidInput) -> InvalidInput: ...
@overload
def from_failure(failure: failures.NotFound) -> NotFound: ...
@overload
def from_failure(failure: failures.QueueEmpty) -> QueueEmpty: ...
@overload
def from_failure(failure: failures.StaleLease) -> StaleLease: ...
@overload
def from_failure(failure: failures.EvidenceChanged) -> EvidenceChanged: ...
@overload
def from_failure(failure: failures.InvalidReasonCode) -> InvalidReasonCode: ...
@overload
def from_failure(failure: failures.AlreadySuperseded) -> AlreadySuperseded: ...
@overload
def from_failure(failure: failures.InvalidTransition) -> InvalidTransition: ...
@overload
def from_failure(failure: failures.AlreadyQueued) -> AlreadyQueued: ...
@overload
def from_failure(failure: failures.LeaseLimitReached) -> LeaseLimitReached: ...
@overload
def from_failure(failure: failures.InvalidHoldReason) -> InvalidHoldReason: ...
@overload
def from_failure(failure: failures.NotLeased) -> NotLeased: ...
@overload
def from_failure(failure: failures.NotHeld) -> NotHeld: ...
@overload
def from_failure(failure: failures.NotAssigned) -> NotAssigned: ...
@overload
def from_failure(failure: failures.ItemNotWaiting) -> ItemNotWaiting: ...
@overload
def from_failure(failure: failures.ReauthenticationRequired) -> ReauthenticationRequired: ...


def from_failure(failure: failures.Failure) -> ErrorType:
    # Every expected failure a resolver answers with passes here: the access line says so.
    note_error_member(type(failure).__name__)
    match failure:
        case failures.NotPermitted(message=message):
            return NotPermitted(message=message)
        case failures.InvalidInput(message=message, field=field):
            return InvalidInput(message=message, field=field)
        case failures.NotFound():
            return NotFound(message=failure.message, id=strawberry.ID(failure.id))
        case failures.QueueEmpty(queue=queue):
            return QueueEmpty(message=failure.message, queue=queue)
        case failures.StaleLease(item_id=item_id, message=message):
            return StaleLease(
                message=message,
                item_id=strawberry.ID(str(item_id)),
                decided_under_this_lease=failure.decided_under_this_lease,
                decision_id=_id(failure.decision_id),
            )
        case failures.EvidenceChanged():
            return EvidenceChanged(
                message=failure.message,
                item_id=strawberry.ID(str(failure.item_id)),
                current_evidence_hash=failure.current_evidence_hash,
            )
        case failures.InvalidReasonCode():
            return InvalidReasonCode(
                message=failure.message,
                queue=failure.queue,
                code=failure.code,
                verdict=failure.verdict,
            )
        case failures.AlreadySuperseded():
            return AlreadySuperseded(
                message=failure.message,
                decision_id=strawberry.ID(str(failure.decision_id)),
                superseded_by=_id(failure.superseded_by),
            )
        case failures.InvalidTransition():
            return InvalidTransition(
                message=failure.message,
                exception_id=strawberry.ID(failure.exception_id),
                state=records.ExceptionState(failure.state),
                action=records.ExceptionAction(failure.action),
                allowed_actions=[records.ExceptionAction(a) for a in failure.allowed_actions],
            )
        case failures.AlreadyQueued():
            return AlreadyQueued(
                message=failure.message,
                exception_id=strawberry.ID(failure.exception_id),
                redrive_key=failure.redrive_key,
            )
        case failures.LeaseLimitReached():
            return LeaseLimitReached(
                message=failure.message,
                limit=failure.limit,
                held=[HeldLease.from_domain(claim) for claim in failure.held],
            )
        case failures.InvalidHoldReason():
            return InvalidHoldReason(
                message=failure.message, queue=failure.queue, code=failure.code
            )
        case failures.NotLeased(item_id=item_id, message=message):
            return NotLeased(message=message, item_id=strawberry.ID(str(item_id)))
        case failures.NotHeld(item_id=item_id, message=message):
            return NotHeld(message=message, item_id=strawberry.ID(str(item_id)))
        case failures.NotAssigned(item_id=item_id, message=message):
            return NotAssigned(message=message, item_id=strawberry.ID(str(item_id)))
        case failures.ItemNotWaiting(item_id=item_id):
            return ItemNotWaiting(
                message=failure.message,
                item_id=strawberry.ID(str(item_id)),
                state=model.ItemState(failure.state),
            )
        case failures.ReauthenticationRequired():
            return ReauthenticationRequired(
                message=failure.message,
                required_within_seconds=failure.required_within_seconds,
                acr=failure.acr,
                authenticated_at=failure.authenticated_at,
            )
    raise AssertionError(f"unmapped failure {failure!r}")
