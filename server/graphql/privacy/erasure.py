"""placeHold, releaseHold, reportRelationshipEnded, requestErasure, approveErasure: parse,
call the domain (server/domain/privacy/), map the result."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain import failures
from server.domain.failures import is_failure
from server.domain.parsing import parse_id
from server.domain.privacy import erasure, holds, receipts, retention
from server.graphql.context import Context
from server.graphql.errors import InvalidInput, NotFound, NotPermitted, from_failure
from server.graphql.observe import note_error_member
from server.graphql.privacy.erasure_types import (
    ErasureDeferred,
    ErasureReceipt,
    ErasureRequest,
    FourEyesRequired,
    PrivacyHold,
    RelationshipEnded,
)

HoldResult = Annotated[
    PrivacyHold | NotPermitted | InvalidInput | NotFound, strawberry.union("HoldResult")
]
RelationshipEndedResult = Annotated[
    RelationshipEnded | NotPermitted | InvalidInput | NotFound,
    strawberry.union("RelationshipEndedResult"),
]
RequestErasureResult = Annotated[
    ErasureRequest | NotPermitted | InvalidInput | NotFound,
    strawberry.union("RequestErasureResult"),
]
ApproveErasureResult = Annotated[
    ErasureReceipt | ErasureDeferred | FourEyesRequired | NotPermitted | NotFound | InvalidInput,
    strawberry.union("ApproveErasureResult"),
]


@strawberry.input
class ApproveErasureInput:
    request_id: strawberry.ID


def _int_id(value: strawberry.ID, field: str) -> int | InvalidInput:
    """The project's id parsing (positive, within bigint), as this family's union member."""
    parsed = parse_id(value, field)
    if isinstance(parsed, failures.InvalidInput):
        return InvalidInput(message=parsed.message, field=parsed.field)
    return parsed


def _hold_result(
    result: holds.Hold | failures.NotPermitted | failures.InvalidInput | failures.NotFound,
) -> HoldResult:
    if is_failure(result):
        return from_failure(result)
    assert isinstance(result, holds.Hold)
    return PrivacyHold.of(result)


@strawberry.type
class ErasureMutation:
    @strawberry.mutation(
        description="Places a hold on a subject or on items: nothing under it is erased, by "
        "retention or by request, until it is released or its `until` passes. Compliance "
        "role only (not admins: a hold is a legal matter), for subjects and items in its "
        "queues. Logged."
    )
    async def place_hold(
        self,
        info: Info[Context, None],
        basis: Annotated[
            str,
            strawberry.argument(
                description="Why: the litigation, investigation or request it serves (1-2000)."
            ),
        ],
        subject_ref: Annotated[
            str | None,
            strawberry.argument(description="Hold every item of this subject (or give itemIds)."),
        ] = None,
        item_ids: Annotated[
            list[strawberry.ID] | None,
            strawberry.argument(description="Hold these items (or give subjectRef)."),
        ] = None,
        until: Annotated[
            datetime | None,
            strawberry.argument(description="When it ends by itself; null: until released."),
        ] = None,
    ) -> HoldResult:
        ctx = info.context
        parsed_ids: list[int] | None = None
        if item_ids is not None:
            parsed_ids = []
            for value in item_ids:
                parsed = _int_id(value, "itemIds")
                if isinstance(parsed, InvalidInput):
                    return parsed
                parsed_ids.append(parsed)
        return _hold_result(
            await holds.place_hold(
                ctx.db,
                ctx.principal,
                subject_ref=subject_ref,
                item_ids=parsed_ids,
                basis=basis,
                until=until,
                now=ctx.now,
            )
        )

    @strawberry.mutation(
        description="Releases a hold (append-only: the release is a record of its own). "
        "Releasing it again changes nothing. Compliance role only. Logged."
    )
    async def release_hold(
        self,
        info: Info[Context, None],
        hold_id: strawberry.ID,
        reason: Annotated[str, strawberry.argument(description="Why the hold ends (1-2000).")],
    ) -> HoldResult:
        ctx = info.context
        parsed = _int_id(hold_id, "holdId")
        if isinstance(parsed, InvalidInput):
            return parsed
        return _hold_result(await holds.release_hold(ctx.db, ctx.principal, parsed, reason))

    @strawberry.mutation(
        description="The integration reports that the business relationship with a subject "
        "ended at `at`: the anchor of `relationship_ended` retention (AML records are kept a "
        "number of years after it). Reporting again replaces the date; both are logged. "
        "Integration role only."
    )
    async def report_relationship_ended(
        self, info: Info[Context, None], subject_ref: str, at: datetime
    ) -> RelationshipEndedResult:
        ctx = info.context
        result = await retention.report_relationship_ended(
            ctx.db, ctx.principal, subject_ref, at, now=ctx.now
        )
        if is_failure(result):
            return from_failure(result)
        assert isinstance(result, retention.RelationshipEnded)
        return RelationshipEnded.of(result)

    @strawberry.mutation(
        description="Asks for a subject's personal data to be erased (its items in your "
        "queues). Another compliance officer approves it (approveErasure). Compliance role "
        "only. Logged."
    )
    async def request_erasure(
        self, info: Info[Context, None], subject_ref: str, basis: str
    ) -> RequestErasureResult:
        ctx = info.context
        result = await erasure.request_erasure(ctx.db, ctx.principal, subject_ref, basis)
        if is_failure(result):
            return from_failure(result)
        assert isinstance(result, erasure.ErasureRequest)
        return ErasureRequest.of(result)

    @strawberry.mutation(
        description="Approves an erasure request (four-eyes: not its requester). Under a hold "
        "or a retention period not ended, the answer is ErasureDeferred (basis, end date) "
        "and the subject is restricted until the worker erases; otherwise the values, salts "
        "and data key are destroyed now and the answer is the receipt. Approving again "
        "answers the same receipt. Compliance role only."
    )
    async def approve_erasure(
        self, info: Info[Context, None], input: ApproveErasureInput
    ) -> ApproveErasureResult:
        ctx = info.context
        request_id = _int_id(input.request_id, "requestId")
        if isinstance(request_id, InvalidInput):
            return request_id
        if ctx.erasure_ledger is None:
            raise RuntimeError("an erasure needs the erasure ledger")
        result = await erasure.approve_erasure(
            ctx.db, ctx.principal, request_id, ctx.keyring, ctx.erasure_ledger, now=ctx.now
        )
        if isinstance(result, erasure.FourEyesRequired):
            note_error_member("FourEyesRequired")
            return FourEyesRequired(
                message=result.message, request_id=strawberry.ID(str(result.request_id))
            )
        if isinstance(result, receipts.ErasureDeferred):
            return ErasureDeferred.of(result)
        if isinstance(result, receipts.ErasureReceipt):
            return ErasureReceipt.of(result)
        return from_failure(result)
