"""Due times: given at enqueue by the queue (per priority) or by the enqueue itself; an item
past its due time is overdue, and a queue that names an overdue queue moves such items
there at claim time, priority raised, with no cron job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from server.domain.failures import InvalidInput, QueueEmpty
from server.domain.model import Claim, DueByPriority, EnqueuedItem, Item, Queue
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.domain.review.live import queue_backlog
from server.domain.review.queues import QueueSettings, configure_queue
from server.domain.timeline.events import TimelineKind
from server.events.channels import parse_event
from server.store.database import Database
from tests.conftest import ADMIN, INTEGRATION, reviewer
from tests.integration.helpers import (
    Listener,
    claim,
    enqueue_one,
    expire_lease,
    item_row,
    timeline_after_enqueue,
)

ALICE = reviewer("alice", "kyc", "kyc-senior")
HOUR = 3600


async def configure(db: Database, settings: QueueSettings) -> Queue:
    configured = await configure_queue(db, ADMIN, settings)
    assert isinstance(configured, Queue), configured
    return configured


async def enqueue(db: Database, *items: NewItem, queue: str = "kyc") -> list[Item]:
    result = await enqueue_items(db, INTEGRATION, queue, list(items))
    assert isinstance(result, list), result
    return [entry.item for entry in result if isinstance(entry, EnqueuedItem)]


def due_after(item: Item) -> float:
    assert item.due_at is not None
    return (item.due_at - item.created_at).total_seconds()


async def test_the_queue_gives_each_item_its_due_time_by_priority(
    db: Database, kyc_queue: str
) -> None:
    rules = (DueByPriority(10, 600), DueByPriority(50, 60))
    queue = await configure(
        db, QueueSettings(kyc_queue, due_seconds=HOUR, due_seconds_by_priority=rules)
    )
    assert queue.due_seconds_by_priority == rules

    low, middle, high, top = await enqueue(
        db,
        NewItem("low", {}, 0),
        NewItem("middle", {}, 10),
        NewItem("high", {}, 49),
        NewItem("top", {}, 60),
    )

    assert [due_after(i) for i in (low, middle, high, top)] == [HOUR, 600, 600, 60]


async def test_an_enqueue_may_set_its_own_due_time_and_a_known_key_keeps_its_own(
    db: Database, kyc_queue: str
) -> None:
    await configure(db, QueueSettings(kyc_queue, due_seconds=HOUR))
    own = datetime(2031, 5, 1, 12, tzinfo=UTC)

    [item] = await enqueue(db, NewItem("cust-1", {"v": 1}, due_at=own))
    [again] = await enqueue(db, NewItem("cust-1", {"v": 2}, due_at=own + timedelta(days=1)))

    assert item.due_at == own
    assert again.due_at == own


async def test_without_a_due_setting_items_are_never_due(db: Database, kyc_queue: str) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1")

    assert item.due_at is None
    assert item.overdue(datetime.now(UTC)) is False


async def test_a_due_time_without_a_zone_is_refused(db: Database, kyc_queue: str) -> None:
    refused = await enqueue_items(
        db, INTEGRATION, kyc_queue, [NewItem("cust-1", {}, due_at=datetime(2031, 1, 1))]
    )

    assert refused == InvalidInput(
        "items[0].dueAt must carry a time zone offset (or Z)", "items[0].dueAt"
    )


async def test_due_settings_are_checked_and_zero_clears_them(db: Database, kyc_queue: str) -> None:
    for settings in (
        QueueSettings(kyc_queue, due_seconds=-1),
        QueueSettings(kyc_queue, due_seconds=400 * 86400),
        QueueSettings(kyc_queue, due_seconds_by_priority=(DueByPriority(1, 0),)),
        QueueSettings(
            kyc_queue, due_seconds_by_priority=(DueByPriority(1, 60), DueByPriority(1, 90))
        ),
        QueueSettings(kyc_queue, overdue_queue=kyc_queue),
        QueueSettings(kyc_queue, overdue_queue="Not A Name"),
        QueueSettings(kyc_queue, max_leases_per_reviewer=1001),
    ):
        assert isinstance(await configure_queue(db, ADMIN, settings), InvalidInput), settings
    missing = await configure_queue(db, ADMIN, QueueSettings(kyc_queue, overdue_queue="nowhere"))
    assert missing == InvalidInput(
        "overdue queue 'nowhere' does not exist; configure it first", "overdueQueue"
    )

    await configure(
        db,
        QueueSettings(
            kyc_queue,
            due_seconds=HOUR,
            due_seconds_by_priority=(DueByPriority(5, 60),),
            overdue_queue="kyc-senior",
            max_leases_per_reviewer=3,
        ),
    )
    cleared = await configure(
        db,
        QueueSettings(
            kyc_queue,
            due_seconds=0,
            due_seconds_by_priority=(),
            overdue_queue="",
            max_leases_per_reviewer=0,
        ),
    )
    assert (
        cleared.due_seconds,
        cleared.due_seconds_by_priority,
        cleared.overdue_queue,
        cleared.max_leases_per_reviewer,
    ) == (None, (), None, None)


async def test_overdue_items_are_counted_and_flagged(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    past = datetime.now(UTC) - timedelta(minutes=5)
    late, _ = await enqueue(db, NewItem("late", {}, due_at=past), NewItem("fine", {}))
    await claim(db, ALICE)  # the late one, leased: still overdue

    assert late.overdue(datetime.now(UTC)) is True
    backlog = await queue_backlog(db, kyc_queue)
    assert (backlog.overdue, backlog.leased, backlog.pending) == (1, 1, 1)


@pytest.fixture
async def moving(db: Database, kyc_queue: str) -> str:
    """kyc moves overdue items to kyc-senior (boost 50), whose own due time is 30 min."""
    await configure(db, QueueSettings("kyc-senior", due_seconds=1800))
    await configure(
        db, QueueSettings(kyc_queue, overdue_queue="kyc-senior", overdue_priority_boost=50)
    )
    return kyc_queue


async def test_an_overdue_item_moves_at_claim_time_and_the_timeline_says_so(
    db: Database, moving: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    due = datetime.now(UTC) - timedelta(minutes=1)
    late, fine = await enqueue(
        db, NewItem("late", {}, priority=5, due_at=due), NewItem("fine", {}, priority=0)
    )
    taken: list[Claim] = []

    async def claim_in_kyc() -> None:
        taken.append(await claim(db, ALICE, moving))

    payloads = await listener.events_of(claim_in_kyc())

    # The claim moved the late item instead of handing it out, and took the other.
    [answer] = taken
    assert answer.item.id == fine.id
    row = await item_row(owner_conn, late.id)
    assert (row["queue"], row["priority"], row["escalation_count"]) == ("kyc-senior", 55, 1)
    # It takes the due time of the queue it joins.
    assert row["due_at"] > datetime.now(UTC) + timedelta(minutes=29)
    [escalated] = await timeline_after_enqueue(owner_conn, late.id)
    assert (escalated["kind"], escalated["queue"], escalated["actor"]) == (
        TimelineKind.ESCALATED,
        "kyc",
        "casework",
    )
    detail = escalated["detail"]
    assert (detail["from_queue"], detail["to_queue"], detail["cause"]) == (
        "kyc",
        "kyc-senior",
        "overdue",
    )
    assert datetime.fromisoformat(detail["due_at"]) == due
    events = [parse_event(p) for p in payloads]
    moved = [e for e in events if e is not None and e.kind == "escalated"]
    assert [(e.queue, e.from_queue) for e in moved] == [("kyc-senior", "kyc")]
    # Seniors find it at the top of their queue.
    assert (await claim(db, ALICE, "kyc-senior")).item.id == late.id


async def test_an_overdue_item_under_a_live_lease_stays_with_its_holder(
    db: Database, moving: str, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue(db, NewItem("cust-1", {}, due_at=datetime.now(UTC) + timedelta(hours=1)))
    held = await claim(db, ALICE)
    await owner_conn.execute(
        "UPDATE review_items SET due_at = now() - interval '1 minute' WHERE id = $1", item.id
    )

    assert await claim_next(db, reviewer("bob"), moving) == QueueEmpty(moving)
    assert (await item_row(owner_conn, item.id))["queue"] == "kyc"
    # Once the lease lapses, the next claim moves it, and records the lapse too.
    await expire_lease(owner_conn, held.item.id)
    assert await claim_next(db, reviewer("bob"), moving) == QueueEmpty(moving)
    assert (await item_row(owner_conn, item.id))["queue"] == "kyc-senior"
    kinds = [(e["kind"], e["actor"]) for e in await timeline_after_enqueue(owner_conn, item.id)]
    assert kinds == [(TimelineKind.LAPSED, "alice"), (TimelineKind.ESCALATED, "casework")]


async def test_a_queue_without_an_overdue_queue_hands_overdue_items_out(
    db: Database, kyc_queue: str
) -> None:
    [late] = await enqueue(db, NewItem("late", {}, due_at=datetime.now(UTC) - timedelta(days=1)))

    assert (await claim(db, ALICE)).item.id == late.id
