"""Commit-ordered, resumable streams (decisionEvents, exceptionEvents): read a page from the
table after a position, yield it, and wait for a hint, or at most a second, before looking
again. The table is the truth; a hint only says it is worth looking now."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

from server.domain.live import StreamPosition
from server.events.subscriber import Inbox
from server.graphql.context import Context

T = TypeVar("T")

PAGE = 100
# A row held back by the commit horizon becomes deliverable when an unrelated transaction
# ends, which no notification announces: look again at least this often.
RECHECK_SECONDS = 1.0

ReadPage = Callable[[StreamPosition, int], Awaitable[list[tuple[StreamPosition, T]]]]


async def commit_ordered(
    ctx: Context, inbox: Inbox, position: StreamPosition, read_page: ReadPage[T]
) -> AsyncGenerator[T, None]:
    """Runs until the caller's token stops being valid (the socket is then closed)."""
    while True:
        page = await read_page(position, PAGE)
        ctx.forget_reads()
        for reached, row in page:
            yield row
            position = reached
        if len(page) == PAGE:
            continue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(inbox.next(), RECHECK_SECONDS)
        # One read answers every hint that arrived meanwhile.
        inbox.discard_pending()
        if not await ctx.still_authorized():
            return
