"""The time-based events: item.overdue and lease.lapsed, found by the apply worker's sweep
(bounded, idempotent) or written by the claim or move that notices them first, once either
way."""

from __future__ import annotations

import asyncio
import functools
from datetime import timedelta

import asyncpg

from server.domain.integrations.sweeps import SweepSettings, sweep_time_events
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings
from server.store.database import Database
from server.store.queries import Queries
from server.worker import ApplyWorker, WorkerSettings
from tests.conftest import INTEGRATION, TestDatabase, reviewer
from tests.exceptions.domain_drivers import all_at_once, own_connections
from tests.integration.helpers import claim, enqueue_one
from tests.integrations.events_support import (
    REVIEW_TYPES,
    configure,
    expire_lease,
    only_event,
    outbox,
    past,
    subscribe,
    sweep,
    types_written,
    wait_until,
)

ALICE = reviewer("alice", "kyc", "kyc-senior")
BOB = reviewer("bob", "kyc", "kyc-senior")


async def overdue_items(db: Database, *keys: str, minutes_ago: float = 1) -> list[int]:
    result = await enqueue_items(
        db,
        INTEGRATION,
        "kyc",
        [NewItem(key, {}, due_at=past(minutes_ago + n / 1000)) for n, key in enumerate(keys)],
    )
    assert isinstance(result, list), result
    return [entry.item.id for entry in result]


async def test_a_sweep_with_nobody_subscribed_reads_and_writes_nothing(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await subscribe(owner_conn, ["decision.effective"], queues=["kyc"])
    await overdue_items(db, "late")

    result = await sweep_time_events(db, SweepSettings())

    assert not result.swept
    assert await owner_conn.fetchval("SELECT count(*) FROM outbox_sweep_marks") == 0
    assert await outbox(owner_conn) == []


async def test_overdue_items_are_written_once_and_a_new_endpoint_gets_no_history(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    # Overdue before anyone subscribed: not this endpoint's news.
    await overdue_items(db, "long-late", minutes_ago=10)
    await subscribe(owner_conn, ["item.overdue"], queues=["kyc"])
    assert (await sweep(db)).overdue_found == 0

    # Due a moment after the subscription: overdue now.
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '5 minutes'"
    )
    [late] = await overdue_items(db, "late", minutes_ago=1)

    first = await sweep(db)
    again = await sweep(db)

    assert (first.overdue_found, first.overdue_written) == (1, 1)
    assert (again.overdue_found, again.overdue_written) == (0, 0)
    event = await only_event(owner_conn, "item.overdue")
    due_at = await owner_conn.fetchval("SELECT due_at FROM review_items WHERE id = $1", late)
    assert event.item_id == late
    assert event.data == {
        "itemId": str(late),
        "externalKey": "late",
        "queue": "kyc",
        "dueAt": due_at.isoformat(timespec="microseconds"),
    }


async def test_the_sweep_is_bounded_and_resumes_where_it_stopped(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await subscribe(owner_conn, ["item.overdue"], queues=["kyc"])
    await sweep(db)  # the queue's mark: now
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
    )
    ids = await overdue_items(db, "a", "b", "c", "d", "e")
    small = SweepSettings(batch_size=2)

    rounds = [await sweep(db, small) for _ in range(4)]

    assert [r.overdue_found for r in rounds] == [2, 2, 1, 0]
    assert sorted(event["item_id"] for event in await outbox(owner_conn)) == sorted(ids)


async def test_concurrent_sweeps_write_each_occurrence_once(
    test_database: TestDatabase,
    queries: Queries,
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
) -> None:
    await subscribe(owner_conn, ["item.overdue"], queues=["kyc"])
    await sweep(db)
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
    )
    ids = await overdue_items(db, *(f"late-{n}" for n in range(20)))

    async with own_connections(test_database, queries, 4) as sweepers:
        results = await all_at_once(
            [functools.partial(sweep_time_events, s, SweepSettings()) for s in sweepers]
        )

    assert sum(r.overdue_written for r in results) == 20
    assert sorted(event["item_id"] for event in await outbox(owner_conn)) == sorted(ids)


async def test_the_overdue_move_writes_overdue_then_escalated_and_the_sweep_adds_nothing(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await configure(db, QueueSettings("kyc-senior", due_seconds=1800))
    await configure(db, QueueSettings("kyc", overdue_queue="kyc-senior"))
    await subscribe(owner_conn, REVIEW_TYPES, queues=["kyc"])
    await sweep(db)
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
    )
    [late] = await overdue_items(db, "late")
    await enqueue_one(db, "kyc", "fine")

    await claim(db, ALICE)  # moves the late item, takes the other

    assert await types_written(owner_conn) == ["item.overdue", "item.escalated"]
    escalated = await only_event(owner_conn, "item.escalated")
    assert (escalated.item_id, escalated.queue) == (late, "kyc")
    assert {k: escalated.data[k] for k in ("fromQueue", "toQueue", "cause", "actor")} == {
        "fromQueue": "kyc",
        "toQueue": "kyc-senior",
        "cause": "overdue",
        "actor": "casework",
    }
    assert (await sweep(db)).overdue_written == 0
    assert len(await outbox(owner_conn)) == 2


async def test_a_lapsed_lease_is_written_once_by_the_sweep_or_the_claim_that_notices_it(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await subscribe(owner_conn, ["lease.lapsed"], queues=["kyc"])
    await sweep(db)
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
    )
    first = await enqueue_one(db, "kyc", "first")
    await claim(db, ALICE)
    started = await owner_conn.fetchval(
        "SELECT lease_started_at FROM review_items WHERE id = $1", first.id
    )
    await expire_lease(owner_conn, first.id, timedelta(seconds=5))

    # The sweep finds it; the claim that takes the item over notices it too: one event.
    assert (await sweep(db)).lapsed_written == 1
    await claim(db, BOB)
    event = await only_event(owner_conn, "lease.lapsed")
    assert event.data["leaseOwner"] == "alice"
    assert event.data["itemId"] == str(first.id)
    assert event.data["leaseStartedAt"] == started.isoformat(timespec="microseconds")

    # The other way round: a claim notices first, the sweep adds nothing.
    second = await enqueue_one(db, "kyc", "second")
    assert (await claim(db, ALICE)).item.id == second.id  # bob holds the first
    await expire_lease(owner_conn, second.id, timedelta(seconds=5))
    await claim(db, BOB)
    assert (await sweep(db)).lapsed_written == 0
    assert await types_written(owner_conn) == ["lease.lapsed", "lease.lapsed"]


async def test_the_apply_worker_runs_the_sweep(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await subscribe(owner_conn, ["lease.lapsed"], queues=["kyc"])
    await sweep(db)
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
    )
    item = await enqueue_one(db, "kyc", "held")
    await claim(db, ALICE)
    await expire_lease(owner_conn, item.id, timedelta(seconds=5))

    worker = ApplyWorker(
        db,
        WorkerSettings(poll_seconds=0.05),
        time_events=SweepSettings(interval_seconds=0.05),
    )
    running = asyncio.create_task(worker.run())
    try:
        await wait_until(
            lambda: outbox(owner_conn), within=10, what="the worker's sweep wrote lease.lapsed"
        )
    finally:
        worker.stop()
        await running
    assert await types_written(owner_conn) == ["lease.lapsed"]


async def test_sweeps_and_claims_noticing_the_same_lapses_write_each_once(
    test_database: TestDatabase,
    queries: Queries,
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
) -> None:
    await subscribe(owner_conn, ["lease.lapsed"], queues=["kyc"])
    await sweep(db)
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
    )
    holders = [reviewer(f"holder-{n}", "kyc") for n in range(8)]
    takers = [reviewer(f"taker-{n}", "kyc") for n in range(4)]
    for n, holder in enumerate(holders):
        await enqueue_one(db, "kyc", f"held-{n}")
        await claim(db, holder)
    await owner_conn.execute(
        "UPDATE review_items SET lease_expires_at = now() - interval '5 seconds'"
        " WHERE lease_token IS NOT NULL"
    )
    tokens = {
        str(row["lease_token"])
        for row in await owner_conn.fetch(
            "SELECT lease_token FROM review_items WHERE lease_token IS NOT NULL"
        )
    }

    async with own_connections(test_database, queries, 8) as conns:
        await all_at_once(
            [functools.partial(sweep_time_events, c, SweepSettings()) for c in conns[:4]]
            + [
                functools.partial(claim_next, c, taker, "kyc")
                for c, taker in zip(conns[4:], takers, strict=True)
            ]
        )
    # What a concurrent sweep skipped (an item a claim held), the next round writes.
    await sweep(db)

    keys = [row["dedupe_key"] for row in await outbox(owner_conn)]
    assert sorted(keys) == sorted(f"lease.lapsed:{token}" for token in tokens)


async def test_an_item_abandoned_too_often_is_escalated_by_the_claim_that_moves_it(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    # kyc: three lapsed leases and the next claim moves the item to kyc-senior.
    await subscribe(owner_conn, ["lease.lapsed", "item.escalated"], queues=["kyc"])
    item = await enqueue_one(db, "kyc", "abandoned")
    for holder in (ALICE, BOB, ALICE):
        await claim(db, holder)
        await expire_lease(owner_conn, item.id, timedelta(seconds=5))
    moved = await claim_next(db, BOB, "kyc")

    assert not hasattr(moved, "item"), moved  # nothing else to claim: the item moved on
    # The claim that moves it writes the third lapse and the escalation in one statement
    # (their timeline rows escalation first): the events keep the order they happened in.
    assert await types_written(owner_conn) == [
        "lease.lapsed",
        "lease.lapsed",
        "lease.lapsed",
        "item.escalated",
    ]
    escalated = await only_event(owner_conn, "item.escalated")
    assert {k: escalated.data[k] for k in ("fromQueue", "toQueue", "cause", "actor")} == {
        "fromQueue": "kyc",
        "toQueue": "kyc-senior",
        "cause": "abandoned",
        "actor": "bob",
    }
    assert (escalated.data["decisionId"], escalated.data["reasonCode"]) == (None, None)
