"""The kinds of thing that happen to a review item, as its timeline shows them.

`item_events.kind` (db/migrations/0012_item_timeline.sql) holds the kinds written there;
`CLAIMED`, `DECIDED` and `OVERTURNED` are read from the records that already hold them
(the lease's ending and review_decisions), so the claim+decide cycle writes no timeline row.
"""

from __future__ import annotations

import enum


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


# The kinds `item_events` stores; the others are derived when the timeline is read.
STORED_KINDS = frozenset(TimelineKind) - {
    TimelineKind.CLAIMED,
    TimelineKind.DECIDED,
    TimelineKind.OVERTURNED,
}
