"""The exceptionEvents stream: every action on a workflow's exceptions, in commit order,
resumable from a cursor like decisionEvents. Owning systems that take redrives by
subscription follow it for `redrive_requested`; consoles follow it to stay current."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

import strawberry
from strawberry.types import Info

from server.domain import exception_reads, workflows
from server.domain.failures import InvalidInput
from server.events.subscriber import Inbox
from server.graphql.context import Context
from server.graphql.exception_types import ExceptionEvent
from server.graphql.types import ClientError

EVENT_PAGE = 100
# A row held back by the commit horizon becomes deliverable when an unrelated transaction
# ends, which no notification announces: look again at least this often.
EVENT_RECHECK_SECONDS = 1.0


async def _require_workflow(info: Info[Context, None], workflow: str) -> None:
    ctx = info.context
    found = await workflows.get_workflows(ctx.db, [workflow])
    reasons = (await workflows.get_reasons(ctx.db, [workflow]))[workflow]
    queues = [found[workflow].approval_queue] if workflow in found else []
    queues += [q for r in reasons for q in (r.owner_role, r.escalation_role)]
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
        await _require_workflow(info, workflow)
        ctx = info.context
        inbox = Inbox(accepts=lambda event: event.kind == "exception")
        # Listen before reading, so nothing committed in between is missed.
        with ctx.live.hub.subscribe(workflows=(workflow,), inbox=inbox):
            position = await exception_reads.event_stream_start(ctx.db, workflow, after)
            if isinstance(position, InvalidInput):
                raise ClientError(position.message)
            while True:
                page = await exception_reads.events_after(ctx.db, workflow, position, EVENT_PAGE)
                ctx.forget_reads()
                for reached, event in page:
                    yield ExceptionEvent.from_domain(event)
                    position = reached
                if len(page) == EVENT_PAGE:
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(inbox.next(), EVENT_RECHECK_SECONDS)
                # One read answers every hint that arrived meanwhile.
                inbox.discard_pending()
                if not await ctx.still_authorized():
                    return
