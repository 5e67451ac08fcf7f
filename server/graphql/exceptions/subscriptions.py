"""The exceptionEvents stream: every action on a workflow's exceptions, in commit order,
resumable from a cursor like decisionEvents. Owning systems that take redrives by
subscription follow it for `redrive_requested`; consoles follow it to stay current."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator

import strawberry
from strawberry.types import Info

from server.domain.exceptions import reads, records, workflows
from server.domain.failures import InvalidInput
from server.domain.review.live import StreamPosition
from server.events.channels import EventKind
from server.events.subscriber import Inbox
from server.graphql.codes import ClientError
from server.graphql.context import Context
from server.graphql.exceptions.types import ExceptionEvent
from server.graphql.streams import commit_ordered, when_available


async def _require_workflow(info: Info[Context, None], workflow: str) -> None:
    ctx = info.context
    found = await workflows.get_workflows(ctx.db, [workflow])
    reasons = (await workflows.get_reasons(ctx.db, [workflow]))[workflow]
    queues = workflows.queues_of(found[workflow], reasons) if workflow in found else []
    if not any(map(ctx.principal.works_in, queues)):
        raise ClientError(f"no workflow {workflow!r} that your token covers")


@strawberry.type
class ExceptionSubscription:
    @strawberry.subscription(
        description="Every event of a workflow's exceptions in commit order, resumable: pass "
        "the id of the last event you processed as `after`; without it the stream starts now."
    )
    async def exception_events(
        self, info: Info[Context, None], workflow: str, after: strawberry.ID | None = None
    ) -> AsyncGenerator[ExceptionEvent, None]:
        ctx = info.context
        inbox = Inbox(accepts=lambda event: event.kind == EventKind.EXCEPTION)
        # Listen before reading, so nothing committed in between is missed.
        with ctx.live.hub.subscribe(workflows=(workflow,), inbox=inbox):
            await when_available(inbox, functools.partial(_require_workflow, info, workflow))
            position = await when_available(
                inbox,
                functools.partial(reads.event_stream_start, ctx.db, workflow, after),
            )
            if isinstance(position, InvalidInput):
                raise ClientError(position.message)

            async def read_page(
                after: StreamPosition, limit: int
            ) -> list[tuple[StreamPosition, records.ExceptionEvent]]:
                return await reads.events_after(ctx.db, workflow, after, limit)

            async with contextlib.aclosing(
                commit_ordered(ctx, inbox, position, read_page)
            ) as events:
                async for event in events:
                    yield ExceptionEvent.from_domain(event)
