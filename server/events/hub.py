"""Fan-out inside one process: from the transport to per-subscriber inboxes and feeds.

Dispatch never waits on a subscriber. Inboxes are bounded and backlog figures coalesce
into one latest value per watcher, so memory stays fixed whatever a consumer does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TypeVar

from server.domain.review import live
from server.events.channels import Event
from server.events.outage import OutageLog, Retrying
from server.events.subscriber import Inbox, LatestValue, Resync
from server.store.database import Database

log = logging.getLogger("casework.events")

# A backlog figure goes out at most this often per queue; changes in between coalesce.
BACKLOG_INTERVAL_SECONDS = 0.25
RETRY_SECONDS = 1.0
# Every feed of the process shares one: an outage is one line, not one per watched queue.
BACKLOG_OUTAGE = OutageLog(log, "backlog feeds")

K = TypeVar("K")


@dataclass(frozen=True)
class BacklogUpdate:
    backlog: live.Backlog
    resync: bool


class BacklogFeed:
    """Recomputes one queue's figures when it changes and hands them to every watcher."""

    def __init__(self, db: Database, queue: str) -> None:
        self._db = db
        self._queue = queue
        self.watchers: set[LatestValue[BacklogUpdate]] = set()
        self._dirty = asyncio.Event()
        self._resync = False
        self._retrying = Retrying(BACKLOG_OUTAGE)
        self._task = asyncio.create_task(self._run(), name=f"backlog:{queue}")

    def mark_dirty(self, *, resync: bool = False) -> None:
        self._resync = self._resync or resync
        self._dirty.set()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._retrying.abandon()

    async def _run(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            resync, self._resync = self._resync, False
            try:
                backlog = await live.queue_backlog(self._db, self._queue)
            except Exception as error:
                self.mark_dirty(resync=True)
                if self._retrying.failed(error):
                    await asyncio.sleep(self._retrying.delay())
                    continue
                log.error("backlog of %s: query failed; retrying", self._queue, exc_info=error)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            self._retrying.succeeded()
            update = BacklogUpdate(backlog, resync)
            for watcher in self.watchers:
                watcher.set(update)
            await asyncio.sleep(BACKLOG_INTERVAL_SECONDS)


class Hub:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._by_queue: dict[str, set[Inbox]] = defaultdict(set)
        self._by_item: dict[int, set[Inbox]] = defaultdict(set)
        self._by_workflow: dict[str, set[Inbox]] = defaultdict(set)
        self._feeds: dict[str, BacklogFeed] = {}
        self.dispatched = 0
        # Times a subscriber fell so far behind that its inbox was dropped for a Resync.
        self.overflows = 0

    @contextlib.contextmanager
    def subscribe(
        self,
        *,
        queues: tuple[str, ...] = (),
        items: tuple[int, ...] = (),
        workflows: tuple[str, ...] = (),
        inbox: Inbox,
    ) -> Iterator[Inbox]:
        for queue in queues:
            self._by_queue[queue].add(inbox)
        for item in items:
            self._by_item[item].add(inbox)
        for workflow in workflows:
            self._by_workflow[workflow].add(inbox)
        try:
            yield inbox
        finally:
            for queue in queues:
                _discard(self._by_queue, queue, inbox)
            for item in items:
                _discard(self._by_item, item, inbox)
            for workflow in workflows:
                _discard(self._by_workflow, workflow, inbox)

    @contextlib.asynccontextmanager
    async def watch_backlog(self, queue: str) -> AsyncIterator[LatestValue[BacklogUpdate]]:
        watcher: LatestValue[BacklogUpdate] = LatestValue()
        feed = self._feeds.get(queue)
        if feed is None:
            feed = self._feeds[queue] = BacklogFeed(self._db, queue)
        # Join before reading, so a change committed after the snapshot's read reaches this
        # watcher too. A figure the feed delivered meanwhile is as new: keep it.
        feed.watchers.add(watcher)
        try:
            snapshot = await live.queue_backlog(self._db, queue)
            if not watcher.has_value():
                watcher.set(BacklogUpdate(snapshot, resync=False))
            yield watcher
        finally:
            feed.watchers.discard(watcher)
            if not feed.watchers and self._feeds.get(queue) is feed:
                del self._feeds[queue]
                await feed.close()

    def dispatch(self, event: Event) -> None:
        self.dispatched += 1
        targets: set[Inbox] = set()
        for queue in event.queues:
            targets |= self._by_queue.get(queue, set())
            if queue in self._feeds:
                self._feeds[queue].mark_dirty()
        for item in (event.item_id, *event.evidence_changed, *event.item_ids):
            if item is not None:
                targets |= self._by_item.get(item, set())
        for workflow in event.workflows:
            targets |= self._by_workflow.get(workflow, set())
        if event.more:
            # The id list was cut short: every item watcher may be concerned.
            for inboxes in self._by_item.values():
                targets |= inboxes
        for inbox in targets:
            self.overflows += inbox.offer(event)

    def resync_all(self, reason: str) -> None:
        everyone: set[Inbox] = set()
        for inboxes in (
            *self._by_queue.values(),
            *self._by_item.values(),
            *self._by_workflow.values(),
        ):
            everyone |= inboxes
        for inbox in everyone:
            self.overflows += inbox.offer(Resync(reason))
        for feed in self._feeds.values():
            feed.mark_dirty(resync=True)

    def watched_queues(self) -> set[str]:
        return set(self._by_queue) | set(self._feeds)

    def subscriber_count(self) -> int:
        """Subscriptions, not inboxes: a shared execution's inbox counts its audience."""
        inboxes: set[Inbox] = set()
        for group in (
            *self._by_queue.values(),
            *self._by_item.values(),
            *self._by_workflow.values(),
        ):
            inboxes |= group
        watchers = sum(w.audience for feed in self._feeds.values() for w in feed.watchers)
        return sum(inbox.audience for inbox in inboxes) + watchers

    async def close(self) -> None:
        for feed in list(self._feeds.values()):
            await feed.close()
        self._feeds.clear()


def _discard(index: dict[K, set[Inbox]], key: K, inbox: Inbox) -> None:
    group = index.get(key)
    if group is not None:
        group.discard(inbox)
        if not group:
            del index[key]
