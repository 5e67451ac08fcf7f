"""No personal field reaches a channel: notices are built from the events' data and the
rules, never from an item's payload. An item of a queue with a privacy policy, carrying
recognisable personal values, is escalated and becomes overdue; no body the receiver gets
holds any of them."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.domain.integrations.sweeps import sweep_time_events
from server.domain.model import Verdict
from server.domain.privacy.keys import Keyring, LocalKeyFile
from server.domain.review.items import NewItem, enqueue_items
from server.store.database import Database
from tests.apply.helpers import wait_until
from tests.conftest import INTEGRATION, reviewer
from tests.integration.helpers import claim, decide
from tests.notifications.notify_support import (
    CHANNEL_KINDS,
    SWEEP,
    channel,
    make_overdue,
    rows,
    rule,
    sending,
    sink,
    start_overdue_sweep,
)
from tests.privacy.canaries import ALL_CANARIES, applicant
from tests.privacy.conftest import attach_policy

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
RITA = reviewer("rita-reviewer", "kyc")


async def _all_sent(owner: asyncpg.Connection, count: int) -> bool:
    found = await rows(owner)
    return len(found) == count and all(r["state"] == "sent" for r in found)


@pytest.mark.parametrize("kind", CHANNEL_KINDS, ids=str)
async def test_no_personal_value_reaches_a_channel(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
    kind: ChannelKind,
) -> None:
    await attach_policy(db, "kyc")
    keyring = Keyring(LocalKeyFile.load(LocalKeyFile.create(tmp_path / "keys.json").path))
    async with sink(kind) as received:
        made = await channel(db, received.target, kind=kind)
        await rule(db, made.id, NotificationEvent.ESCALATED)
        await rule(db, made.id, NotificationEvent.OVERDUE)
        await start_overdue_sweep(db, owner_conn)

        enqueued = await enqueue_items(
            db,
            INTEGRATION,
            "kyc",
            [
                NewItem("app-1", applicant(), subject_ref="cust-9"),
                NewItem("app-2", applicant(), subject_ref="cust-9"),
            ],
            keyring,
        )
        assert isinstance(enqueued, list), enqueued
        escalated, late = (entry.item.id for entry in enqueued)
        await decide(db, RITA, await claim(db, RITA), Verdict.ESCALATE, "needs_senior")
        await make_overdue(owner_conn, [late])
        await sweep_time_events(db, SWEEP)

        async with sending(db, mail=received.mail):
            await wait_until(lambda: _all_sent(owner_conn, 2), within=10, what="both sent")
        bodies = received.bodies()
        assert sorted(received.linked_items()) == sorted([escalated, late])
    leaked = [(canary, body) for body in bodies for canary in ALL_CANARIES if canary in body]
    assert leaked == []
    # Nor the events they were built from.
    data = " ".join(
        str(r["data"]) for r in await owner_conn.fetch("SELECT data FROM outbox_events")
    )
    assert [c for c in ALL_CANARIES if c in data] == []
