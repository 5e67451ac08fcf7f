"""Notifications end to end, in-process: rules produce rows in the transaction of the change
(or the sweep), the apply worker sends them to a real local HTTP receiver, once per rule and
occurrence, within each channel's rate, as digests where asked, and the item's timeline
shows them. Every kind in CHANNEL_KINDS takes the same path."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime

import asyncpg
import pytest

from server.domain.exceptions.overdue import escalate_overdue_exceptions
from server.domain.integrations import notification_deliveries
from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.domain.integrations.sweeps import sweep_time_events
from server.domain.model import Verdict
from server.domain.timeline.events import PageKey, TimelineKind, events_pages
from server.observability.notification_metrics import NOTIFICATIONS
from server.store.database import Database
from tests.apply.helpers import wait_until
from tests.apply.receiver import Reply, always, webhook_receiver
from tests.conftest import reviewer
from tests.integration.helpers import claim, decide, enqueue_one
from tests.integrations.events_support import (
    OWNER_QUEUE,
    WORKFLOW,
    correct,
    raise_one,
    supplier_workflow,
)
from tests.notifications.notify_support import (
    CHANNEL_KINDS,
    PUBLIC_URL,
    SECRET,
    SWEEP,
    channel,
    linked_items,
    make_overdue,
    minute_passes,
    rows,
    rule,
    sending,
    sink,
    start_overdue_sweep,
)

RITA = reviewer("rita-reviewer", "kyc")


@pytest.mark.parametrize("kind", CHANNEL_KINDS, ids=str)
async def test_each_rule_fires_once_and_the_timeline_shows_it(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, kind: ChannelKind
) -> None:
    async with sink(kind) as received:
        made = await channel(db, received.target, kind=kind)
        await rule(db, made.id, NotificationEvent.ESCALATED, name="escalations")
        await rule(db, made.id, NotificationEvent.ESCALATED, name="escalations-too")
        # A rule of another event and one of another queue hear nothing of it.
        await rule(db, made.id, NotificationEvent.APPLICATION_FAILED, name="failures")
        await rule(db, made.id, NotificationEvent.ESCALATED, name="senior", queues=["kyc-senior"])

        item = await enqueue_one(db, "kyc", "app-1")
        await decide(db, RITA, await claim(db, RITA), Verdict.ESCALATE, "needs_senior")
        written = await rows(owner_conn)
        assert len(written) == 2
        assert {r["item_id"] for r in written} == {item.id}

        async with sending(db, mail=received.mail):
            await wait_until(
                lambda: _all_sent(owner_conn, 2), within=10, what="both notifications sent"
            )
        assert received.linked_items() == [item.id, item.id]
        assert len(received.bodies()) == 2

    pages = await events_pages(db, [PageKey(item.id, None, 50)])
    notified = [e for e in pages[PageKey(item.id, None, 50)] if e.kind is TimelineKind.NOTIFIED]
    assert sorted(e.notification_rule or "" for e in notified) == ["escalations", "escalations-too"]
    assert {e.notification_state for e in notified} == {"sent"}
    assert all(e.notification_sent_at is not None for e in notified)
    assert {e.notification_channel for e in notified} == {"risk-team"}


async def _all_sent(owner: asyncpg.Connection, count: int) -> bool:
    found = await rows(owner)
    return len(found) == count and all(r["state"] == "sent" for r in found)


async def test_an_occurrence_is_written_once_however_often_it_is_found(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    sink = await channel(db, "https://hooks.example.com/services/T0/B0/secret-token")
    await rule(db, sink.id, NotificationEvent.OVERDUE)
    await start_overdue_sweep(db, owner_conn)
    items = [(await enqueue_one(db, "kyc", f"app-{n}")).id for n in range(3)]
    await make_overdue(owner_conn, items)

    first = await sweep_time_events(db, SWEEP)
    await owner_conn.execute(
        "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
    )
    again = await sweep_time_events(db, SWEEP)

    assert (first.overdue_written, again.overdue_written) == (3, 0)
    assert sorted(r["item_id"] for r in await rows(owner_conn)) == sorted(items)


async def test_two_workers_racing_send_each_notification_once(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        sink = await channel(db, receiver.url, rate_per_minute=600)
        await rule(db, sink.id, NotificationEvent.OVERDUE)
        await start_overdue_sweep(db, owner_conn)
        items = [(await enqueue_one(db, "kyc", f"app-{n}")).id for n in range(40)]
        await make_overdue(owner_conn, items)

        async with sending(db, "one"), sending(db, "two"):
            await wait_until(
                lambda: _all_sent(owner_conn, 40), within=20, what="40 notifications sent"
            )
    assert Counter(linked_items(receiver)) == Counter(items)


async def test_the_rate_limit_holds_and_the_rest_wait(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        sink = await channel(db, receiver.url, rate_per_minute=3)
        await rule(db, sink.id, NotificationEvent.OVERDUE)
        await start_overdue_sweep(db, owner_conn)
        items = [(await enqueue_one(db, "kyc", f"app-{n}")).id for n in range(5)]
        await make_overdue(owner_conn, items)
        await sweep_time_events(db, SWEEP)

        async with sending(db):
            await wait_until(lambda: _count(owner_conn, "sent", 3), within=10, what="three sent")
            # The minute's allowance is spent: a claim takes nothing more now.
            assert (
                await notification_deliveries.claim_due(
                    db, 10, lock_seconds=60, now=await _now(owner_conn)
                )
                == []
            )
            assert await _count(owner_conn, "pending", 2)
            await minute_passes(owner_conn)
            await wait_until(lambda: _count(owner_conn, "sent", 5), within=10, what="the rest")
    assert sorted(linked_items(receiver)) == sorted(items)
    assert len(receiver.requests) == 5


async def test_a_digest_lists_what_waits_in_one_message_per_period(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        sink = await channel(db, receiver.url, digest_minutes=5)
        await rule(db, sink.id, NotificationEvent.OVERDUE)
        await start_overdue_sweep(db, owner_conn)
        first = [(await enqueue_one(db, "kyc", f"app-{n}")).id for n in range(4)]
        await make_overdue(owner_conn, first)
        await sweep_time_events(db, SWEEP)

        async with sending(db):
            await wait_until(lambda: _count(owner_conn, "sent", 4), within=10, what="a digest")
        assert len(receiver.requests) == 1
        assert sorted(linked_items(receiver)) == sorted(first)
        assert len({r["sent_at"] for r in await rows(owner_conn)}) == 1

        later = [(await enqueue_one(db, "kyc", f"late-{n}")).id for n in range(2)]
        await make_overdue(owner_conn, later)
        await owner_conn.execute(
            "UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'"
        )
        await sweep_time_events(db, SWEEP)
        # Within the period: nothing goes out.
        now = await _now(owner_conn)
        assert await notification_deliveries.claim_due(db, 10, lock_seconds=60, now=now) == []

        await minute_passes(owner_conn, 5)
        async with sending(db):
            await wait_until(lambda: _count(owner_conn, "sent", 6), within=10, what="the next")
        assert len(receiver.requests) == 2
        assert sorted(linked_items(receiver)[4:]) == sorted(later)


async def test_a_channel_that_refuses_fails_the_notification_for_good(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    async with webhook_receiver(SECRET, always(Reply(400, body=b"no"))) as receiver:
        sink = await channel(db, receiver.url)
        await rule(db, sink.id, NotificationEvent.OVERDUE)
        await start_overdue_sweep(db, owner_conn)
        item = await enqueue_one(db, "kyc", "app-1")
        await make_overdue(owner_conn, [item.id])
        await sweep_time_events(db, SWEEP)
        async with sending(db):
            await wait_until(lambda: _count(owner_conn, "failed", 1), within=10, what="failed")
    (row,) = await rows(owner_conn)
    assert row["attempts"] == 1
    assert "HTTP 400" in row["last_error"]


async def test_unclaimed_items_are_told_once_per_wait(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    sink = await channel(db, "https://hooks.example.com/services/T0/B0/secret-token")
    told = await rule(db, sink.id, NotificationEvent.UNCLAIMED, unclaimed_after_seconds=600)
    waiting = await enqueue_one(db, "kyc", "app-1")
    fresh = await enqueue_one(db, "kyc", "app-2")
    await owner_conn.execute(
        "UPDATE review_items SET created_at = now() - interval '11 minutes' WHERE id = $1",
        waiting.id,
    )

    written = await asyncio.gather(
        notification_deliveries.sweep_unclaimed(db, 200),
        notification_deliveries.sweep_unclaimed(db, 200),
    )
    assert sorted(w or 0 for w in written) == [0, 1]
    assert await notification_deliveries.sweep_unclaimed(db, 200) == 0
    (row,) = await rows(owner_conn)
    assert (row["item_id"], str(row["rule_id"])) == (waiting.id, told.id)
    assert fresh.id != waiting.id


async def _count(owner: asyncpg.Connection, state: str, count: int) -> bool:
    found = await owner.fetchval(
        "SELECT count(*) FROM notification_deliveries WHERE state = $1", state
    )
    return bool(found == count)


async def _now(owner: asyncpg.Connection) -> datetime:
    now: datetime = await owner.fetchval("SELECT now()")
    return now


async def test_a_correction_waiting_for_approval_is_told_with_the_exceptions_link(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    await supplier_workflow(db)
    async with webhook_receiver(SECRET) as receiver:
        sink = await channel(db, receiver.url)
        await rule(db, sink.id, NotificationEvent.NEEDS_APPROVAL, workflows=[WORKFLOW])
        raised = await raise_one(db, "SUP-1042")
        assert await rows(owner_conn) == []
        await correct(db, raised.exception.id)
        (row,) = await rows(owner_conn)
        assert row["item_id"] == raised.exception.item_id

        sent_before = NOTIFICATIONS.labels("sent")._value.get()
        async with sending(db):
            await wait_until(lambda: _count(owner_conn, "sent", 1), within=10, what="sent")
        assert NOTIFICATIONS.labels("sent")._value.get() - sent_before == 1
    (request,) = receiver.requests
    assert f"{PUBLIC_URL}/console/#/exceptions/{raised.exception.id}" in request.body.decode()


async def test_an_exception_past_its_due_time_is_told_when_it_moves_to_its_escalation_owner(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    await supplier_workflow(db)
    sink = await channel(db, "https://hooks.example.com/services/T0/B0/secret-token")
    await rule(db, sink.id, NotificationEvent.OVERDUE, workflows=[WORKFLOW])
    raised = await raise_one(db, "SUP-1042")
    await owner_conn.execute(
        "UPDATE exceptions SET due_at = now() - interval '1 minute' WHERE id = $1",
        raised.exception.id,
    )

    assert await escalate_overdue_exceptions(db, OWNER_QUEUE) == 1
    assert await escalate_overdue_exceptions(db, OWNER_QUEUE) == 0

    (row,) = await rows(owner_conn)
    assert row["item_id"] == raised.exception.item_id
    event = await owner_conn.fetchrow("SELECT * FROM outbox_events WHERE id = $1", row["event_id"])
    assert event is not None
    assert (event["event_type"], event["exception_id"]) == (
        "exception.overdue",
        raised.exception.id,
    )
