"""Subscriptions (graphql-transport-ws only). The tables are the truth: an event only says
where to look, and every resync re-reads."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.failures import InvalidInput
from server.domain.model import Decision as DomainDecision
from server.domain.model import Item
from server.domain.parsing import parse_id
from server.domain.review import live
from server.domain.timeline import events as timeline
from server.events.channels import TIMER_KINDS, Event, EventKind
from server.events.subscriber import Inbox, Resync
from server.graphql.codes import ClientError
from server.graphql.context import Context
from server.graphql.review.types import Decision, ReviewItem
from server.graphql.streams import commit_ordered, when_available


@strawberry.type
class QueueBacklog:
    queue: str
    pending: int
    leased: int
    oldest_pending_age_seconds: float | None
    resync: bool = strawberry.field(
        description="True after the server lost its event stream: this is a fresh snapshot."
    )


@strawberry.enum
class LeaseEventKind(enum.Enum):
    CLAIMED = "claimed"
    RENEWED = "renewed"
    RELEASED = "released"
    DECIDED = "decided"
    ESCALATED = "escalated"
    SECOND_REVIEW = strawberry.enum_value(
        "second_review",
        description="A decision needs a second review: the item left the queue it was "
        "decided in, unleased, for its second-review queue.",
    )
    EXPIRED = "expired"
    EXCEPTION = "exception"
    REVOKED = strawberry.enum_value("revoked", description="A manager ended the lease.")
    HELD = strawberry.enum_value(
        "held", description="The holder parked the item until a time; its lease ended."
    )
    RESUMED = strawberry.enum_value("resumed", description="A hold ended early.")
    ASSIGNED = strawberry.enum_value(
        "assigned", description="The item was reserved for a named reviewer."
    )
    UNASSIGNED = strawberry.enum_value("unassigned", description="An assignment ended early.")
    OVERDUE = strawberry.enum_value(
        "overdue", description="A waiting item passed its due time (nothing was written)."
    )
    BULK = strawberry.enum_value(
        "bulk",
        description="A manager's bulk action changed many items of the queue at once (their "
        "leases may have been revoked): re-read the queue.",
    )
    RESYNC = "resync"


@strawberry.type
class LeaseEvent:
    kind: LeaseEventKind
    queue: str
    item_id: strawberry.ID | None
    owner: str | None = strawberry.field(
        description="For EXPIRED: who held the lease; for OVERDUE: who holds it now, if anyone."
    )
    at: datetime


@strawberry.enum
class ItemUpdateKind(enum.Enum):
    LEASE_LOST = strawberry.enum_value(
        "lease_lost",
        description="The lease ran out, someone else claimed, or a manager revoked it.",
    )
    EVIDENCE_CHANGED = "evidence_changed"
    DECIDED = "decided"
    SECOND_REVIEW = strawberry.enum_value(
        "second_review",
        description="The decision made is provisional: the item went to its second-review "
        "queue (ReviewItem.awaitingSecondReview).",
    )
    DECISION_CHANGED = "decision_changed"
    ESCALATED = "escalated"
    RELEASED = strawberry.enum_value(
        "released", description="The holder gave the item back: a release, or a hold."
    )
    EXCEPTION_CHANGED = "exception_changed"
    NOTED = "noted"
    OVERDUE = strawberry.enum_value(
        "overdue", description="The item passed its due time (nothing was written)."
    )
    RESYNC = "resync"


@strawberry.type
class ItemUpdate:
    kind: ItemUpdateKind
    item: ReviewItem


def _require_queue(info: Info[Context, None], queue: str) -> None:
    if not info.context.principal.works_in(queue):
        raise ClientError(f"your token does not cover queue {queue!r}")


def _passed_before(event: Event, since: datetime) -> bool:
    """A lease that ran out, or an item that fell due, before the subscription began. The
    timer may look back further than that (to its last check), but it is not news to this
    subscriber."""
    return event.kind in TIMER_KINDS and event.passed_at is not None and event.passed_at <= since


# Hints a lease watcher is told of; the others (enqueued, overturned, noted) are not news
# to it.
LEASE_EVENT_KINDS = {
    EventKind.CLAIMED: LeaseEventKind.CLAIMED,
    EventKind.RENEWED: LeaseEventKind.RENEWED,
    EventKind.RELEASED: LeaseEventKind.RELEASED,
    EventKind.DECIDED: LeaseEventKind.DECIDED,
    EventKind.ESCALATED: LeaseEventKind.ESCALATED,
    EventKind.SECOND_REVIEW: LeaseEventKind.SECOND_REVIEW,
    EventKind.EXPIRED: LeaseEventKind.EXPIRED,
    EventKind.EXCEPTION: LeaseEventKind.EXCEPTION,
    EventKind.REVOKED: LeaseEventKind.REVOKED,
    EventKind.HELD: LeaseEventKind.HELD,
    EventKind.RESUMED: LeaseEventKind.RESUMED,
    EventKind.ASSIGNED: LeaseEventKind.ASSIGNED,
    EventKind.UNASSIGNED: LeaseEventKind.UNASSIGNED,
    EventKind.OVERDUE: LeaseEventKind.OVERDUE,
    EventKind.BULK: LeaseEventKind.BULK,
}

# What each hint means to an open console; a claim is decided in _item_kind, by whose it is.
# A resume or an assignment does not touch a lease: an open console is not told.
ITEM_UPDATE_KINDS = {
    EventKind.EXPIRED: ItemUpdateKind.LEASE_LOST,
    EventKind.ENQUEUED: ItemUpdateKind.EVIDENCE_CHANGED,
    EventKind.OVERTURNED: ItemUpdateKind.DECISION_CHANGED,
    EventKind.EXCEPTION: ItemUpdateKind.EXCEPTION_CHANGED,
    EventKind.DECIDED: ItemUpdateKind.DECIDED,
    EventKind.ESCALATED: ItemUpdateKind.ESCALATED,
    EventKind.SECOND_REVIEW: ItemUpdateKind.SECOND_REVIEW,
    EventKind.RELEASED: ItemUpdateKind.RELEASED,
    EventKind.NOTED: ItemUpdateKind.NOTED,
    EventKind.REVOKED: ItemUpdateKind.LEASE_LOST,
    EventKind.HELD: ItemUpdateKind.RELEASED,
    EventKind.OVERDUE: ItemUpdateKind.OVERDUE,
}

# What decisionEvents re-reads for: a decision that takes effect (a new row of
# review_decisions, or a confirmation, whose hint is `decided`). A provisional decision
# (`second_review`) is not delivered until it is confirmed.
DECISION_EVENT_KINDS = frozenset({EventKind.DECIDED, EventKind.ESCALATED, EventKind.OVERTURNED})


def _lease_kind(message: Event | Resync) -> LeaseEventKind | None:
    if isinstance(message, Resync):
        return LeaseEventKind.RESYNC
    return LEASE_EVENT_KINDS.get(message.kind)


def _item_kind(message: Event | Resync, item: Item, me: str) -> ItemUpdateKind | None:
    if isinstance(message, Resync):
        return ItemUpdateKind.RESYNC
    # A bulk action touches a lease only to revoke it: as after a claim, a console whose
    # lease is still there is not concerned, and one whose lease went is told so.
    if message.kind in (EventKind.CLAIMED, EventKind.BULK):
        return ItemUpdateKind.LEASE_LOST if item.lease_owner != me else None
    return ITEM_UPDATE_KINDS.get(message.kind)


@strawberry.type
class Subscription:
    @strawberry.subscription(description="A snapshot first, then each change (at most 4/s).")
    async def queue_backlog(
        self, info: Info[Context, None], queue: str
    ) -> AsyncGenerator[QueueBacklog, None]:
        _require_queue(info, queue)
        async with info.context.live.hub.watch_backlog(queue) as figures:
            info.context.joined(figures)
            while True:
                update = await figures.next()
                if not await info.context.still_authorized():
                    return
                backlog = update.backlog
                yield QueueBacklog(
                    queue=queue,
                    pending=backlog.pending,
                    leased=backlog.leased,
                    oldest_pending_age_seconds=backlog.oldest_pending_age_seconds,
                    resync=update.resync,
                )

    @strawberry.subscription(
        description="Claimed, renewed, released, decided, expired; EXCEPTION: an exception "
        "action moved or changed the item (its lease, if any, ended); the claim controls "
        "(revoked, held, resumed, assigned, unassigned); OVERDUE: an item fell due."
    )
    async def lease_events(
        self, info: Info[Context, None], queue: str
    ) -> AsyncGenerator[LeaseEvent, None]:
        _require_queue(info, queue)
        live_updates = info.context.live
        since = datetime.now(UTC)
        inbox = Inbox(
            accepts=lambda event: (
                event.kind != EventKind.ENQUEUED and not _passed_before(event, since)
            )
        )
        with live_updates.hub.subscribe(queues=(queue,), inbox=inbox):
            info.context.joined(inbox)
            live_updates.timer.watchers_changed()
            while True:
                message = await inbox.next()
                if not await info.context.still_authorized():
                    return
                kind = _lease_kind(message)
                if kind is None:
                    continue
                event = message if isinstance(message, Event) else None
                if event is not None and event.kind == EventKind.ESCALATED and event.queue != queue:
                    kind = LeaseEventKind.ESCALATED
                info.context.delivering(message)
                yield LeaseEvent(
                    kind=kind,
                    queue=queue,
                    item_id=strawberry.ID(str(event.item_id)) if event and event.item_id else None,
                    owner=event.owner if event else None,
                    at=datetime.now(UTC),
                )

    @strawberry.subscription(
        description="For an open console: its lease was lost (or revoked), the evidence "
        "changed, the item was decided, someone noted it (NOTED: read its events), or it "
        "fell due (OVERDUE)."
    )
    async def item_updates(
        self,
        info: Info[Context, None],
        item_id: strawberry.ID,
        lease_expires_at: Annotated[
            datetime | None,
            strawberry.argument(
                description="The end of the lease this console holds, as its claim or last "
                "renewal gave it: when the item's lease is not that one as the subscription "
                "starts (it was revoked or taken in between), RESYNC comes first."
            ),
        ] = None,
    ) -> AsyncGenerator[ItemUpdate, None]:
        ctx = info.context
        parsed = parse_id(item_id, "itemId")
        if isinstance(parsed, InvalidInput):
            raise ClientError(parsed.message)
        # Both first reads in one step, so that what a client does once this subscription
        # has read the item is caught by the comparison below, whatever it changes.
        first, first_event = await asyncio.gather(
            ctx.loaders.item.load(parsed), timeline.latest_stored_event_id(ctx.db, parsed)
        )
        if first is None or not ctx.principal.works_in(first.queue):
            raise ClientError(f"no item {parsed} that your token covers")
        since = datetime.now(UTC)

        def concerns_this_item(event: Event) -> bool:
            # The queue subscription is only there so the expiry timer watches the queue;
            # the queue's other traffic never enters this inbox.
            mentioned = (
                parsed in (event.item_id, *event.evidence_changed, *event.item_ids) or event.more
            )
            return mentioned and not _passed_before(event, since)

        inbox = Inbox(accepts=concerns_this_item)
        with ctx.live.hub.subscribe(items=(parsed,), queues=(first.queue,), inbox=inbox):
            ctx.live.timer.watchers_changed()
            # A change between the first read and joining the hub would otherwise be missed:
            # of the item's row, or of its timeline (a note changes no column of the item).
            ctx.forget_reads()
            if await ctx.loaders.item.load(parsed) != first or (
                await timeline.latest_stored_event_id(ctx.db, parsed) != first_event
            ):
                inbox.offer(Resync("the item changed while the subscription started"))
            elif lease_expires_at is not None and (
                first.lease_owner,
                first.lease_expires_at,
            ) != (ctx.principal.user, lease_expires_at):
                # The change came between the console's claim and this subscription's start.
                inbox.offer(Resync("the lease is not the one the console holds"))
            while True:
                message = await inbox.next()
                if not await ctx.still_authorized():
                    return
                # Re-read: the event only says where to look.
                ctx.forget_reads()
                found = await ctx.loaders.item.load(parsed)
                assert found is not None, "items are never deleted"
                kind = _item_kind(message, found, ctx.principal.user)
                if kind is not None:
                    yield ItemUpdate(kind=kind, item=ReviewItem.from_domain(found))

    @strawberry.subscription(
        description="Every decision of a queue in commit order, resumable: pass the id of the "
        "last decision you processed as `after`; without it the stream starts now. Each "
        "decision is delivered once, when it takes effect: a decision that needs a second "
        "review is delivered when it is confirmed (in the confirmation's commit order), and "
        "never if it is overridden (the override is delivered instead). So everything "
        "delivered is, or was, EFFECTIVE: act on it."
    )
    async def decision_events(
        self, info: Info[Context, None], queue: str, after: strawberry.ID | None = None
    ) -> AsyncGenerator[Decision, None]:
        _require_queue(info, queue)
        ctx = info.context
        inbox = Inbox(accepts=lambda event: event.kind in DECISION_EVENT_KINDS)
        # Listen before reading, so nothing committed in between is missed.
        with ctx.live.hub.subscribe(queues=(queue,), inbox=inbox):
            position = await when_available(
                inbox, functools.partial(live.stream_start, ctx.db, queue, after)
            )
            if isinstance(position, InvalidInput):
                raise ClientError(position.message)

            async def read_page(
                after: live.StreamPosition, limit: int
            ) -> list[tuple[live.StreamPosition, DomainDecision]]:
                return await live.decisions_after(ctx.db, queue, after, limit)

            async with contextlib.aclosing(
                commit_ordered(ctx, inbox, position, read_page)
            ) as decisions:
                async for decision in decisions:
                    yield Decision.from_domain(decision)
