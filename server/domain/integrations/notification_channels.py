"""Notification channels, an admin's: where messages go (e-mail recipients, a Slack- or
Teams-style incoming webhook, an Apprise URL), with a rate limit and a digest period.

A channel is shared by the deployment: every admin may read and change channels, and sees a
channel's target redacted to its host (a target may hold a token or a password). A channel
is not deleted while a rule sends to it.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.integrations.notification_kinds import ChannelKind
from server.domain.integrations.scopes import parse_uuid
from server.domain.model import Principal
from server.domain.review.queues import admin_refusal, target_refusal
from server.domain.text import check_text
from server.store import sql
from server.store.database import Database, Row

MAX_NAME = 100
MAX_TARGET = 2000
DEFAULT_RATE_PER_MINUTE = 30
MAX_RATE_PER_MINUTE = 600
MAX_DIGEST_MINUTES = 1440

_ADDRESS = re.compile(r"^[^@\s,]+@[^@\s,]+\.[^@\s,]+$")


def redacted_target(kind: ChannelKind, target: str) -> str:
    """What a reader is shown of a target: the host (a URL's), or the recipients' domains."""
    if kind is ChannelKind.EMAIL:
        domains = sorted({a.strip().rsplit("@", 1)[-1] for a in target.split(",") if a.strip()})
        return ", ".join(f"…@{d}" for d in domains)
    try:
        parts = urlsplit(target)
        host = parts.hostname or ""
    except ValueError:
        return "…"
    return f"{parts.scheme}://{host}/…" if host else f"{parts.scheme}://…"


@dataclass(frozen=True)
class NotificationChannel:
    id: str
    name: str
    kind: ChannelKind
    target: str
    rate_per_minute: int
    digest_minutes: int | None
    enabled: bool
    created_by: str
    created_at: datetime
    updated_at: datetime
    rule_names: tuple[str, ...]
    pending_notifications: int
    failed_notifications: int

    @property
    def redacted_target(self) -> str:
        return redacted_target(self.kind, self.target)

    @classmethod
    def from_row(cls, row: Row) -> NotificationChannel:
        return cls(
            id=str(row["id"]),
            name=row["name"],
            kind=ChannelKind(row["kind"]),
            target=row["target"],
            rate_per_minute=row["rate_per_minute"],
            digest_minutes=row["digest_minutes"],
            enabled=row["enabled"],
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            rule_names=tuple(row["rule_names"]),
            pending_notifications=row["pending_notifications"],
            failed_notifications=row["failed_notifications"],
        )


@dataclass(frozen=True)
class ChannelInput:
    """createNotificationChannel's settings; for an update, None leaves one as it is
    (`clear_digest` turns a digest off)."""

    name: str | None = None
    kind: ChannelKind | None = None
    target: str | None = None
    rate_per_minute: int | None = None
    digest_minutes: int | None = None
    clear_digest: bool = False
    enabled: bool | None = None


def check_target(
    kind: ChannelKind, target: str, allowed_hosts: frozenset[str]
) -> InvalidInput | None:
    if not 1 <= len(target) <= MAX_TARGET:
        return InvalidInput(f"a target is 1 to {MAX_TARGET} characters", "target")
    if kind is ChannelKind.EMAIL:
        addresses = [a.strip() for a in target.split(",")]
        if not addresses or not all(_ADDRESS.match(a) for a in addresses):
            return InvalidInput(
                "an EMAIL channel's target is e-mail addresses, comma-separated", "target"
            )
        return None
    if kind in (ChannelKind.SLACK, ChannelKind.TEAMS):
        if refusal := target_refusal(target, allowed_hosts):
            return InvalidInput(refusal, "target")
        return None
    if "://" not in target:
        return InvalidInput("an APPRISE channel's target is an Apprise URL", "target")
    return None


def _check_channel(settings: ChannelInput, allowed_hosts: frozenset[str]) -> InvalidInput | None:
    assert settings.name is not None
    assert settings.kind is not None
    assert settings.target is not None
    if problem := check_text(settings.name, "name", required=True, limit=MAX_NAME):
        return problem
    if problem := check_target(settings.kind, settings.target, allowed_hosts):
        return problem
    rate = settings.rate_per_minute
    if rate is not None and not 1 <= rate <= MAX_RATE_PER_MINUTE:
        return InvalidInput(f"ratePerMinute is 1 to {MAX_RATE_PER_MINUTE}", "ratePerMinute")
    digest = settings.digest_minutes
    if digest is not None and not 1 <= digest <= MAX_DIGEST_MINUTES:
        return InvalidInput(f"digestMinutes is 1 to {MAX_DIGEST_MINUTES}", "digestMinutes")
    return None


async def read_channels(db: Database, ids: list[uuid.UUID] | None) -> list[NotificationChannel]:
    rows = await db.fetch(sql.notifications.NOTIFICATION_CHANNELS_GET, ids=ids)
    return [NotificationChannel.from_row(row) for row in rows]


async def list_channels(
    db: Database, principal: Principal
) -> list[NotificationChannel] | NotPermitted:
    if refusal := admin_refusal(principal, "read notification channels"):
        return refusal
    return await read_channels(db, None)


async def get_channel(
    db: Database, principal: Principal, channel_id: str, *, what: str = "read notification channels"
) -> NotificationChannel | NotPermitted | NotFound:
    if refusal := admin_refusal(principal, what):
        return refusal
    parsed = parse_uuid(channel_id)
    found = await read_channels(db, [parsed]) if parsed else []
    return found[0] if found else NotFound("notification channel", channel_id)


def taken(name: str) -> InvalidInput:
    return InvalidInput(f"the name {name[:100]!r} is taken", "name")


async def create_channel(
    db: Database,
    principal: Principal,
    settings: ChannelInput,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
) -> NotificationChannel | NotPermitted | InvalidInput:
    if refusal := admin_refusal(principal, "create notification channels"):
        return refusal
    if settings.name is None or settings.kind is None or settings.target is None:
        return InvalidInput("a channel needs its name, kind and target", "name")
    if problem := _check_channel(settings, allowed_hosts):
        return problem
    channel_id = uuid.uuid4()
    row = await db.fetchrow(
        sql.notifications.NOTIFICATION_CHANNEL_INSERT,
        id=channel_id,
        name=settings.name,
        kind=settings.kind.value,
        target=settings.target,
        rate_per_minute=settings.rate_per_minute or DEFAULT_RATE_PER_MINUTE,
        digest_minutes=settings.digest_minutes,
        enabled=True if settings.enabled is None else settings.enabled,
        created_by=principal.user,
    )
    if row is None:
        return taken(settings.name)
    (channel,) = await read_channels(db, [channel_id])
    return channel


async def update_channel(
    db: Database,
    principal: Principal,
    channel_id: str,
    changes: ChannelInput,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
) -> NotificationChannel | NotPermitted | InvalidInput | NotFound:
    """Changes what it is given (not its kind: a new kind is a new channel). The target,
    rate and digest apply to pending notifications too."""
    current = await get_channel(db, principal, channel_id, what="change notification channels")
    if isinstance(current, NotPermitted | NotFound):
        return current
    if changes.kind is not None and changes.kind is not current.kind:
        return InvalidInput("a channel's kind does not change: create another channel", "kind")
    merged = ChannelInput(
        name=changes.name if changes.name is not None else current.name,
        kind=current.kind,
        target=changes.target if changes.target is not None else current.target,
        rate_per_minute=changes.rate_per_minute or current.rate_per_minute,
        digest_minutes=None
        if changes.clear_digest
        else (changes.digest_minutes or current.digest_minutes),
        enabled=current.enabled if changes.enabled is None else changes.enabled,
    )
    if problem := _check_channel(merged, allowed_hosts):
        return problem
    assert merged.name is not None
    row = await db.fetchrow(
        sql.notifications.NOTIFICATION_CHANNEL_UPDATE,
        id=uuid.UUID(current.id),
        name=merged.name,
        target=merged.target,
        rate_per_minute=merged.rate_per_minute,
        digest_minutes=merged.digest_minutes,
        enabled=merged.enabled,
    )
    if row is None:
        again = await read_channels(db, [uuid.UUID(current.id)])
        return taken(merged.name) if again else NotFound("notification channel", channel_id)
    (channel,) = await read_channels(db, [uuid.UUID(current.id)])
    return channel


async def delete_channel(
    db: Database, principal: Principal, channel_id: str
) -> NotificationChannel | NotPermitted | InvalidInput | NotFound:
    """Refused while a rule sends to it. Answers it as it was."""
    current = await get_channel(db, principal, channel_id, what="delete notification channels")
    if isinstance(current, NotPermitted | NotFound):
        return current
    row = await db.fetchrow(sql.notifications.NOTIFICATION_CHANNEL_DELETE, id=uuid.UUID(current.id))
    if row is None:
        again = await read_channels(db, [uuid.UUID(current.id)])
        if not again:
            return NotFound("notification channel", channel_id)
        names = ", ".join(repr(n) for n in again[0].rule_names[:5])
        return InvalidInput(
            f"rules send to this channel ({names}): delete them or point them elsewhere first",
            "id",
        )
    return current
