"""Sending notifications: the worker's side (claiming due ones per channel, under its rate
limit and digest, and recording each attempt), and the unclaimed sweep.

A notification is claimed (a lock that lapses), sent outside any transaction, and recorded,
so it goes out at least once: a worker that dies between the claim and the record leaves
the lock to lapse, and another worker sends it again.

Rate: a channel sends at most `rate_per_minute` messages in any minute, counting those sent
in the last minute and those in flight; the rest wait their turn, never dropped. Each
channel is claimed under its row's lock (SKIP LOCKED), so two workers never both take the
last of a minute's allowance.

Digest: a channel with `digest_minutes` sends one message listing everything due, then no
other until `digest_minutes` have passed since; the rows of one digest are claimed and
recorded by one statement each, so they share their lock time and their `sent_at`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.domain.integrations.notifications import NotificationState
from server.domain.text import storable
from server.store import sql
from server.store.database import Database, Row

# Events for rules only (migration 0036): not in the catalogue, no endpoint takes them.
ITEM_UNCLAIMED = "item.unclaimed"
EXCEPTION_OVERDUE = "exception.overdue"
# Attempts before a notification fails for good.
MAX_ATTEMPTS = 8
# The most notifications one digest lists.
DIGEST_LIMIT = 200
# Channels looked at in one claim.
CHANNEL_LIMIT = 50


@dataclass(frozen=True)
class DueNotification:
    id: int
    item_id: int
    attempt: int
    rule: str
    event: NotificationEvent
    event_type: str
    data: dict[str, Any]
    occurred_at: datetime
    queue: str | None
    workflow: str | None
    exception_id: str | None

    @classmethod
    def from_row(cls, row: Row) -> DueNotification:
        return cls(
            id=row["id"],
            item_id=row["item_id"],
            attempt=row["attempts"],
            rule=row["rule_name"],
            event=NotificationEvent(row["event"]),
            event_type=row["event_type"],
            data=row["data"],
            occurred_at=row["occurred_at"],
            queue=row["queue"],
            workflow=row["workflow"],
            exception_id=row["exception_id"],
        )


@dataclass(frozen=True)
class DueMessage:
    """One message to send: one notification, or a digest's several."""

    channel_id: uuid.UUID
    kind: ChannelKind
    target: str
    notifications: tuple[DueNotification, ...]


def _room(channel: Row) -> int:
    return (
        int(channel["rate_per_minute"])
        - int(channel["sent_last_minute"])
        - int(channel["in_flight"])
    )


async def claim_due(
    db: Database, limit: int, *, lock_seconds: float, now: datetime
) -> list[DueMessage]:
    """Up to `limit` messages, each channel within its rate and digest period."""
    messages: list[DueMessage] = []
    async with db.transaction() as tx:
        channels = await tx.fetch(
            sql.notifications.NOTIFICATION_CHANNELS_DUE, channel_limit=CHANNEL_LIMIT
        )
        for channel in channels:
            if len(messages) >= limit:
                break
            room = _room(channel)
            if room <= 0:
                continue
            digest = channel["digest_minutes"]
            if digest is not None:
                last = channel["last_sent_at"]
                if channel["in_flight"] or (
                    last is not None and last > now - timedelta(minutes=digest)
                ):
                    continue
                batch = DIGEST_LIMIT
            else:
                batch = min(room, limit - len(messages))
            rows = await tx.fetch(
                sql.notifications.NOTIFICATION_DELIVERIES_CLAIM,
                channel_id=channel["id"],
                batch_size=batch,
                lock_seconds=lock_seconds,
            )
            due = [DueNotification.from_row(row) for row in rows]
            kind, target = ChannelKind(channel["kind"]), channel["target"]
            if digest is not None and due:
                messages.append(DueMessage(channel["id"], kind, target, tuple(due)))
            else:
                messages += [DueMessage(channel["id"], kind, target, (one,)) for one in due]
    return messages


def _fence(message: DueMessage) -> dict[str, list[int]]:
    return {
        "ids": [n.id for n in message.notifications],
        "attempts": [n.attempt for n in message.notifications],
    }


async def record_sent(db: Database, message: DueMessage) -> int:
    """How many of its notifications this attempt recorded (a lapsed lock's: none)."""
    rows = await db.fetch(sql.notifications.NOTIFICATION_DELIVERIES_RECORD_SENT, **_fence(message))
    return len(rows)


async def record_failure(
    db: Database, message: DueMessage, *, error: str, permanent: bool, retry_at: datetime
) -> dict[NotificationState, int]:
    rows = await db.fetch(
        sql.notifications.NOTIFICATION_DELIVERIES_RECORD_FAILURE,
        **_fence(message),
        error=storable(error),
        permanent=permanent,
        max_attempts=MAX_ATTEMPTS,
        next_attempt_at=retry_at,
    )
    counted = {state: 0 for state in NotificationState}
    for row in rows:
        counted[NotificationState(row["state"])] += 1
    return counted


async def sweep_unclaimed(db: Database, batch_size: int) -> int | None:
    """One round of the unclaimed sweep; None when another sweeper held the round. Returns
    the notifications written."""
    async with db.transaction() as tx:
        locked = await tx.fetchrow(sql.notifications.NOTIFICATION_SWEEP_LOCK)
        if locked is None or not locked["locked"]:
            return None
        row = await tx.fetchrow(
            sql.notifications.NOTIFICATION_UNCLAIMED_SWEEP, batch_size=batch_size
        )
    assert row is not None, "an aggregate always answers"
    return int(row["written"])
