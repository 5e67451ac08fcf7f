"""Notification rules, an admin's.

A rule says which waiting work, of which queues or workflows, is told to which channel
(notification_channels.py). Rules are scoped as webhook endpoints are (every queue named one
the token covers, every workflow one it may change); a rule outside the token's scope reads
as nonexistent.

Which rule events take which scope (migration 0036 maps them to outbox events):
OVERDUE queues or workflows; ESCALATED, UNCLAIMED and APPLICATION_FAILED queues;
NEEDS_APPROVAL workflows.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.integrations.notification_channels import (
    MAX_NAME,
    read_channels,
    taken,
)
from server.domain.integrations.notification_kinds import NotificationEvent
from server.domain.integrations.scopes import parse_uuid, scope_refusal, visible
from server.domain.model import Principal
from server.domain.review.queues import admin_refusal
from server.domain.text import check_text
from server.store import sql
from server.store.database import Database, Row

MIN_UNCLAIMED_SECONDS = 60
MAX_UNCLAIMED_SECONDS = 2_592_000

# The scopes each rule event takes.
QUEUE_EVENTS = frozenset(
    {
        NotificationEvent.OVERDUE,
        NotificationEvent.ESCALATED,
        NotificationEvent.UNCLAIMED,
        NotificationEvent.APPLICATION_FAILED,
    }
)
WORKFLOW_EVENTS = frozenset({NotificationEvent.OVERDUE, NotificationEvent.NEEDS_APPROVAL})


class NotificationState(enum.StrEnum):
    """notification_deliveries.state: pending (not yet sent, or waiting for the channel's
    rate or digest), sent, failed (the attempts ran out or the channel refused for good)."""

    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"


@dataclass(frozen=True)
class NotificationRule:
    id: str
    name: str
    event: NotificationEvent
    queues: tuple[str, ...] | None
    workflows: tuple[str, ...] | None
    unclaimed_after_seconds: int | None
    channel_id: str
    channel_name: str
    enabled: bool
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Row) -> NotificationRule:
        return cls(
            id=str(row["id"]),
            name=row["name"],
            event=NotificationEvent(row["event"]),
            queues=None if row["queues"] is None else tuple(row["queues"]),
            workflows=None if row["workflows"] is None else tuple(row["workflows"]),
            unclaimed_after_seconds=row["unclaimed_after_seconds"],
            channel_id=str(row["channel_id"]),
            channel_name=row["channel_name"],
            enabled=row["enabled"],
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


@dataclass(frozen=True)
class RuleInput:
    """createNotificationRule's settings; for an update, None leaves one as it is (giving
    `queues` drops `workflows`, and the other way round)."""

    name: str | None = None
    event: NotificationEvent | None = None
    queues: Sequence[str] | None = None
    workflows: Sequence[str] | None = None
    unclaimed_after_seconds: int | None = None
    channel_id: str | None = None
    enabled: bool | None = None


# Rules.


async def _check_rule(
    db: Database, principal: Principal, settings: RuleInput
) -> NotPermitted | InvalidInput | uuid.UUID:
    """The whole of a rule's settings, merged already; answers its channel's id."""
    assert settings.name is not None
    assert settings.event is not None
    if problem := check_text(settings.name, "name", required=True, limit=MAX_NAME):
        return problem
    event = settings.event
    if (settings.queues is None) == (settings.workflows is None):
        return InvalidInput("a rule names queues or workflows, one of the two", "queues")
    by_queue = settings.queues is not None
    if by_queue and event not in QUEUE_EVENTS:
        return InvalidInput(f"{event.value} rules name workflows", "queues")
    if not by_queue and event not in WORKFLOW_EVENTS:
        return InvalidInput(f"{event.value} rules name queues", "workflows")
    bound = settings.unclaimed_after_seconds
    if event is NotificationEvent.UNCLAIMED:
        if bound is None or not MIN_UNCLAIMED_SECONDS <= bound <= MAX_UNCLAIMED_SECONDS:
            return InvalidInput(
                f"an UNCLAIMED rule takes unclaimedAfterSeconds, {MIN_UNCLAIMED_SECONDS} to "
                f"{MAX_UNCLAIMED_SECONDS}",
                "unclaimedAfterSeconds",
            )
    elif bound is not None:
        return InvalidInput(
            "only an UNCLAIMED rule takes unclaimedAfterSeconds", "unclaimedAfterSeconds"
        )
    names = list(settings.queues or settings.workflows or ())
    if refusal := await scope_refusal(db, principal, names, by_queue=by_queue):
        return refusal
    channel_id = parse_uuid(settings.channel_id)
    if channel_id is None or not await read_channels(db, [channel_id]):
        return InvalidInput(f"unknown channel {str(settings.channel_id)[:100]!r}", "channelId")
    return channel_id


async def _read_rules(db: Database, ids: list[uuid.UUID] | None) -> list[NotificationRule]:
    rows = await db.fetch(sql.notifications.NOTIFICATION_RULES_GET, ids=ids)
    return [NotificationRule.from_row(row) for row in rows]


async def list_rules(db: Database, principal: Principal) -> list[NotificationRule] | NotPermitted:
    if refusal := admin_refusal(principal, "read notification rules"):
        return refusal
    return await visible(db, principal, await _read_rules(db, None))


async def get_rule(
    db: Database, principal: Principal, rule_id: str, *, what: str = "read notification rules"
) -> NotificationRule | NotPermitted | NotFound:
    if refusal := admin_refusal(principal, what):
        return refusal
    parsed = parse_uuid(rule_id)
    found = await visible(db, principal, await _read_rules(db, [parsed])) if parsed else []
    return found[0] if found else NotFound("notification rule", rule_id)


async def create_rule(
    db: Database, principal: Principal, settings: RuleInput
) -> NotificationRule | NotPermitted | InvalidInput:
    """Applies to events from now on: what became due before it is not told."""
    if refusal := admin_refusal(principal, "create notification rules"):
        return refusal
    if settings.name is None or settings.event is None or settings.channel_id is None:
        return InvalidInput("a rule needs its name, event and channel", "name")
    checked = await _check_rule(db, principal, settings)
    if isinstance(checked, NotPermitted | InvalidInput):
        return checked
    rule_id = uuid.uuid4()
    row = await db.fetchrow(
        sql.notifications.NOTIFICATION_RULE_INSERT,
        id=rule_id,
        name=settings.name,
        event=settings.event.value,
        queues=None if settings.queues is None else list(dict.fromkeys(settings.queues)),
        workflows=None if settings.workflows is None else list(dict.fromkeys(settings.workflows)),
        unclaimed_after_seconds=settings.unclaimed_after_seconds,
        channel_id=checked,
        enabled=True if settings.enabled is None else settings.enabled,
        created_by=principal.user,
    )
    if row is None:
        return taken(settings.name)
    (rule,) = await _read_rules(db, [rule_id])
    return rule


async def update_rule(
    db: Database, principal: Principal, rule_id: str, changes: RuleInput
) -> NotificationRule | NotPermitted | InvalidInput | NotFound:
    current = await get_rule(db, principal, rule_id, what="change notification rules")
    if isinstance(current, NotPermitted | NotFound):
        return current
    if changes.queues is not None and changes.workflows is not None:
        return InvalidInput("a rule names queues or workflows, one of the two", "queues")
    event = changes.event or current.event
    merged = RuleInput(
        name=changes.name if changes.name is not None else current.name,
        event=event,
        queues=changes.queues
        if changes.queues is not None
        else (current.queues if changes.workflows is None else None),
        workflows=changes.workflows
        if changes.workflows is not None
        else (current.workflows if changes.queues is None else None),
        unclaimed_after_seconds=(changes.unclaimed_after_seconds or current.unclaimed_after_seconds)
        if event is NotificationEvent.UNCLAIMED
        else changes.unclaimed_after_seconds,
        channel_id=changes.channel_id or current.channel_id,
        enabled=current.enabled if changes.enabled is None else changes.enabled,
    )
    checked = await _check_rule(db, principal, merged)
    if isinstance(checked, NotPermitted | InvalidInput):
        return checked
    assert merged.name is not None
    assert merged.event is not None
    row = await db.fetchrow(
        sql.notifications.NOTIFICATION_RULE_UPDATE,
        id=uuid.UUID(current.id),
        name=merged.name,
        event=merged.event.value,
        queues=None if merged.queues is None else list(dict.fromkeys(merged.queues)),
        workflows=None if merged.workflows is None else list(dict.fromkeys(merged.workflows)),
        unclaimed_after_seconds=merged.unclaimed_after_seconds,
        channel_id=checked,
        enabled=merged.enabled,
    )
    found = await _read_rules(db, [uuid.UUID(current.id)])
    if not found:
        return NotFound("notification rule", rule_id)
    if row is None:
        return taken(merged.name)
    return found[0]


async def delete_rule(
    db: Database, principal: Principal, rule_id: str
) -> NotificationRule | NotPermitted | NotFound:
    """Deletes it with its notifications, sent or not. Answers it as it was."""
    current = await get_rule(db, principal, rule_id, what="delete notification rules")
    if isinstance(current, NotPermitted | NotFound):
        return current
    row = await db.fetchrow(sql.notifications.NOTIFICATION_RULE_DELETE, id=uuid.UUID(current.id))
    return current if row is not None else NotFound("notification rule", rule_id)
