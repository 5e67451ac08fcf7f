"""Notification channels and rules, an admin's. Parse, call the domain, map.

As elsewhere, strawberry.enum marks the domain enums themselves as the GraphQL enums."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain import failures
from server.domain.failures import is_failure
from server.domain.integrations import notification_channels as channels
from server.domain.integrations import notifications
from server.domain.integrations.notification_kinds import ChannelKind, NotificationEvent
from server.graphql.context import Context
from server.graphql.errors import InvalidInput, NotFound, NotPermitted, from_failure

strawberry.enum(
    ChannelKind,
    name="NotificationChannelKind",
    description="EMAIL: e-mail over SMTP to the target's comma-separated addresses. SLACK, "
    "TEAMS: the target is an incoming webhook's URL. APPRISE: the target is an Apprise URL.",
)
strawberry.enum(
    NotificationEvent,
    name="NotificationEvent",
    description="What a rule tells of. OVERDUE: an item (queues) or exception (workflows) "
    "passed its due time. ESCALATED: an item left one of the queues for its escalation queue. "
    "UNCLAIMED: an item of the queues waited unclaimed longer than unclaimedAfterSeconds. "
    "NEEDS_APPROVAL: a correction of the workflows waits for an approver. "
    "APPLICATION_FAILED: a decision of the queues could not be carried out, for good.",
)
strawberry.enum(
    notifications.NotificationState,
    name="NotificationState",
    description="PENDING: not yet sent (waiting its turn, the channel's rate or digest, or "
    "a retry). SENT. FAILED: the channel refused for good or the attempts ran out.",
)
NotificationState = notifications.NotificationState


@strawberry.type(description="Where notifications go. The target is shown redacted.")
class NotificationChannel:
    id: strawberry.ID
    name: str
    kind: ChannelKind
    target: str = strawberry.field(
        description="The target, redacted to its host (or the recipients' domains): a "
        "target may hold a token or a password."
    )
    rate_per_minute: int = strawberry.field(
        description="At most this many messages in any minute; the rest wait, never dropped."
    )
    digest_minutes: int | None = strawberry.field(
        description="One message per this many minutes listing what waits; null: one "
        "message per notification."
    )
    enabled: bool
    rules: list[str] = strawberry.field(description="The names of the rules sending to it.")
    pending_notifications: int
    failed_notifications: int
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_domain(cls, channel: channels.NotificationChannel) -> NotificationChannel:
        return cls(
            id=strawberry.ID(channel.id),
            name=channel.name,
            kind=channel.kind,
            target=channel.redacted_target,
            rate_per_minute=channel.rate_per_minute,
            digest_minutes=channel.digest_minutes,
            enabled=channel.enabled,
            rules=list(channel.rule_names),
            pending_notifications=channel.pending_notifications,
            failed_notifications=channel.failed_notifications,
            created_by=channel.created_by,
            created_at=channel.created_at,
            updated_at=channel.updated_at,
        )


@strawberry.type(
    description="Which waiting work, of which queues or workflows, is told to a channel."
)
class NotificationRule:
    id: strawberry.ID
    name: str
    event: NotificationEvent
    queues: list[str] | None
    workflows: list[str] | None
    unclaimed_after_seconds: int | None = strawberry.field(
        description="UNCLAIMED: how long an item waits unclaimed before it is told."
    )
    channel_id: strawberry.ID
    channel_name: str
    enabled: bool
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_domain(cls, rule: notifications.NotificationRule) -> NotificationRule:
        return cls(
            id=strawberry.ID(rule.id),
            name=rule.name,
            event=rule.event,
            queues=None if rule.queues is None else list(rule.queues),
            workflows=None if rule.workflows is None else list(rule.workflows),
            unclaimed_after_seconds=rule.unclaimed_after_seconds,
            channel_id=strawberry.ID(rule.channel_id),
            channel_name=rule.channel_name,
            enabled=rule.enabled,
            created_by=rule.created_by,
            created_at=rule.created_at,
            updated_at=rule.updated_at,
        )


@strawberry.type
class NotificationChannelList:
    channels: list[NotificationChannel]


@strawberry.type
class NotificationRuleList:
    rules: list[NotificationRule]


NotificationChannelsResult = Annotated[
    NotificationChannelList | NotPermitted, strawberry.union("NotificationChannelsResult")
]
NotificationRulesResult = Annotated[
    NotificationRuleList | NotPermitted, strawberry.union("NotificationRulesResult")
]
CreateNotificationChannelResult = Annotated[
    NotificationChannel | NotPermitted | InvalidInput,
    strawberry.union("CreateNotificationChannelResult"),
]
NotificationChannelResult = Annotated[
    NotificationChannel | NotPermitted | InvalidInput | NotFound,
    strawberry.union("NotificationChannelResult"),
]
CreateNotificationRuleResult = Annotated[
    NotificationRule | NotPermitted | InvalidInput,
    strawberry.union("CreateNotificationRuleResult"),
]
UpdateNotificationRuleResult = Annotated[
    NotificationRule | NotPermitted | InvalidInput | NotFound,
    strawberry.union("UpdateNotificationRuleResult"),
]
DeleteNotificationRuleResult = Annotated[
    NotificationRule | NotPermitted | InvalidInput | NotFound,
    strawberry.union("DeleteNotificationRuleResult"),
]


@strawberry.input(description="A notification channel.")
class CreateNotificationChannelInput:
    name: str
    kind: ChannelKind
    target: str = strawberry.field(
        description="EMAIL: addresses, comma-separated. SLACK, TEAMS: the incoming webhook's "
        "URL (to a host CASEWORK_EFFECT_ALLOWED_HOSTS allows, when set). APPRISE: an Apprise URL."
    )
    rate_per_minute: int = strawberry.field(
        default=channels.DEFAULT_RATE_PER_MINUTE, description="1 to 600."
    )
    digest_minutes: int | None = strawberry.field(
        default=None, description="1 to 1440; null: one message per notification."
    )
    enabled: bool = True


@strawberry.input(description="What to change; null leaves a setting as it is.")
class UpdateNotificationChannelInput:
    name: str | None = None
    target: str | None = None
    rate_per_minute: int | None = None
    digest_minutes: int | None = None
    clear_digest: bool = strawberry.field(
        default=False, description="Turn the digest off: one message per notification."
    )
    enabled: bool | None = None


@strawberry.input(description="A notification rule: give queues or workflows.")
class CreateNotificationRuleInput:
    name: str
    event: NotificationEvent
    channel_id: strawberry.ID
    queues: list[str] | None = None
    workflows: list[str] | None = None
    unclaimed_after_seconds: int | None = strawberry.field(
        default=None, description="UNCLAIMED rules only (and required there): 60 to 2592000."
    )
    enabled: bool = True


@strawberry.input(
    description="What to change; null leaves a setting as it is. Giving queues drops the "
    "workflows, and the other way round. Applies to events from now on."
)
class UpdateNotificationRuleInput:
    name: str | None = None
    event: NotificationEvent | None = None
    channel_id: strawberry.ID | None = None
    queues: list[str] | None = None
    workflows: list[str] | None = None
    unclaimed_after_seconds: int | None = None
    enabled: bool | None = None


def _rule_input(
    given: CreateNotificationRuleInput | UpdateNotificationRuleInput,
) -> notifications.RuleInput:
    return notifications.RuleInput(
        name=given.name,
        event=given.event,
        queues=given.queues,
        workflows=given.workflows,
        unclaimed_after_seconds=given.unclaimed_after_seconds,
        channel_id=None if given.channel_id is None else str(given.channel_id),
        enabled=given.enabled,
    )


def _channel(
    result: channels.NotificationChannel
    | failures.NotPermitted
    | failures.InvalidInput
    | failures.NotFound,
) -> NotificationChannel | NotPermitted | InvalidInput | NotFound:
    return from_failure(result) if is_failure(result) else NotificationChannel.from_domain(result)


def _rule(
    result: notifications.NotificationRule
    | failures.NotPermitted
    | failures.InvalidInput
    | failures.NotFound,
) -> NotificationRule | NotPermitted | InvalidInput | NotFound:
    return from_failure(result) if is_failure(result) else NotificationRule.from_domain(result)


@strawberry.type
class NotificationQuery:
    @strawberry.field(description="Every notification channel. Admins.")
    async def notification_channels(self, info: Info[Context, None]) -> NotificationChannelsResult:
        ctx = info.context
        result = await channels.list_channels(ctx.db, ctx.principal)
        if is_failure(result):
            return from_failure(result)
        return NotificationChannelList(
            channels=[NotificationChannel.from_domain(c) for c in result]
        )

    @strawberry.field(description="Every notification rule your token may change. Admins.")
    async def notification_rules(self, info: Info[Context, None]) -> NotificationRulesResult:
        ctx = info.context
        result = await notifications.list_rules(ctx.db, ctx.principal)
        if is_failure(result):
            return from_failure(result)
        return NotificationRuleList(rules=[NotificationRule.from_domain(r) for r in result])


@strawberry.type
class NotificationMutation:
    @strawberry.mutation(description="Creates a notification channel. Admins.")
    async def create_notification_channel(
        self, info: Info[Context, None], input: CreateNotificationChannelInput
    ) -> CreateNotificationChannelResult:
        ctx = info.context
        result = await channels.create_channel(
            ctx.db,
            ctx.principal,
            channels.ChannelInput(
                name=input.name,
                kind=input.kind,
                target=input.target,
                rate_per_minute=input.rate_per_minute,
                digest_minutes=input.digest_minutes,
                enabled=input.enabled,
            ),
            allowed_hosts=ctx.effect_allowed_hosts,
        )
        if is_failure(result):
            return from_failure(result)
        return NotificationChannel.from_domain(result)

    @strawberry.mutation(
        description="Changes a channel (not its kind). Its target, rate and digest apply to "
        "pending notifications too. Admins."
    )
    async def update_notification_channel(
        self, info: Info[Context, None], id: strawberry.ID, input: UpdateNotificationChannelInput
    ) -> NotificationChannelResult:
        ctx = info.context
        result = await channels.update_channel(
            ctx.db,
            ctx.principal,
            id,
            channels.ChannelInput(
                name=input.name,
                target=input.target,
                rate_per_minute=input.rate_per_minute,
                digest_minutes=input.digest_minutes,
                clear_digest=input.clear_digest,
                enabled=input.enabled,
            ),
            allowed_hosts=ctx.effect_allowed_hosts,
        )
        return _channel(result)

    @strawberry.mutation(
        description="Deletes a channel with its notifications; refused (InvalidInput) while "
        "rules send to it. Answers it as it was. Admins."
    )
    async def delete_notification_channel(
        self, info: Info[Context, None], id: strawberry.ID
    ) -> NotificationChannelResult:
        ctx = info.context
        return _channel(await channels.delete_channel(ctx.db, ctx.principal, id))

    @strawberry.mutation(
        description="Creates a notification rule; it applies to events from now on. Admins, "
        "for queues and workflows their token may change."
    )
    async def create_notification_rule(
        self, info: Info[Context, None], input: CreateNotificationRuleInput
    ) -> CreateNotificationRuleResult:
        ctx = info.context
        result = await notifications.create_rule(ctx.db, ctx.principal, _rule_input(input))
        if is_failure(result):
            return from_failure(result)
        return NotificationRule.from_domain(result)

    @strawberry.mutation(description="Changes a notification rule. Admins.")
    async def update_notification_rule(
        self, info: Info[Context, None], id: strawberry.ID, input: UpdateNotificationRuleInput
    ) -> UpdateNotificationRuleResult:
        ctx = info.context
        return _rule(await notifications.update_rule(ctx.db, ctx.principal, id, _rule_input(input)))

    @strawberry.mutation(
        description="Deletes a rule with its notifications, sent or not. Answers it as it "
        "was. Admins."
    )
    async def delete_notification_rule(
        self, info: Info[Context, None], id: strawberry.ID
    ) -> DeleteNotificationRuleResult:
        ctx = info.context
        result = await notifications.delete_rule(ctx.db, ctx.principal, id)
        return from_failure(result) if is_failure(result) else NotificationRule.from_domain(result)
