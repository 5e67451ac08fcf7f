"""Enqueueing items: the input an integration sends and what it is answered."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from server.domain import model
from server.domain.review import items as enqueueing
from server.graphql.review.types import ReviewItem

# --- payloads -----------------------------------------------------------------------------


@strawberry.type
class EnqueuedItem:
    item: ReviewItem
    created: bool
    evidence_updated: bool = strawberry.field(
        description="The key was known and its pending item took the new payload."
    )
    dropped_paths: list[str] = strawberry.field(
        default_factory=list,
        description="Payload paths the queue's privacy policy does not list, dropped before "
        "anything was stored (by path, never by value): fix the producer.",
    )


@strawberry.type
class EnqueuedItems:
    items: list[EnqueuedItem]

    @classmethod
    def of(cls, enqueued: list[model.EnqueuedItem]) -> EnqueuedItems:
        return cls(
            items=[
                EnqueuedItem(
                    item=ReviewItem.from_domain(e.item),
                    created=e.created,
                    evidence_updated=e.evidence_updated,
                    dropped_paths=list(e.dropped_paths),
                )
                for e in enqueued
            ]
        )


# --- inputs -------------------------------------------------------------------------------


@strawberry.input
class NewItemInput:
    external_key: str = strawberry.field(
        description="The caller's key; enqueue is idempotent on it."
    )
    priority: int | None = None
    payload: JSON = strawberry.field(description="A JSON object, at most 64 KiB canonical.")
    due_at: datetime | None = strawberry.field(
        default=None,
        description="When the item is due; else the queue's dueSeconds for its priority. "
        "A known key keeps the due time it has.",
    )

    subject_ref: str | None = strawberry.field(
        default=None,
        description="The integration's id of the person or company the payload is about: "
        "the unit of erasure and retention. Required on a queue with a privacy policy.",
    )

    def to_domain(self) -> enqueueing.NewItem:
        return enqueueing.NewItem(
            self.external_key,
            self.payload,
            self.priority or 0,
            due_at=self.due_at,
            subject_ref=self.subject_ref,
        )
