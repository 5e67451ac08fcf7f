"""The notification channel and its payload. NOTIFY is a hint: ids only, never state.

Every payload is built by the SQL function `casework_hint` (db/migrations/0007), which the
statements in db/queries call with named arguments; `parse_event` is the one place that
reads them. tests/migrations/test_hint_function.py holds the two together, key by key.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from datetime import datetime

CHANNEL = "casework_events"
# PostgreSQL refuses a NOTIFY payload of 8000 bytes or more.
MAX_PAYLOAD_BYTES = 7999


class EventKind(enum.StrEnum):
    """What a hint says happened. The values are what the SQL passes as
    `casework_hint(kind => ...)` (tests/unit/test_event_kinds.py holds the two together)."""

    ENQUEUED = "enqueued"
    CLAIMED = "claimed"
    RENEWED = "renewed"
    RELEASED = "released"
    DECIDED = "decided"
    ESCALATED = "escalated"
    OVERTURNED = "overturned"
    EXCEPTION = "exception"
    # A note was added to the item's timeline.
    NOTED = "noted"
    # Claim controls (migration 0014).
    REVOKED = "revoked"
    HELD = "held"
    RESUMED = "resumed"
    ASSIGNED = "assigned"
    UNASSIGNED = "unassigned"
    # A decision needing a second review was recorded, provisional (migration 0020): its
    # item left the decision's queue (`from`) for the second-review queue (`q`), unleased.
    SECOND_REVIEW = "second_review"
    # A bulk action (migration 0016) changed many items of the queue at once: `item_ids`
    # lists them (`more`: not all).
    BULK = "bulk"
    # Made by this process only, never by the database: see server/events/expiry.py.
    EXPIRED = "expired"
    OVERDUE = "overdue"


# What only a process's own timer says; a payload from the database saying it is not trusted.
TIMER_KINDS = frozenset({EventKind.EXPIRED, EventKind.OVERDUE})
# What a payload from the database may say; any other kind is not trusted.
DATABASE_KINDS = frozenset(EventKind) - TIMER_KINDS


@dataclass(frozen=True)
class Event:
    # parse_event and the expiry timer always give an EventKind; a StrEnum is a str, so
    # events built from plain strings (as tests do) compare the same.
    kind: EventKind
    queue: str
    item_id: int | None = None
    decision_id: int | None = None
    # The queue an escalated item left.
    from_queue: str | None = None
    # Items whose payload changed (a re-upload); `more` means the list was cut short.
    evidence_changed: tuple[int, ...] = field(default=())
    more: bool = False
    # The items a bulk action changed (`more` again means the list was cut short).
    item_ids: tuple[int, ...] = field(default=())
    owner: str | None = None
    # For the timer's kinds, when the deadline it announces passed: the lease ran out
    # (EXPIRED), the item fell due (OVERDUE).
    passed_at: datetime | None = None
    # For EventKind.EXCEPTION: the workflows concerned, and other queues the change touched.
    workflows: tuple[str, ...] = field(default=())
    other_queues: tuple[str, ...] = field(default=())
    # The hint was too long for NOTIFY and was sent cut to its kind and queue (migration
    # 0030): what else it named is unknown, so every subscriber resyncs.
    cut: bool = False

    @property
    def queues(self) -> tuple[str, ...]:
        named = (self.queue, self.from_queue, *self.other_queues)
        return tuple(dict.fromkeys(q for q in named if q))


def parse_event(payload: str) -> Event | None:
    """None for anything this process cannot trust: it resyncs instead of guessing."""
    if len(payload.encode()) > MAX_PAYLOAD_BYTES:
        return None
    try:
        data = json.loads(payload)
        kind, queue = data["k"], data["q"]
    except (ValueError, KeyError, TypeError):
        return None
    if kind not in DATABASE_KINDS or not isinstance(queue, str):
        return None
    return Event(
        kind=EventKind(kind),
        queue=queue,
        item_id=data.get("i"),
        decision_id=data.get("d"),
        from_queue=data.get("from"),
        evidence_changed=tuple(data.get("e") or ()),
        more=bool(data.get("more")),
        item_ids=_ids(data.get("is") or []),
        workflows=_names(data.get("ws") or ([data["w"]] if data.get("w") else [])),
        other_queues=_names(data.get("qs") or []),
        cut=data.get("cut") is True,
    )


def _ids(value: object) -> tuple[int, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))


def _names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str))
