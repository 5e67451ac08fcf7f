"""A notification survives a restart of a real `casework serve` between due and sent: the
row is written in the change's transaction, the serving process (which runs the apply
worker) is SIGKILLed before it sends, and the next process sends it, once."""

from __future__ import annotations

import asyncpg
import pytest

from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.domain.model import Verdict
from server.store.database import Database
from tests.api.live_server import casework_serve_process
from tests.apply.helpers import wait_until, worker_env
from tests.conftest import TestDatabase, reviewer
from tests.integration.helpers import claim, decide, enqueue_one
from tests.notifications.notify_support import (
    PUBLIC_URL,
    channel,
    minute_passes,
    rows,
    rule,
    sink,
)

RITA = reviewer("rita-reviewer", "kyc")


async def _state_of(owner: asyncpg.Connection, item_id: int) -> str | None:
    state: str | None = await owner.fetchval(
        "SELECT state FROM notification_deliveries WHERE item_id = $1", item_id
    )
    return state


@pytest.mark.parametrize("kind", [ChannelKind.SLACK, ChannelKind.EMAIL], ids=str)
async def test_a_notification_due_before_a_kill_is_sent_once_after_the_restart(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    test_database: TestDatabase,
    kind: ChannelKind,
) -> None:
    async with sink(kind) as received:
        env = worker_env(test_database, CASEWORK_PUBLIC_URL=PUBLIC_URL, **received.env)
        # One message a minute: the second notification cannot go out before the kill.
        made = await channel(db, received.target, kind=kind, rate_per_minute=1)
        await rule(db, made.id, NotificationEvent.ESCALATED)

        async with casework_serve_process(env) as served:
            first = await enqueue_one(db, "kyc", "app-1")
            await decide(db, RITA, await claim(db, RITA), Verdict.ESCALATE, "needs_senior")
            await wait_until(
                lambda: _is_sent(owner_conn, first.id), within=20, what="the first sent"
            )
            second = await enqueue_one(db, "kyc", "app-2")
            await decide(db, RITA, await claim(db, RITA), Verdict.ESCALATE, "needs_senior")
            assert await _state_of(owner_conn, second.id) == "pending"
            served.process.kill()
            await served.process.wait()

        (due,) = [r for r in await rows(owner_conn) if r["item_id"] == second.id]
        assert (due["state"], due["attempts"], due["sent_at"]) == ("pending", 0, None)
        assert received.linked_items() == [first.id]

        await minute_passes(owner_conn)
        async with casework_serve_process(env):
            await wait_until(
                lambda: _is_sent(owner_conn, second.id), within=20, what="the second sent"
            )
        assert received.linked_items() == [first.id, second.id]


async def _is_sent(owner: asyncpg.Connection, item_id: int) -> bool:
    return await _state_of(owner, item_id) == "sent"
