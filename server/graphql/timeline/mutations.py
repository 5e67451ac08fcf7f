"""The note mutation: addNote. Parse, call the domain, map the result."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.failures import is_failure
from server.domain.timeline import notes
from server.graphql.context import Context
from server.graphql.errors import InvalidInput, NotFound, NotPermitted, from_failure
from server.graphql.review.types import ReviewItem
from server.graphql.timeline.types import ItemEvent


@strawberry.type
class NoteAdded:
    event: ItemEvent = strawberry.field(description="The note, as the item's events show it.")
    item: ReviewItem


AddNoteResult = Annotated[
    NoteAdded | NotFound | NotPermitted | InvalidInput, strawberry.union("AddNoteResult")
]


@strawberry.input
class AddNoteInput:
    item_id: strawberry.ID
    body: str = strawberry.field(description="The note: 1 to 4000 characters, not all blank.")


@strawberry.type
class TimelineMutation:
    @strawberry.mutation(
        description="Adds a note to an item's timeline: anyone whose token covers the item's "
        "queue, with or without a lease. Notes are never changed or removed."
    )
    async def add_note(self, info: Info[Context, None], input: AddNoteInput) -> AddNoteResult:
        ctx = info.context
        result = await notes.add_note(ctx.db, ctx.principal, input.item_id, input.body, ctx.keyring)
        if is_failure(result):
            return from_failure(result)
        item = await ctx.loaders.item.load(result.item_id)
        assert item is not None, "items are never deleted"
        return NoteAdded(event=ItemEvent.from_domain(result), item=ReviewItem.from_domain(item))
