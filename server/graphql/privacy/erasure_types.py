"""GraphQL types of holds, relationship ends, erasure requests, receipts and deferrals."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from server.domain.privacy import erasure, holds, receipts, retention
from server.graphql.errors import Error


def _ids(values: tuple[int, ...] | None) -> list[strawberry.ID] | None:
    return None if values is None else [strawberry.ID(str(v)) for v in values]


@strawberry.type(
    description="A hold: nothing of its subject (or of its items) is erased, by retention or "
    "by request, while it is live (not released, and its `until` not passed)."
)
class PrivacyHold:
    id: strawberry.ID
    subject_ref: str | None = strawberry.field(description="The subject held, or null.")
    item_ids: list[strawberry.ID] | None = strawberry.field(
        description="The items held, or null when the hold names a subject."
    )
    basis: str
    until: datetime | None = strawberry.field(
        description="When it ends by itself; null: when released."
    )
    placed_by: str
    placed_at: datetime
    released_by: str | None
    released_at: datetime | None
    release_reason: str | None

    @classmethod
    def of(cls, hold: holds.Hold) -> PrivacyHold:
        return cls(
            id=strawberry.ID(str(hold.id)),
            subject_ref=hold.subject_ref,
            item_ids=_ids(hold.item_ids),
            basis=hold.basis,
            until=hold.until,
            placed_by=hold.placed_by,
            placed_at=hold.placed_at,
            released_by=hold.released_by,
            released_at=hold.released_at,
            release_reason=hold.release_reason,
        )


@strawberry.type(description="The end of the business relationship with a subject, recorded.")
class RelationshipEnded:
    subject_ref: str
    relationship_ended_at: datetime = strawberry.field(
        description="The anchor of `relationship_ended` retention classes."
    )

    @classmethod
    def of(cls, ended: retention.RelationshipEnded) -> RelationshipEnded:
        return cls(subject_ref=ended.subject_ref, relationship_ended_at=ended.relationship_ended_at)


@strawberry.type(description="An erasure request, waiting for another compliance officer.")
class ErasureRequest:
    id: strawberry.ID
    subject_ref: str
    basis: str
    requested_by: str
    requested_at: datetime
    queues: list[str] | None = strawberry.field(
        description="The queues it covers (the requester's); null: every queue."
    )

    @classmethod
    def of(cls, request: erasure.ErasureRequest) -> ErasureRequest:
        return cls(
            id=strawberry.ID(str(request.id)),
            subject_ref=request.subject_ref,
            basis=request.basis,
            requested_by=request.requested_by,
            requested_at=request.requested_at,
            queues=None if request.queues is None else list(request.queues),
        )


@strawberry.type(description="One field of an item as a receipt shows it: never its value.")
class ReceiptField:
    path: str
    field_class: str = strawberry.field(name="class")
    digest: str = strawberry.field(
        description="SHA-256(salt || path || 0x00 || canonical JSON of the value), kept for "
        "ever. Once erased (value and salt destroyed) it can no longer be confirmed."
    )
    erased: bool


@strawberry.type(
    description="An item's evidence after the erasure: its digests still reproduce the "
    "evidence hash its decisions pinned."
)
class ReceiptItem:
    item_id: strawberry.ID
    evidence_hash: str
    policy_version: int | None
    erased_paths: list[str]
    fields: list[ReceiptField]
    verifies: bool = strawberry.field(
        description="SHA-256 of the canonical JSON of {fields: {path: digest}, "
        "policy_version} equals evidenceHash (checked when the receipt was written)."
    )


@strawberry.type(
    description="Proof of an erasure: what was erased (paths, never values), when, on whose "
    "request and approval, and the evidence that still verifies. Approving again answers "
    "the same receipt."
)
class ErasureReceipt:
    request_id: strawberry.ID
    subject_ref: str
    erased_at: datetime
    requested_by: str | None
    approved_by: str | None
    basis: str | None
    items: list[ReceiptItem]
    fields_erased: int
    notes_erased: int
    keys_shredded: int = strawberry.field(
        description="Data key versions destroyed (crypto-shredding): once none of the "
        "subject's sealed values is left anywhere."
    )
    held_item_ids: list[strawberry.ID] = strawberry.field(
        description="Items a hold placed meanwhile kept: not erased."
    )

    @classmethod
    def of(cls, receipt: receipts.ErasureReceipt) -> ErasureReceipt:
        return cls(
            request_id=strawberry.ID(str(receipt.request_id)),
            subject_ref=receipt.subject_ref,
            erased_at=receipt.erased_at,
            requested_by=receipt.requested_by,
            approved_by=receipt.approved_by,
            basis=receipt.basis,
            items=[
                ReceiptItem(
                    item_id=strawberry.ID(str(item.item_id)),
                    evidence_hash=item.evidence_hash,
                    policy_version=item.policy_version,
                    erased_paths=list(item.erased_paths),
                    fields=[
                        ReceiptField(
                            path=f.path, field_class=f.field_class, digest=f.digest, erased=f.erased
                        )
                        for f in item.fields
                    ],
                    verifies=item.verifies,
                )
                for item in receipt.items
            ],
            fields_erased=receipt.fields_erased,
            notes_erased=receipt.notes_erased,
            keys_shredded=receipt.keys_shredded,
            held_item_ids=_ids(receipt.held_item_ids) or [],
        )


@strawberry.enum(description="What an erasure waits on.")
class DeferralKind(enum.Enum):
    HOLD = "hold"
    RETENTION = "retention"


@strawberry.type
class DeferralReason:
    kind: DeferralKind
    basis: str
    until: datetime | None = strawberry.field(
        description="When it ends; null: unknown (a hold without an end; a retention period "
        "whose anchor, a decision or the relationship's end, has not happened yet)."
    )
    item_ids: list[strawberry.ID]
    hold_id: strawberry.ID | None
    retention_class: str | None


@strawberry.type(
    description="The erasure waits: a hold or a retention period (AML record keeping) keeps "
    "some of the subject's items. Meanwhile the subject is restricted (GDPR Art. 18): its "
    "personal values are shown to compliance roles only. The worker erases when the "
    "deferral ends, and the request's receipt is written then."
)
class ErasureDeferred:
    request_id: strawberry.ID
    subject_ref: str
    basis: str = strawberry.field(description="Every basis it waits on, in one sentence.")
    until: datetime | None = strawberry.field(
        description="When the last of them ends; null when one has no known end."
    )
    restricted_at: datetime
    deferred_by: str
    reasons: list[DeferralReason]

    @classmethod
    def of(cls, deferred: receipts.ErasureDeferred) -> ErasureDeferred:
        return cls(
            request_id=strawberry.ID(str(deferred.request_id)),
            subject_ref=deferred.subject_ref,
            basis=deferred.basis,
            until=deferred.until,
            restricted_at=deferred.restricted_at,
            deferred_by=deferred.deferred_by,
            reasons=[
                DeferralReason(
                    kind=DeferralKind(r.kind),
                    basis=r.basis,
                    until=r.until,
                    item_ids=_ids(r.item_ids) or [],
                    hold_id=None if r.hold_id is None else strawberry.ID(str(r.hold_id)),
                    retention_class=r.retention_class,
                )
                for r in deferred.reasons
            ],
        )


@strawberry.type(
    description="Four-eyes: whoever requested the erasure may not approve it. Nothing was written."
)
class FourEyesRequired(Error):
    request_id: strawberry.ID
