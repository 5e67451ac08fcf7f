"""The kinds of thing that happen to a review item, as its timeline shows them, and the
reading of one item's timeline (ReviewItem.events).

`item_events.kind` (db/migrations/0012_item_timeline.sql) holds the kinds written there;
`CLAIMED`, `DECIDED`, `OVERTURNED` and `QA_SAMPLED` (and the `ESCALATED` of a verdict), and
the second review's `SECOND_REVIEW`, `CONFIRMED` and `OVERRIDDEN`, are read from the records
that already hold them (the lease's ending, review_decisions, decision_confirmations, the QA
copy), so the claim+decide cycle writes no timeline row. item_events_get_pages
(db/queries/timeline.sql) merges the two, in one order.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from server.domain.rows import from_row
from server.store import sql
from server.store.database import Database, Row


class TimelineKind(enum.StrEnum):
    ENQUEUED = "enqueued"
    REUPLOADED = "reuploaded"
    CLAIMED = "claimed"
    RENEWED = "renewed"
    RELEASED = "released"
    LAPSED = "lapsed"
    REVOKED = "revoked"
    ESCALATED = "escalated"
    MOVED = "moved"
    HELD = "held"
    RESUMED = "resumed"
    ASSIGNED = "assigned"
    UNASSIGNED = "unassigned"
    NOTED = "noted"
    DECIDED = "decided"
    OVERTURNED = "overturned"
    # Second review (migration 0020), read from review_decisions and decision_confirmations.
    SECOND_REVIEW = "second_review"
    CONFIRMED = "confirmed"
    OVERRIDDEN = "overridden"
    # QA sampling (migration 0021), on the item whose decision was sampled: copied to the QA
    # queue (by `casework`, role `system`; read from the copy), and checked by a QA reviewer
    # (stored, the note as body).
    QA_SAMPLED = "qa_sampled"
    QA_CHECKED = "qa_checked"
    # A notification to the owners of waiting work (issue 28), read from
    # notification_deliveries: its rule, channel, state and sent time.
    NOTIFIED = "notified"


# The kinds `item_events` stores; the others are derived when the timeline is read.
STORED_KINDS = frozenset(TimelineKind) - {
    TimelineKind.CLAIMED,
    TimelineKind.DECIDED,
    TimelineKind.OVERTURNED,
    TimelineKind.SECOND_REVIEW,
    TimelineKind.CONFIRMED,
    TimelineKind.OVERRIDDEN,
    TimelineKind.QA_SAMPLED,
    TimelineKind.NOTIFIED,
}


@dataclass(frozen=True)
class Position:
    """Where an event sits in its item's timeline: the query's total order (at, rank, ref)."""

    at: datetime
    rank: int
    ref: int

    def __str__(self) -> str:
        return f"{(self.at - EPOCH) // MICROSECOND}.{self.rank}.{self.ref}"

    @classmethod
    def parse(cls, text: str) -> Position | None:
        """The position `str` wrote, or None for any other text."""
        parts = text.split(".")
        if len(parts) != 3 or not all(_INTEGER.fullmatch(part) for part in parts):
            return None
        micros, rank, ref = (int(part) for part in parts)
        # What the query's columns hold (int, bigint): anything else is not a position.
        if not (-(2**31) <= rank < 2**31 and -(2**63) <= ref < 2**63):
            return None
        try:
            return cls(EPOCH + micros * MICROSECOND, rank, ref)
        except OverflowError:
            return None


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
_INTEGER = re.compile(r"-?[0-9]{1,19}")


@dataclass(frozen=True)
class TimelineLease:
    """The lease an event happened under, as a reader may know it: never by its token."""

    # A one-way hash of the token: tells two leases apart, opens nothing.
    id: str
    owner: str
    started_at: datetime


# The columns of the kinds that have them (TimelineEvent's fields of these names).
_KIND_COLUMNS = (
    "evidence_hash",
    "from_queue",
    "to_queue",
    "until",
    "decision_id",
    "hold_reason",
    "assignee",
    "authentication_id",
    "notification_rule",
    "notification_channel",
    "notification_state",
    "notification_event",
    "notification_sent_at",
)


@dataclass(frozen=True)
class TimelineEvent:
    item_id: int
    kind: TimelineKind
    at: datetime
    position: Position
    # The queue the item was in when it happened.
    queue: str
    actor: str
    actor_role: str
    # A note's text, a revocation's reason, a decision's note.
    body: str | None
    lease: TimelineLease | None
    # When item_events recorded it; None for what is read from other records.
    recorded_at: datetime | None
    # Particular to some kinds: the evidence of an enqueue or re-upload, the queues of an
    # escalation or a move, the end of a renewed lease, the decision a kind was read from.
    evidence_hash: str | None = None
    from_queue: str | None = None
    to_queue: str | None = None
    until: datetime | None = None
    decision_id: int | None = None
    # A hold's reason code; the reviewer an assignment named.
    hold_reason: str | None = None
    assignee: str | None = None
    # How the actor authenticated (migration 0023): its row in `authentications`; None on
    # what Casework does itself, on claims, and on rows older than it.
    authentication_id: int | None = None
    # NOTIFIED: the rule, the channel's name, the state (pending, sent, failed), what the
    # rule tells of, and when it was sent.
    notification_rule: str | None = None
    notification_channel: str | None = None
    notification_state: str | None = None
    notification_event: str | None = None
    notification_sent_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Row) -> TimelineEvent:
        lease_id = row.get("lease_id")
        return from_row(
            cls,
            row,
            optional=_KIND_COLUMNS,
            kind=TimelineKind(row["kind"]),
            position=Position(row["at"], row["rank"], row["ref"]),
            lease=(
                TimelineLease(lease_id, row["lease_owner"], row["lease_started_at"])
                if lease_id is not None
                else None
            ),
        )


@dataclass(frozen=True)
class PageKey:
    """One page of one item's timeline; pages that differ only in the item share a query."""

    item_id: int
    after: Position | None
    size: int


async def events_pages(db: Database, keys: list[PageKey]) -> dict[PageKey, list[TimelineEvent]]:
    """The pages asked for, one statement per distinct (after, size)."""
    found: dict[PageKey, list[TimelineEvent]] = {}
    for after, size in {(key.after, key.size) for key in keys}:
        item_ids = sorted({key.item_id for key in keys if (key.after, key.size) == (after, size)})
        by_item: dict[int, list[TimelineEvent]] = {item_id: [] for item_id in item_ids}
        rows = await db.fetch(
            sql.timeline.ITEM_EVENTS_GET_PAGES,
            item_ids=item_ids,
            after_at=after.at if after else None,
            after_rank=after.rank if after else None,
            after_ref=after.ref if after else None,
            page_size=size,
        )
        for row in rows:
            by_item[row["item_id"]].append(TimelineEvent.from_row(row))
        for item_id, events in by_item.items():
            found[PageKey(item_id, after, size)] = events
    return found


async def latest_stored_event_id(db: Database, item_id: int) -> int | None:
    """The id of the newest row item_events holds for the item, if any."""
    row = await db.fetchrow(sql.timeline.ITEM_EVENTS_GET_LATEST_ID, item_id=item_id)
    assert row is not None, "an aggregate always answers"
    latest: int | None = row["latest_id"]
    return latest
