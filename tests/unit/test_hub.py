"""Fan-out rules that need no database: routing, bounds, coalescing, resync."""

from __future__ import annotations

import asyncio
import contextlib
from typing import cast

import pytest

from server.events.channels import Event, EventKind, parse_event
from server.events.hub import Hub
from server.events.subscriber import Inbox, LatestValue, Resync
from server.store import sql
from server.store.database import Database
from server.store.queries import Query


@pytest.fixture
def hub() -> Hub:
    # Routing never touches the database; only backlog feeds do.
    return Hub(db=Database.__new__(Database))


def everything(event: Event) -> bool:
    return True


async def test_events_reach_the_queue_and_item_subscribers_only(hub: Hub) -> None:
    kyc, payouts, item_7 = Inbox(everything), Inbox(everything), Inbox(everything)
    with (
        hub.subscribe(queues=("kyc",), inbox=kyc),
        hub.subscribe(queues=("payouts",), inbox=payouts),
        hub.subscribe(items=(7,), inbox=item_7),
    ):
        claimed = Event(EventKind.CLAIMED, "kyc", item_id=7)
        hub.dispatch(claimed)
        hub.dispatch(Event(EventKind.CLAIMED, "kyc", item_id=8))
        assert (kyc.pending(), payouts.pending(), item_7.pending()) == (2, 0, 1)
        assert await item_7.next() == claimed
    assert hub.subscriber_count() == 0


async def test_an_escalation_reaches_both_queues(hub: Hub) -> None:
    left, joined = Inbox(everything), Inbox(everything)
    with (
        hub.subscribe(queues=("kyc",), inbox=left),
        hub.subscribe(queues=("senior",), inbox=joined),
    ):
        hub.dispatch(Event(EventKind.ESCALATED, "senior", item_id=1, from_queue="kyc"))
        assert (left.pending(), joined.pending()) == (1, 1)


async def test_a_subscriber_that_stops_reading_is_bounded_and_told_to_resync(hub: Hub) -> None:
    stuck, reader = Inbox(everything, limit=10), Inbox(everything, limit=10)
    with hub.subscribe(queues=("kyc",), inbox=stuck), hub.subscribe(queues=("kyc",), inbox=reader):
        for n in range(1, 1001):
            hub.dispatch(Event(EventKind.CLAIMED, "kyc", item_id=n))
            assert await reader.next() == Event(EventKind.CLAIMED, "kyc", item_id=n)
        assert stuck.pending() <= 10
        assert stuck.overflows > 0
        messages = [await stuck.next() for _ in range(stuck.pending())]
        assert Resync("subscriber fell behind") in messages


async def test_resync_reaches_every_subscriber(hub: Hub) -> None:
    inboxes = [Inbox(everything) for _ in range(3)]
    with (
        hub.subscribe(queues=("a",), inbox=inboxes[0]),
        hub.subscribe(queues=("b",), inbox=inboxes[1]),
        hub.subscribe(items=(1,), inbox=inboxes[2]),
    ):
        hub.resync_all("the event stream reconnected")
        for inbox in inboxes:
            assert await inbox.next() == Resync("the event stream reconnected")


async def test_a_cut_short_evidence_list_reaches_every_item_watcher(hub: Hub) -> None:
    watcher = Inbox(everything)
    with hub.subscribe(items=(500,), inbox=watcher):
        hub.dispatch(Event(EventKind.ENQUEUED, "kyc", evidence_changed=(1, 2), more=True))
        assert watcher.pending() == 1


async def test_latest_value_keeps_only_the_newest() -> None:
    figures: LatestValue[int] = LatestValue()
    for n in range(100):
        figures.set(n)
    assert await figures.next() == 99


@pytest.mark.parametrize(
    "payload",
    ["not json", '{"k": "claimed"}', '{"k": "dropped", "q": "kyc"}', "x" * 9000, "[1]"],
)
def test_unreadable_payloads_are_refused(payload: str) -> None:
    assert parse_event(payload) is None


class HeldBacklogRead:
    """Stands in for the database: answers queues_get_backlog with the figure of the moment,
    and holds the first read (a subscriber's snapshot) until told to go on."""

    def __init__(self, pending: int) -> None:
        self.pending = pending
        self.snapshot_read = asyncio.Event()
        self.go_on = asyncio.Event()
        self._first = True

    async def fetch(self, query: Query[...], queues: list[str]) -> list[dict[str, object]]:
        assert query is sql.queues.QUEUES_GET_BACKLOG
        figure = self.pending
        if self._first:
            self._first = False
            self.snapshot_read.set()
            await self.go_on.wait()
        return [
            {
                "queue": queue,
                "pending": figure,
                "leased": 0,
                "oldest_pending_age_seconds": None,
                "held": 0,
                "assigned": 0,
                "overdue": 0,
            }
            for queue in queues
        ]


async def test_a_change_committed_while_the_snapshot_is_read_still_arrives() -> None:
    db = HeldBacklogRead(pending=5)
    hub = Hub(db=cast(Database, db))
    async with contextlib.AsyncExitStack() as stack:
        joining = asyncio.create_task(stack.enter_async_context(hub.watch_backlog("kyc")))
        await db.snapshot_read.wait()
        # A claim commits after the snapshot was read, and its notification arrives before
        # the snapshot reaches the subscriber.
        db.pending = 4
        hub.dispatch(Event(EventKind.CLAIMED, "kyc", item_id=1))
        db.go_on.set()
        figures = await joining
        seen = [(await asyncio.wait_for(figures.next(), 2)).backlog.pending]
        while seen[-1] != 4:
            # Without the fix the figure stays 5 until some later change: a silent stale.
            seen.append((await asyncio.wait_for(figures.next(), 2)).backlog.pending)
    await hub.close()


async def test_a_bulk_hint_reaches_its_queues_and_each_item_it_names(hub: Hub) -> None:
    kyc, senior, item_7, item_9 = (Inbox(everything) for _ in range(4))
    with (
        hub.subscribe(queues=("kyc",), inbox=kyc),
        hub.subscribe(queues=("senior",), inbox=senior),
        hub.subscribe(items=(7,), inbox=item_7),
        hub.subscribe(items=(9,), inbox=item_9),
    ):
        event = parse_event('{"k": "bulk", "q": "kyc", "qs": ["senior"], "is": [7, 8]}')
        assert event is not None
        hub.dispatch(event)
        assert (kyc.pending(), senior.pending(), item_7.pending(), item_9.pending()) == (
            1,
            1,
            1,
            0,
        )
