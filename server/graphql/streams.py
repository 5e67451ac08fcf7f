"""Commit-ordered, resumable streams (decisionEvents, exceptionEvents): read a page from the
table after a position, yield it, and wait for a hint, or at most a second, before looking
again. The table is the truth; a hint only says it is worth looking now.

While the database is away the stream waits for it, from the position it reached, and goes
on when it answers again: no gap, no duplicate, and nothing for the client to do. It waits
with capped backoff, and a resync of its inbox (the listener is back) ends a wait early.
Anything else a read raises is a bug, and ends the stream with an INTERNAL error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

from server.domain.review.live import StreamPosition
from server.events.outage import OutageLog, Retrying
from server.events.subscriber import Inbox
from server.graphql.context import Context

T = TypeVar("T")

log = logging.getLogger("casework.streams")

PAGE = 100
# A row held back by the commit horizon becomes deliverable when an unrelated transaction
# ends, which no notification announces: look again at least this often.
RECHECK_SECONDS = 1.0

# Every stream of the process shares one: an outage is one line, not one per stream.
OUTAGE = OutageLog(log, "decision and exception streams")

ReadPage = Callable[[StreamPosition, int], Awaitable[list[tuple[StreamPosition, T]]]]


async def when_available(inbox: Inbox, read: Callable[[], Awaitable[T]]) -> T:
    """`read()`, again and again while the database cannot be reached."""
    retrying = Retrying(OUTAGE)
    try:
        while True:
            try:
                result = await read()
            except Exception as error:
                if not retrying.failed(error):
                    raise
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(inbox.next(), retrying.delay())
                continue
            retrying.succeeded()
            return result
    finally:
        retrying.abandon()


async def commit_ordered(
    ctx: Context, inbox: Inbox, position: StreamPosition, read_page: ReadPage[T]
) -> AsyncGenerator[T, None]:
    """Runs until the caller's token stops being valid (the socket is then closed)."""
    while True:
        page = await when_available(inbox, functools.partial(read_page, position, PAGE))
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
