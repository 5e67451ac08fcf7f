"""Enqueueing under a payload policy: split, refuse or drop, digest, then seal.

`prepare` runs before anything is written and answers what is wrong by path (never by
value); `store_fields` seals the personal and sensitive values in the enqueue's transaction,
once the items have ids (the ciphertext is bound to its item).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from server.domain.failures import InvalidInput
from server.domain.privacy.keys import DataKey, Keyring
from server.domain.privacy.policy import FieldClass, PrivacyPolicy, Unlisted, split_payload
from server.domain.privacy.sealing import field_digest, field_salt, policy_evidence_hash, seal
from server.store import sql
from server.store.database import Database

MAX_SUBJECT_REF = 200
# Paths named in one answer: enough to fix a producer, bounded for a batch of 1,000 items.
MAX_NAMED_PATHS = 50


@dataclass(frozen=True)
class PreparedField:
    path: str
    field_class: FieldClass
    value: Any
    salt: bytes
    digest: str


@dataclass(frozen=True)
class PreparedItem:
    external_key: str
    subject_ref: str
    public_payload: dict[str, Any]
    evidence_hash: str
    fields: tuple[PreparedField, ...]
    key: DataKey
    dropped: tuple[str, ...]


def _named(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:MAX_NAMED_PATHS])
    return shown + (
        f" and {len(paths) - MAX_NAMED_PATHS} more" if len(paths) > MAX_NAMED_PATHS else ""
    )


async def prepare(
    db: Database,
    keyring: Keyring | None,
    policy: PrivacyPolicy,
    index: int,
    external_key: str,
    subject_ref: str | None,
    payload: dict[str, Any],
) -> PreparedItem | InvalidInput:
    where = f"items[{index}]"
    split = split_payload(policy, payload)
    if split.secrets:
        # The paths only: the values are what must never be written anywhere.
        return InvalidInput(
            f"{where}.payload carries {_named(split.secrets)}, which queue {policy.queue!r}'s "
            "policy classes as secret: a secret is never accepted; remove it at the producer",
            f"{where}.payload",
        )
    if split.unlisted and policy.unlisted is Unlisted.REFUSE:
        return InvalidInput(
            f"{where}.payload carries {_named(split.unlisted)}, which queue {policy.queue!r}'s "
            "policy does not list (and it refuses unlisted paths)",
            f"{where}.payload",
        )
    if subject_ref is None:
        return InvalidInput(
            f"{where}.subjectRef is required: queue {policy.queue!r} has a privacy policy, and "
            "the subject is the unit of erasure and retention",
            f"{where}.subjectRef",
        )
    if not 1 <= len(subject_ref) <= MAX_SUBJECT_REF:
        return InvalidInput(
            f"{where}.subjectRef must be 1 to {MAX_SUBJECT_REF} characters", f"{where}.subjectRef"
        )
    if keyring is None:
        raise RuntimeError("a privacy policy's enqueue needs the keyring")
    key = await keyring.current(db, subject_ref)
    fields = []
    for path, (field_class, value) in sorted(split.values.items()):
        salt = field_salt(key.key, queue=policy.queue, external_key=external_key, path=path)
        fields.append(
            PreparedField(path, field_class, value, salt, field_digest(salt, path, value))
        )
    digests = {f.path: f.digest for f in fields}
    return PreparedItem(
        external_key=external_key,
        subject_ref=subject_ref,
        public_payload=split.public_payload(),
        evidence_hash=policy_evidence_hash(policy.version, digests),
        fields=tuple(fields),
        key=key,
        dropped=split.unlisted,
    )


async def store_fields(
    tx: Database, prepared: Sequence[PreparedItem], item_ids: Sequence[int]
) -> None:
    """Seals and inserts the fields of items just created or re-uploaded."""
    columns: dict[str, list[Any]] = {
        name: []
        for name in (
            "item_ids",
            "evidence_hashes",
            "paths",
            "classes",
            "subject_refs",
            "digests",
            "salts",
            "key_versions",
            "nonces",
            "ciphertexts",
        )
    }
    for item, item_id in zip(prepared, item_ids, strict=True):
        for f in item.fields:
            nonce: bytes | None = None
            ciphertext: bytes | None = None
            if f.field_class.encrypted:
                nonce, ciphertext = seal(
                    item.key.key,
                    item_id=item_id,
                    path=f.path,
                    key_version=item.key.version,
                    value=f.value,
                )
            for name, value in (
                ("item_ids", item_id),
                ("evidence_hashes", item.evidence_hash),
                ("paths", f.path),
                ("classes", f.field_class.value),
                ("subject_refs", item.subject_ref),
                ("digests", f.digest),
                ("salts", f.salt),
                ("key_versions", item.key.version if f.field_class.encrypted else None),
                ("nonces", nonce),
                ("ciphertexts", ciphertext),
            ):
                columns[name].append(value)
    if columns["item_ids"]:
        await tx.fetch(sql.privacy.ITEM_FIELDS_INSERT, **columns)
