"""Retention: how long a policy item's personal values are kept, and from which moment.

A queue's policy version names a retention class: a duration and an anchor. The anchor is
the item's enqueue (`enqueued`), its decision (`decided`), or the end of the business
relationship with the subject (`relationship_ended`), which the integration reports with
`reportRelationshipEnded`. Until the anchor has happened the period has not started: an
undecided item, or a subject whose relationship end nobody reported, is kept (and an erasure
request waits, restricted). When the period ends, the retention worker erases the item's
personal values (server/retention_worker.py); the item, its decisions and digests remain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.model import Principal, Role
from server.store import sql
from server.store.database import Database

# A relationship end reported this far ahead of the server's clock is taken as a clock skew;
# further is refused: the relationship has not ended yet.
CLOCK_SKEW = timedelta(minutes=5)
MAX_SUBJECT_REF = 200


@dataclass(frozen=True)
class RetentionPeriod:
    item_id: int
    retention_class: str
    basis: str
    anchor: str
    keep_seconds: int
    # None: the anchor has not happened, so the period has not started (nor can it end).
    anchor_at: datetime | None
    ends_at: datetime | None

    def running(self, now: datetime) -> bool:
        return self.ends_at is None or self.ends_at > now


@dataclass(frozen=True)
class RelationshipEnded:
    subject_ref: str
    relationship_ended_at: datetime


async def retention_periods(db: Database, item_ids: Sequence[int]) -> list[RetentionPeriod]:
    """The retention period of each item that has a class (items without one are kept until
    an erasure request or a retention class says otherwise)."""
    if not item_ids:
        return []
    rows = await db.fetch(sql.privacy_erasure.RETENTION_OF_ITEMS, item_ids=list(item_ids))
    return [
        RetentionPeriod(
            item_id=r["item_id"],
            retention_class=r["retention_class"],
            basis=r["basis"],
            anchor=r["anchor"],
            keep_seconds=r["keep_seconds"],
            anchor_at=r["anchor_at"],
            ends_at=r["ends_at"],
        )
        for r in rows
    ]


@dataclass(frozen=True)
class DueSubject:
    subject_ref: str
    item_ids: tuple[int, ...]


async def due_for_erasure(db: Database, now: datetime, batch: int) -> list[DueSubject]:
    """Subjects with items whose retention ended by `now`, personal values left, no hold."""
    rows = await db.fetch(sql.privacy_erasure.RETENTION_DUE, now=now, batch=batch)
    return [DueSubject(r["subject_ref"], tuple(r["item_ids"])) for r in rows]


async def report_relationship_ended(
    db: Database,
    principal: Principal,
    subject_ref: str,
    at: datetime,
    now: datetime | None = None,
) -> RelationshipEnded | NotPermitted | InvalidInput | NotFound:
    """The integration says the business relationship with the subject ended at `at`: the
    anchor of `relationship_ended` retention. Reporting again replaces the date (the log
    keeps both)."""
    if principal.role is not Role.INTEGRATION:
        return NotPermitted("only the integration role reports the end of a relationship")
    if not 1 <= len(subject_ref) <= MAX_SUBJECT_REF:
        return InvalidInput(f"subjectRef must be 1 to {MAX_SUBJECT_REF} characters", "subjectRef")
    now = now or datetime.now(UTC)
    if at.tzinfo is None:
        return InvalidInput("at needs a time zone offset", "at")
    if at > now + CLOCK_SKEW:
        return InvalidInput("at is in the future: report the end once it has happened", "at")
    scope = principal.queue_scope()
    if scope is not None:
        # A token limited to some queues speaks for the subjects it sent there only.
        items = await db.fetch(
            sql.privacy_erasure.SUBJECT_ITEMS, subject_ref=subject_ref, queues=scope
        )
        if not items:
            return NotFound("subject", subject_ref)
    row = await db.fetchrow(
        sql.privacy_erasure.SUBJECT_SET_RELATIONSHIP_ENDED,
        subject_ref=subject_ref,
        at=at,
        **principal.actor(),
    )
    assert row is not None
    return RelationshipEnded(row["subject_ref"], row["relationship_ended_at"])
