"""revealField, and Queue.fieldAccess's types. Parse, call the domain, map the result."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from server.domain.failures import is_failure
from server.domain.model import Queue
from server.domain.privacy import reveal
from server.graphql.context import Context
from server.graphql.errors import Error, InvalidInput, NotFound, NotPermitted, from_failure
from server.graphql.observe import note_error_member
from server.graphql.privacy.types import FieldClass


@strawberry.type(
    description="A sensitive or personal value, revealed to you: the reveal was logged, with "
    "your reason, before it was answered."
)
class RevealedField:
    item_id: strawberry.ID
    path: str
    field_class: FieldClass = strawberry.field(name="class")
    value: JSON = strawberry.field(description="The value (any JSON, null included).")
    revealed_at: datetime


@strawberry.type(
    description="The field's value was erased (or its subject's key destroyed): nothing to "
    "reveal. Its digest remains on ReviewItem.fields."
)
class FieldErased(Error):
    item_id: strawberry.ID
    path: str


RevealFieldResult = Annotated[
    RevealedField | FieldErased | NotPermitted | InvalidInput | NotFound,
    strawberry.union("RevealFieldResult"),
]


@strawberry.input
class RevealFieldInput:
    item_id: strawberry.ID
    path: str = strawberry.field(description="The field's path, e.g. applicant.passport_number.")
    reason: str = strawberry.field(
        description="Why you need to see it: 1 to 1000 characters, not all blank. Logged."
    )


@strawberry.type
class RevealMutation:
    @strawberry.mutation(
        description="Reveals one field of an item under a privacy policy, with a reason: for "
        "the roles its policy names (reviewers, approvers and compliance officers unless it "
        "says otherwise), on an item of a queue your token covers; a restricted subject's "
        "fields for compliance officers only. The reveal is written to the privacy log "
        "before the value is answered; if it cannot be written, nothing is revealed."
    )
    async def reveal_field(
        self, info: Info[Context, None], input: RevealFieldInput
    ) -> RevealFieldResult:
        ctx = info.context
        result = await reveal.reveal_field(
            ctx.db, ctx.principal, ctx.keyring, input.item_id, input.path, input.reason
        )
        if isinstance(result, reveal.FieldErased):
            note_error_member("FieldErased")
            return FieldErased(
                message=result.message,
                item_id=strawberry.ID(str(result.item_id)),
                path=result.path,
            )
        if is_failure(result):
            return from_failure(result)
        return RevealedField(
            item_id=strawberry.ID(str(result.item_id)),
            path=result.path,
            field_class=result.field_class,
            value=result.value,
            revealed_at=result.revealed_at,
        )


@strawberry.type(description="Reveals of one path by one person in the window.")
class FieldAccessRow:
    reviewer: str
    path: str
    reveals: int
    last_revealed_at: datetime


@strawberry.type(description="Who revealed which fields of a queue's items, and how often.")
class FieldAccessReport:
    queue: str
    since: datetime
    until: datetime
    rows: list[FieldAccessRow] = strawberry.field(description="By reviewer, then path.")


FieldAccessResult = Annotated[
    FieldAccessReport | NotPermitted | InvalidInput, strawberry.union("FieldAccessResult")
]


async def field_access(
    info: Info[Context, None], queue: Queue, since: datetime | None, until: datetime | None
) -> FieldAccessResult:
    ctx = info.context
    result = await reveal.field_access(ctx.db, ctx.principal, queue.name, since, until, ctx.now)
    if is_failure(result):
        return from_failure(result)
    start, end, rows = result
    return FieldAccessReport(
        queue=queue.name,
        since=start,
        until=end,
        rows=[
            FieldAccessRow(
                reviewer=r.reviewer,
                path=r.path,
                reveals=r.reveals,
                last_revealed_at=r.last_revealed_at,
            )
            for r in rows
        ],
    )
