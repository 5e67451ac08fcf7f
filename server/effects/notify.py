"""Sending a notice to a channel. A notice is what waits, for whom, since when, and a link
to the console; it is built from an outbox event's data and the rule, never from an item's
payload, so no field a privacy policy marks personal can reach it.

Sending raises TransientEffectError (try again later) or PermanentEffectError (the channel
refuses for good); anything else counts as transient."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import httpx

from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.effects.errors import PermanentEffectError, TransientEffectError
from server.effects.webhook import retry_after_seconds


@dataclass(frozen=True)
class NoticeEntry:
    """One piece of waiting work."""

    event: NotificationEvent
    rule: str
    item_id: int
    # Who it waits for: the queue (or workflow) and, where one is known, the person.
    queue: str | None
    workflow: str | None
    waiting_for: str
    # Since when it waits (the due time passed, the escalation, the enqueue, the request).
    since: datetime
    # The console page of the item or exception; None when CASEWORK_PUBLIC_URL is unset.
    link: str | None
    exception_id: str | None = None
    external_key: str | None = None


@dataclass(frozen=True)
class Notice:
    """One message to one channel: a single entry, or a digest of several."""

    subject: str
    text: str
    entries: tuple[NoticeEntry, ...]


@dataclass(frozen=True)
class ChannelTarget:
    kind: ChannelKind
    target: str
    timeout_seconds: float = 10.0


def console_link(public_url: str | None, *, item_id: int, exception_id: str | None) -> str | None:
    """The console page of an exception, or else of the item (the console's hash routes)."""
    if not public_url:
        return None
    if exception_id is not None:
        return f"{public_url}/console/#/exceptions/{exception_id}"
    return f"{public_url}/console/#/item/{item_id}"


def render_notice(entries: tuple[NoticeEntry, ...]) -> Notice:
    """One entry is a message of its own; several are a digest."""
    lines = [
        f"{entry.event.value.replace('_', ' ').lower()}: item {entry.item_id}"
        f" waits for {entry.waiting_for} since {entry.since.isoformat()}"
        + (f" {entry.link}" if entry.link else "")
        for entry in entries
    ]
    subject = (
        f"Casework: {lines[0].split(' since ')[0]}"
        if len(entries) == 1
        else f"Casework: {len(entries)} waiting"
    )
    return Notice(subject=subject, text="\n".join(lines), entries=entries)


async def send_notice(client: httpx.AsyncClient, channel: ChannelTarget, notice: Notice) -> None:
    if channel.kind in (ChannelKind.SLACK, ChannelKind.TEAMS):
        await _post_incoming_webhook(client, channel, notice)
        return
    raise PermanentEffectError(f"channel kind {channel.kind} cannot be sent yet")


async def _post_incoming_webhook(
    client: httpx.AsyncClient, channel: ChannelTarget, notice: Notice
) -> None:
    """Slack's and Teams' incoming webhooks both take {"text": ...} (Markdown-ish)."""
    try:
        answer = await client.post(
            channel.target, json={"text": notice.text}, timeout=channel.timeout_seconds
        )
    except httpx.HTTPError as error:
        raise TransientEffectError(f"{type(error).__name__}: {error}") from error
    if answer.is_success:
        return
    if answer.status_code == 429 or answer.status_code >= 500:
        raise TransientEffectError(
            f"HTTP {answer.status_code}",
            retry_after=retry_after_seconds(answer.headers.get("retry-after")),
        )
    raise PermanentEffectError(f"HTTP {answer.status_code}: {answer.text[:200]}")
