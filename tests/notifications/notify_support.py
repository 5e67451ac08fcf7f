"""What the notification tests share: a channel and a rule made through the domain as an
admin would, an apply worker that sends notifications, the receiver's bodies read for the
console links they carry, and the rows as they are.

Channel kinds are parameters of the end-to-end tests: each of CHANNEL_KINDS has a real
receiver here (`sink`): a local HTTP server for SLACK, TEAMS and APPRISE (its json:// URL),
and a real SMTP server (aiosmtpd) for EMAIL."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from email.message import EmailMessage

import asyncpg

from server.config_mail import MailSettings
from server.domain.integrations import notification_channels as channels
from server.domain.integrations import notifications
from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.domain.integrations.sweeps import SweepSettings, sweep_time_events
from server.notification_delivery import NotificationSettings
from server.store.database import Database
from server.worker import ApplyWorker, WorkerSettings
from tests.apply.receiver import Policy, Receiver, webhook_receiver
from tests.conftest import ADMIN
from tests.notifications.smtp_support import smtp_server

PUBLIC_URL = "https://casework.example"
LINK = re.compile(re.escape(PUBLIC_URL) + r"/console/#/item/(\d+)")
# The kinds whose messages a local HTTP receiver takes.
CHANNEL_KINDS = (ChannelKind.SLACK, ChannelKind.TEAMS, ChannelKind.APPRISE, ChannelKind.EMAIL)
SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
RECIPIENTS = "risk-team@example.test"
SWEEP = SweepSettings(batch_size=200, lookback_seconds=86_400, settle_seconds=30)
# Fast rounds: the tests wait on conditions, never on these.
FAST = NotificationSettings(
    poll_seconds=0.05,
    backoff_seconds=0.05,
    sweep_interval_seconds=0.1,
    public_url=PUBLIC_URL,
)


async def channel(
    db: Database,
    target: str,
    *,
    kind: ChannelKind = ChannelKind.SLACK,
    name: str = "risk-team",
    rate_per_minute: int = 30,
    digest_minutes: int | None = None,
) -> channels.NotificationChannel:
    made = await channels.create_channel(
        db,
        ADMIN,
        channels.ChannelInput(
            name=name,
            kind=kind,
            target=target,
            rate_per_minute=rate_per_minute,
            digest_minutes=digest_minutes,
        ),
    )
    assert isinstance(made, channels.NotificationChannel), made
    return made


async def rule(
    db: Database,
    channel_id: str,
    event: NotificationEvent,
    *,
    name: str | None = None,
    queues: Sequence[str] | None = ("kyc",),
    workflows: Sequence[str] | None = None,
    unclaimed_after_seconds: int | None = None,
) -> notifications.NotificationRule:
    made = await notifications.create_rule(
        db,
        ADMIN,
        notifications.RuleInput(
            name=name or f"{event.value.lower()}-{channel_id[:8]}",
            event=event,
            queues=None if workflows is not None else queues,
            workflows=workflows,
            unclaimed_after_seconds=unclaimed_after_seconds,
            channel_id=channel_id,
        ),
    )
    assert isinstance(made, notifications.NotificationRule), made
    return made


@dataclass
class Sink:
    """Where a channel of `kind` delivers here, and what has arrived there so far."""

    kind: ChannelKind
    target: str
    # For EMAIL: the worker's mail settings, and the same as a served process's environment.
    mail: MailSettings | None
    env: dict[str, str]
    _bodies: Callable[[], list[str]]

    def bodies(self) -> list[str]:
        """Each message received, as text (an e-mail's plain and HTML parts together)."""
        return self._bodies()

    def linked_items(self) -> list[int]:
        """The items each received message links to, in the order they came."""
        return [item for body in self.bodies() for item in items_linked(body)]


@asynccontextmanager
async def sink(kind: ChannelKind, policy: Policy | None = None) -> AsyncIterator[Sink]:
    """A real receiver for a channel of `kind` (`policy`: how an HTTP receiver answers)."""
    if kind is ChannelKind.EMAIL:
        with smtp_server() as server:
            settings = server.mail_settings()
            yield Sink(
                kind,
                RECIPIENTS,
                settings,
                {"CASEWORK_SMTP_URL": server.url, "CASEWORK_NOTIFY_FROM": settings.sender},
                lambda: [mail_text(received.message) for received in server.received],
            )
        return
    async with webhook_receiver(SECRET, policy) as receiver:
        target = receiver.url
        if kind is ChannelKind.APPRISE:
            # Apprise's own JSON service, pointed at the local receiver.
            target = receiver.url.replace("http://", "json://", 1)
        yield Sink(kind, target, None, {}, lambda: [r.body.decode() for r in receiver.requests])


def mail_text(message: EmailMessage) -> str:
    return "\n".join(
        str(part.get_content()) for part in message.walk() if part.get_content_maintype() == "text"
    )


@asynccontextmanager
async def sending(
    db: Database, name: str = "notifier", *, mail: MailSettings | None = None
) -> AsyncIterator[ApplyWorker]:
    """An apply worker (decisions, events, notifications), stopped at the end."""
    import asyncio

    worker = ApplyWorker(
        db,
        WorkerSettings(poll_seconds=0.05, backoff_seconds=0.05),
        name=name,
        time_events=SWEEP,
        notifications=replace(FAST, mail=mail),
    )
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        await task


async def start_overdue_sweep(db: Database, owner: asyncpg.Connection) -> None:
    """The sweep's marks start when a rule first watches; here, an hour back."""
    await sweep_time_events(db, SWEEP)
    await owner.execute("UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'")


async def make_overdue(owner: asyncpg.Connection, item_ids: Sequence[int]) -> None:
    await owner.execute(
        "UPDATE review_items SET due_at = now() - interval '1 minute' WHERE id = ANY ($1)",
        list(item_ids),
    )


def linked_items(receiver: Receiver) -> list[int]:
    """The items each received message links to, in the order they came (a digest's all)."""
    return [item for r in receiver.requests for item in items_linked(r.body.decode())]


def items_linked(body: str) -> list[int]:
    """The items one message links to, each once, in order (a body may carry a link twice:
    Slack's text and its button, an e-mail's plain and HTML parts)."""
    return [int(found) for found in dict.fromkeys(LINK.findall(body))]


async def rows(owner: asyncpg.Connection) -> list[asyncpg.Record]:
    found: list[asyncpg.Record] = await owner.fetch(
        "SELECT * FROM notification_deliveries ORDER BY id"
    )
    return found


async def minute_passes(owner: asyncpg.Connection, minutes: float = 1.0) -> None:
    """As if `minutes` had passed for the channel's rate and digest: what was sent, was sent
    that much earlier."""
    await owner.execute(
        "UPDATE notification_deliveries SET sent_at = sent_at - $1::interval"
        " WHERE sent_at IS NOT NULL",
        timedelta(minutes=minutes, seconds=1),
    )
