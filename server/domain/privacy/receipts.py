"""What an erasure answers: a receipt, or a deferral with its basis and end.

A receipt names what was erased (items and paths, never values), when, on whose request and
approval, and for each item the evidence hash with every field's digest: recomputing
SHA-256 of {"fields": {path: digest}, "policy_version": n} gives the hash back, so the
evidence a decision pinned still verifies after its personal values are gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from server.domain.privacy.sealing import policy_evidence_hash
from server.store import sql
from server.store.database import Database


@dataclass(frozen=True)
class ReceiptField:
    path: str
    field_class: str
    digest: str
    # Its value and salt are destroyed: the digest stays, and can no longer be confirmed.
    erased: bool


@dataclass(frozen=True)
class ReceiptItem:
    item_id: int
    evidence_hash: str
    policy_version: int | None
    erased_paths: tuple[str, ...]
    fields: tuple[ReceiptField, ...]
    # policy_evidence_hash(policy_version, the digests) == evidence_hash, when written.
    verifies: bool


@dataclass(frozen=True)
class ErasureReceipt:
    request_id: int
    subject_ref: str
    erased_at: datetime
    requested_by: str | None
    approved_by: str | None
    basis: str | None
    items: tuple[ReceiptItem, ...]
    fields_erased: int
    notes_erased: int
    keys_shredded: int
    # Items of the subject a hold still kept (a hold placed meanwhile): not erased.
    held_item_ids: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "subject_ref": self.subject_ref,
            "erased_at": self.erased_at.isoformat(),
            "requested_by": self.requested_by,
            "approved_by": self.approved_by,
            "basis": self.basis,
            "fields_erased": self.fields_erased,
            "notes_erased": self.notes_erased,
            "keys_shredded": self.keys_shredded,
            "held_item_ids": list(self.held_item_ids),
            "items": [
                {
                    "item_id": item.item_id,
                    "evidence_hash": item.evidence_hash,
                    "policy_version": item.policy_version,
                    "erased_paths": list(item.erased_paths),
                    "verifies": item.verifies,
                    "fields": [
                        {
                            "path": f.path,
                            "class": f.field_class,
                            "digest": f.digest,
                            "erased": f.erased,
                        }
                        for f in item.fields
                    ],
                }
                for item in self.items
            ],
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ErasureReceipt:
        return cls(
            request_id=document["request_id"],
            subject_ref=document["subject_ref"],
            erased_at=datetime.fromisoformat(document["erased_at"]),
            requested_by=document["requested_by"],
            approved_by=document["approved_by"],
            basis=document["basis"],
            fields_erased=document["fields_erased"],
            notes_erased=document["notes_erased"],
            keys_shredded=document["keys_shredded"],
            held_item_ids=tuple(document.get("held_item_ids", ())),
            items=tuple(
                ReceiptItem(
                    item_id=item["item_id"],
                    evidence_hash=item["evidence_hash"],
                    policy_version=item["policy_version"],
                    erased_paths=tuple(item["erased_paths"]),
                    verifies=item["verifies"],
                    fields=tuple(
                        ReceiptField(f["path"], f["class"], f["digest"], f["erased"])
                        for f in item["fields"]
                    ),
                )
                for item in document["items"]
            ),
        )


@dataclass(frozen=True)
class DeferralReason:
    """One thing an erasure waits on: a hold, or a retention class's period."""

    kind: str  # "hold" or "retention"
    basis: str
    # When it ends; None: not known (a hold without an end, a period not started yet).
    until: datetime | None
    item_ids: tuple[int, ...]
    hold_id: int | None = None
    retention_class: str | None = None


@dataclass(frozen=True)
class ErasureDeferred:
    request_id: int
    subject_ref: str
    # Every distinct basis the erasure waits on, in one sentence.
    basis: str
    # When the last of them ends; None when one of them has no known end.
    until: datetime | None
    restricted_at: datetime
    deferred_by: str
    reasons: tuple[DeferralReason, ...]


def deferral_of(reasons: Sequence[DeferralReason]) -> tuple[str, datetime | None]:
    """(the bases in one sentence, when the last ends or None if any end is unknown)."""
    bases = list(dict.fromkeys(reason.basis for reason in reasons))
    ends = [reason.until for reason in reasons]
    until = None if any(end is None for end in ends) else max(e for e in ends if e is not None)
    return "; ".join(bases), until


async def evidence_of(
    db: Database, erased_paths: Mapping[int, Sequence[str]]
) -> tuple[ReceiptItem, ...]:
    """Each item's current evidence hash with its field digests, and whether they verify."""
    if not erased_paths:
        return ()
    rows = await db.fetch(sql.privacy_erasure.RECEIPT_FIELDS, item_ids=sorted(erased_paths))
    by_item: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_item.setdefault(row["item_id"], []).append(row)
    items = []
    for item_id in sorted(erased_paths):
        fields = by_item.get(item_id, [])
        if not fields:
            continue
        version = fields[0]["policy_version"]
        evidence_hash = fields[0]["evidence_hash"]
        digests = {f["path"]: f["digest"] for f in fields}
        items.append(
            ReceiptItem(
                item_id=item_id,
                evidence_hash=evidence_hash,
                policy_version=version,
                erased_paths=tuple(sorted(erased_paths[item_id])),
                fields=tuple(
                    ReceiptField(f["path"], f["class"], f["digest"], f["erased_at"] is not None)
                    for f in fields
                ),
                verifies=version is not None
                and policy_evidence_hash(version, digests) == evidence_hash,
            )
        )
    return tuple(items)
