"""Lease expiry and due times, announced without a database event.

Nothing is written when a lease runs out or an item falls due, so nothing is notified.
Each process keeps one timer for the next such moment in the queues its own subscribers
watch, and at that moment reads which leases ran out (EXPIRED) and which items fell due
(OVERDUE), and tells its own subscribers. It mutates nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta

from server.domain.review import live
from server.events.channels import Event, EventKind
from server.events.hub import Hub
from server.events.outage import OutageLog, Retrying
from server.store.database import Database

log = logging.getLogger("casework.events.expiry")

# Hints after which the next deadline may be sooner than the one waited for: a new or longer
# lease, a new item with a due time, a hold or its end (which move a due time), an item
# escalated into a queue (with a due time of that queue), a bulk action (which holds, releases
# and moves items).
DEADLINE_EVENTS = frozenset(
    {
        EventKind.CLAIMED,
        EventKind.RENEWED,
        EventKind.ENQUEUED,
        EventKind.HELD,
        EventKind.RESUMED,
        EventKind.ESCALATED,
        EventKind.BULK,
    }
)
RETRY_SECONDS = 1.0


def _now() -> datetime:
    return datetime.now(UTC)


class LeaseExpiryTimer:
    def __init__(self, db: Database, hub: Hub) -> None:
        self._db = db
        self._hub = hub
        self._changed = asyncio.Event()
        self._deadline: datetime | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="casework-lease-expiry")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def notice(self, event: Event) -> None:
        """A new or longer lease, a new due time, or new watchers: the next deadline may
        have moved."""
        if event.kind in DEADLINE_EVENTS and event.queue in self._hub.watched_queues():
            self._changed.set()

    def watchers_changed(self) -> None:
        self._changed.set()

    @staticmethod
    async def _failed(retrying: Retrying, error: Exception) -> None:
        if retrying.failed(error):
            await asyncio.sleep(retrying.delay())
            return
        log.error("lease expiry: query failed; retrying", exc_info=error)
        await asyncio.sleep(RETRY_SECONDS)

    async def _run(self) -> None:
        retrying = Retrying(OutageLog(log, "lease expiry"))
        checked_until = _now()
        while True:
            queues = sorted(self._hub.watched_queues())
            try:
                next_deadline = (
                    (await live.next_deadlines(self._db, queues, checked_until)).earliest
                    if queues
                    else None
                )
            except Exception as error:
                await self._failed(retrying, error)
                continue
            retrying.succeeded()
            timeout = None
            if next_deadline is not None:
                timeout = max(0.0, (next_deadline - _now()).total_seconds())
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
                # A claim or renewal can only add later expiries, unless a queue has a
                # shorter TTL than the one we wait for (or an item's due time comes
                # sooner): recompute, but never postpone.
                if next_deadline is None or next_deadline > _now() + timedelta(milliseconds=5):
                    continue
            until = _now()
            try:
                expired = await live.leases_expired_between(self._db, queues, checked_until, until)
                due = await live.items_due_between(self._db, queues, checked_until, until)
            except Exception as error:
                await self._failed(retrying, error)
                continue
            retrying.succeeded()
            for kind, passed in ((EventKind.EXPIRED, expired), (EventKind.OVERDUE, due)):
                for deadline in passed:
                    self._hub.dispatch(
                        Event(
                            kind,
                            deadline.queue,
                            deadline.item_id,
                            owner=deadline.owner,
                            passed_at=deadline.passed_at,
                        )
                    )
            checked_until = until
