"""Sending notifications to owners' channels, for the apply worker (server/worker.py):
every `casework serve` and `casework worker` runs it beside decisions, redrives and events,
with the unclaimed sweep beside the time-event sweep.

Each message is claimed per channel (within its rate limit and digest period: see
server/domain/integrations/notification_deliveries.py), rendered from the events' data and
the rules (never an item's payload), sent outside any transaction, and recorded: sent, or
retried with the decisions' backoff (a Retry-After is a floor), or failed for good when the
channel refuses or the attempts run out. A worker that dies between the claim and the
record leaves the lock to lapse, and the message is sent again: at least once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime

from server.config_mail import MailSettings
from server.domain.integrations import notification_deliveries as deliveries
from server.domain.integrations.events import EventType
from server.domain.integrations.notification_deliveries import DueMessage, DueNotification
from server.domain.integrations.notification_kinds import ChannelKind
from server.domain.integrations.notifications import NotificationState
from server.domain.review import apply
from server.domain.review.queues import target_refusal
from server.effects.errors import PermanentEffectError, TransientEffectError
from server.effects.http import Session
from server.effects.notify import (
    ChannelTarget,
    NoticeEntry,
    console_link,
    render_notice,
    send_notice,
)
from server.observability.notification_metrics import NotificationOutcome, record_notifications
from server.store.database import Database

log = logging.getLogger("casework.worker")

Spawn = Callable[[Coroutine[None, None, None]], None]

# Events for rules only (migration 0036): not in the catalogue, no endpoint takes them.
ITEM_UNCLAIMED = deliveries.ITEM_UNCLAIMED
EXCEPTION_OVERDUE = deliveries.EXCEPTION_OVERDUE


def _time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def notice_entry(due: DueNotification, public_url: str | None) -> NoticeEntry:
    """What waits, for whom, since when, and its console page: from the event's data and
    the rule alone, never from the item's payload."""
    data = due.data
    queue = due.queue or data.get("queue")
    since_key, whom = {
        EventType.ITEM_OVERDUE.value: ("dueAt", queue),
        EXCEPTION_OVERDUE: ("dueAt", data.get("ownerRole")),
        EventType.ITEM_ESCALATED.value: ("escalatedAt", data.get("toQueue") or queue),
        ITEM_UNCLAIMED: ("since", queue),
        EventType.EXCEPTION_NEEDS_APPROVAL.value: ("at", data.get("approvalQueue")),
        EventType.DECISION_FAILED.value: ("failedAt", queue),
    }.get(due.event_type, ("", queue))
    since = _time(data.get(since_key)) or due.occurred_at
    exception_id = due.exception_id or data.get("exceptionId")
    waiting_for = (
        f"queue {whom}"
        if whom
        else f"the owners of workflow {due.workflow or data.get('workflow')}"
    )
    return NoticeEntry(
        event=due.event,
        rule=due.rule,
        item_id=due.item_id,
        queue=queue if isinstance(queue, str) else None,
        workflow=due.workflow,
        waiting_for=waiting_for,
        since=since,
        link=console_link(public_url, item_id=due.item_id, exception_id=exception_id),
        exception_id=exception_id,
        external_key=data.get("externalKey") or data.get("sourceRecordId"),
    )


@dataclass(frozen=True)
class NotificationSettings:
    # How long a claimed message is locked: past it, another worker sends it again.
    lock_seconds: float = 60.0
    # Between looks when nothing hinted (notifications are written by other transactions).
    poll_seconds: float = 1.0
    backoff_seconds: float = 1.0
    # The unclaimed sweep: items per rule a round, and between rounds.
    sweep_batch_size: int = 200
    sweep_interval_seconds: float = 5.0
    # CASEWORK_PUBLIC_URL: the console links' base; None: notices carry no link.
    public_url: str | None = None
    # CASEWORK_EFFECT_ALLOWED_HOSTS, checked again before each incoming-webhook POST (the
    # list may have changed since the channel was made); empty: any host.
    allowed_hosts: frozenset[str] = frozenset()
    # CASEWORK_SMTP_URL and CASEWORK_NOTIFY_FROM: how e-mail channels send.
    mail: MailSettings | None = None


class NotificationSender:
    """The worker's part that sends notifications."""

    def __init__(self, db: Database, settings: NotificationSettings, *, worker: str) -> None:
        self._db = db
        self._settings = settings
        self._worker = worker
        self._next_look = 0.0
        self.sent = 0
        self.retried = 0
        self.failed = 0

    async def start(self, client: Session, free: int, spawn: Spawn) -> int:
        """Claims up to `free` messages and spawns them; returns how many. Raises what the
        database raised (the worker backs off on an outage)."""
        now = asyncio.get_running_loop().time()
        if free <= 0 or now < self._next_look:
            return 0
        self._next_look = now + self._settings.poll_seconds
        claimed = await deliveries.claim_due(
            self._db, free, lock_seconds=self._settings.lock_seconds, now=apply.utcnow()
        )
        for message in claimed:
            spawn(self._send(client, message))
        if len(claimed) == free:
            self._next_look = 0.0  # there may be more right now
        return len(claimed)

    async def _send(self, client: Session, message: DueMessage) -> None:
        try:
            entries = tuple(
                notice_entry(due, self._settings.public_url) for due in message.notifications
            )
            notice = render_notice(entries)
            target = ChannelTarget(
                kind=message.kind, target=message.target, mail=self._settings.mail
            )
            try:
                if message.kind in (ChannelKind.SLACK, ChannelKind.TEAMS) and (
                    refusal := target_refusal(message.target, self._settings.allowed_hosts)
                ):
                    raise PermanentEffectError(f"not sent: {refusal}")
                await send_notice(client, target, notice)
            except PermanentEffectError as error:
                await self._failed(message, str(error), permanent=True, retry_after=None)
            except TransientEffectError as error:
                await self._failed(
                    message, str(error), permanent=False, retry_after=error.retry_after
                )
            except asyncio.CancelledError:
                raise
            except Exception as error:
                await self._failed(
                    message, f"{type(error).__name__}: {error}", permanent=False, retry_after=None
                )
            else:
                recorded = await deliveries.record_sent(self._db, message)
                self.sent += recorded
                record_notifications(NotificationOutcome.SENT, recorded)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The lock lapses and the message is sent again; keep the traceback.
            log.exception(
                "worker %s: sending %d notification(s) to channel %s failed",
                self._worker,
                len(message.notifications),
                message.channel_id,
            )

    async def _failed(
        self, message: DueMessage, error: str, *, permanent: bool, retry_after: float | None
    ) -> None:
        attempt = max(n.attempt for n in message.notifications)
        retry_at = apply.next_attempt_at(
            attempt,
            base_seconds=self._settings.backoff_seconds,
            retry_after=retry_after,
            now=apply.utcnow(),
        )
        counted = await deliveries.record_failure(
            self._db, message, error=error, permanent=permanent, retry_at=retry_at
        )
        failed, retried = counted[NotificationState.FAILED], counted[NotificationState.PENDING]
        self.failed += failed
        self.retried += retried
        record_notifications(NotificationOutcome.FAILED, failed)
        record_notifications(NotificationOutcome.RETRIED, retried)
        if failed:
            log.error(
                "%d notification(s) to channel %s failed for good: %s",
                failed,
                message.channel_id,
                error,
            )


async def sweep_until_stopped(
    db: Database, settings: NotificationSettings, stopping: asyncio.Event
) -> None:
    """The unclaimed sweep: a round every interval until `stopping` is set. A failed round
    (the database away) is one log line until a round succeeds again."""
    failing = False
    while not stopping.is_set():
        try:
            await deliveries.sweep_unclaimed(db, settings.sweep_batch_size)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not failing:
                log.warning("unclaimed sweep failed, will retry: %s", error)
            failing = True
        else:
            if failing:
                log.info("unclaimed sweep works again")
            failing = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), settings.sweep_interval_seconds)
