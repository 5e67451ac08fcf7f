"""The item timeline: ReviewItem.events and the types it returns."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.types import Info

from server.domain.integrations.notification_kinds import NotificationEvent
from server.domain.integrations.notifications import NotificationState
from server.domain.privacy import notes
from server.domain.timeline import events as timeline
from server.graphql.codes import ClientError
from server.graphql.context import Context
from server.graphql.identity.types import Authentication, authentication_of
from server.graphql.pagination import PageInfo, decode_text_cursor, encode_cursor, page_size
from server.graphql.review.types import Decision, NoteState, decision_note

strawberry.enum(
    timeline.TimelineKind,
    name="TimelineKind",
    description="What happened to an item. CLAIMED, DECIDED and OVERTURNED (and ESCALATED "
    "by a verdict) are read from the lease's and the decision's own records, and so are "
    "the second review's: SECOND_REVIEW (a provisional decision sent the item to its "
    "second-review queue), CONFIRMED (a second reviewer confirmed it) and OVERRIDDEN (a "
    "second reviewer's decision replaced it); the rest are recorded as they happen. A "
    "LAPSED is recorded by the claim that notices it. "
    "QA_SAMPLED: the decision was copied to the QA queue (actor casework, role system; read "
    "from the copy); "
    "QA_CHECKED: a QA reviewer recorded agree or disagree (Decision.qaResult); "
    "NOTIFIED: the owners were notified by a rule (actor casework, role system; at when "
    "it became due; see notificationRule, notificationChannel, notificationState).",
)
TimelineKind = timeline.TimelineKind

CURSOR_KIND = "item_event"


@strawberry.type(
    description="The lease an event happened under, named by its holder and its start. "
    "Its token is never shown."
)
class TimelineLease:
    id: strawberry.ID = strawberry.field(
        description="A one-way hash of the lease's token: the same on every event of one "
        "lease, and no use as a token."
    )
    owner: str
    started_at: datetime


@strawberry.type(description="One thing that happened to an item.")
class ItemEvent:
    _event: strawberry.Private[timeline.TimelineEvent]
    kind: TimelineKind
    at: datetime = strawberry.field(
        description="When it happened; for a LAPSED, when the lease ran out."
    )
    queue: str = strawberry.field(description="The queue the item was in.")
    actor: str = strawberry.field(
        description="Who acted; for a LAPSED, whose lease ran out; for an ESCALATED without "
        "a decision, the reviewer whose claim found the item abandoned."
    )
    actor_role: str
    lease: TimelineLease | None = strawberry.field(
        description="The lease it happened under, if any: the claim's own for CLAIMED."
    )
    recorded_at: datetime | None = strawberry.field(
        description="When it was recorded, for kinds recorded as they happen (a LAPSED "
        "after `at`, when a claim noticed it); null for what is read from other records and "
        "for a lapse no claim has noticed yet."
    )
    evidence_hash: str | None = strawberry.field(
        description="ENQUEUED and REUPLOADED: the hash of the evidence as it became."
    )
    from_queue: str | None = strawberry.field(
        description="ESCALATED, MOVED, SECOND_REVIEW: the queue left."
    )
    to_queue: str | None = strawberry.field(
        description="ESCALATED, MOVED, SECOND_REVIEW: the queue the item went to. QA_SAMPLED: "
        "the QA queue."
    )
    until: datetime | None = strawberry.field(
        description="RENEWED: when the renewed lease runs out. HELD: when the hold ends. "
        "ASSIGNED: when the assignment ends (null: until unassigned or decided)."
    )
    hold_reason: str | None = strawberry.field(
        description="HELD, RESUMED: the code of the hold's reason (Queue.holdReasons)."
    )
    assignee: str | None = strawberry.field(
        description="ASSIGNED, UNASSIGNED: the reviewer the item was reserved for."
    )
    notification_rule: str | None = strawberry.field(description="NOTIFIED: the rule's name.")
    notification_event: NotificationEvent | None = strawberry.field(
        description="NOTIFIED: what the rule told of."
    )
    notification_channel: str | None = strawberry.field(description="NOTIFIED: the channel's name.")
    notification_state: NotificationState | None = strawberry.field(
        description="NOTIFIED: pending, sent or failed, as it is now."
    )
    notification_sent_at: datetime | None = strawberry.field(
        description="NOTIFIED: when it was sent (a digest's entries share it)."
    )

    @classmethod
    def from_domain(cls, event: timeline.TimelineEvent) -> ItemEvent:
        lease = event.lease
        return cls(
            _event=event,
            kind=event.kind,
            at=event.at,
            queue=event.queue,
            actor=event.actor,
            actor_role=event.actor_role,
            lease=(
                TimelineLease(
                    id=strawberry.ID(lease.id), owner=lease.owner, started_at=lease.started_at
                )
                if lease
                else None
            ),
            recorded_at=event.recorded_at,
            evidence_hash=event.evidence_hash,
            from_queue=event.from_queue,
            to_queue=event.to_queue,
            until=event.until,
            hold_reason=event.hold_reason,
            assignee=event.assignee,
            notification_rule=event.notification_rule,
            notification_event=None
            if event.notification_event is None
            else NotificationEvent(event.notification_event),
            notification_channel=event.notification_channel,
            notification_state=None
            if event.notification_state is None
            else NotificationState(event.notification_state),
            notification_sent_at=event.notification_sent_at,
        )

    @strawberry.field(
        description="A NOTED's text; the note of a decision; the reason of a REVOKED. A note "
        "on an item under a privacy policy is stored sealed: its text is shown to readers "
        "the policy shows personal values to, and null for others (see noteState)."
    )
    async def body(self, info: Info[Context, None]) -> str | None:
        reading = await self._sealed_note(info)
        return self._event.body if reading is None else reading.body

    @strawberry.field(
        description="NOTED, and a decision's note, on an item under a privacy policy: VISIBLE "
        "(body holds its text), "
        "WITHHELD (the policy does not show personal values to the caller's role, or the "
        "subject's data is restricted to compliance), ERASED (erased with the subject's "
        "data). Null on every other event."
    )
    async def note_state(self, info: Info[Context, None]) -> NoteState | None:
        reading = await self._sealed_note(info)
        return None if reading is None else reading.state

    async def _sealed_note(self, info: Info[Context, None]) -> notes.NoteReading | None:
        event = self._event
        if event.decision_id is not None:  # a decision's note, sealed in place or not
            return await decision_note(info, event.decision_id, event.item_id, event.body)
        # A note stored as text has its body; only a sealed one is stored without.
        if event.kind is not timeline.TimelineKind.NOTED or event.body is not None:
            return None
        ref = event.position.ref
        ctx = info.context
        return await ctx.loaders.sealed_notes(ctx.principal, ctx.keyring).load(ref)

    @strawberry.field(
        description="How the actor authenticated (credential kind, issuer, subject, session, "
        "sign-in time and acr, the rules that granted the role), on what people recorded: "
        "decisions, confirmations, overrides, overturns, notes, QA checks, revocations; "
        "null on claims, on what Casework did itself and on rows older than the record."
    )
    async def authentication(self, info: Info[Context, None]) -> Authentication | None:
        return await authentication_of(info, self._event.authentication_id)

    @strawberry.field(
        description="DECIDED, OVERTURNED, and an ESCALATED made by a verdict: the decision. "
        "SECOND_REVIEW: the provisional decision; CONFIRMED: the decision confirmed; "
        "OVERRIDDEN: the override (its `supersedes` is the provisional decision); "
        "QA_SAMPLED, QA_CHECKED: the decision sampled."
    )
    async def decision(self, info: Info[Context, None]) -> Decision | None:
        decision_id = self._event.decision_id
        if decision_id is None:
            return None
        found = await info.context.loaders.decision.load(decision_id)
        return Decision.from_domain(found) if found else None


@strawberry.type
class ItemEventEdge:
    cursor: str
    node: ItemEvent


@strawberry.type
class ItemEventConnection:
    edges: list[ItemEventEdge]
    page_info: PageInfo


def _after(cursor: str | None) -> timeline.Position | None:
    if cursor is None:
        return None
    position = timeline.Position.parse(decode_text_cursor(CURSOR_KIND, cursor))
    if position is None:
        raise ClientError(f"malformed cursor {cursor[:40]!r}")
    return position


async def item_events(
    info: Info[Context, None], item_id: int, first: int, after: str | None
) -> ItemEventConnection:
    size = page_size(first)
    found = await info.context.loaders.item_events.load(
        timeline.PageKey(item_id, _after(after), size + 1)
    )
    edges = [
        ItemEventEdge(
            cursor=encode_cursor(CURSOR_KIND, str(event.position)),
            node=ItemEvent.from_domain(event),
        )
        for event in found[:size]
    ]
    return ItemEventConnection(edges=edges, page_info=PageInfo.of(edges, read=found))
