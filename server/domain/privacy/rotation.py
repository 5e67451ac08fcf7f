"""Key rotation: every data key wrapped again under the provider's active KEK.

Only `privacy_subject_keys.kek_id` and `wrapped_key` change (the application role may
update those two columns and no other); the sealed values, their nonces, salts and digests
are untouched, so evidence hashes and decisions are byte-identical after a rotation. A key
already under the active KEK is skipped, so a rotation cut short is finished by running it
again, and a second run re-wraps nothing. A shredded key has nothing to wrap and stays so.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from server.domain.privacy.keys import KeyError_, KeyProvider, UnwrapFailed
from server.store import sql
from server.store.database import Database

BATCH_SIZE = 500


@dataclass(frozen=True)
class Rotation:
    kek_id: str  # the active KEK every data key is now wrapped by
    rewrapped: int
    rewrapped_from: dict[str, int]  # by the KEK that wrapped them before
    already_current: int  # keys under the active KEK before this run
    keys_by_kek: dict[str, int]  # after the run: data keys not shredded, by KEK
    log_id: int

    @property
    def retired(self) -> list[str]:
        """KEKs this run moved keys away from that no data key uses any more."""
        return sorted(kek for kek in self.rewrapped_from if kek not in self.keys_by_kek)


async def keys_by_kek(db: Database) -> dict[str, int]:
    rows = await db.fetch(sql.privacy_policy.SUBJECT_KEYS_COUNT_BY_KEK)
    return {row["kek_id"]: row["keys"] for row in rows}


async def rotate_keys(
    db: Database,
    provider: KeyProvider,
    *,
    actor: str,
    actor_role: str,
    batch_size: int = BATCH_SIZE,
) -> Rotation:
    """Re-wraps, in batches, every data key not under `provider.active_kek_id`, then logs
    one `key_rotated` row with the counts. Raises KeyError_ when a key does not unwrap (its
    KEK is missing from the provider, or the wrapped bytes are damaged): nothing of the batch
    is written, what earlier batches did stays done."""
    active = provider.active_kek_id
    before = await keys_by_kek(db)
    moved: Counter[str] = Counter()
    after_subject, after_version = "", 0
    while True:
        rows = await db.fetch(
            sql.privacy_policy.SUBJECT_KEYS_NOT_UNDER,
            kek_id=active,
            after_subject=after_subject,
            after_version=after_version,
            batch_size=batch_size,
        )
        if not rows:
            break
        new_keks: list[str] = []
        new_wrapped: list[bytes] = []
        for row in rows:
            try:
                data_key = await provider.unwrap(
                    row["kek_id"], row["subject_ref"], bytes(row["wrapped_key"])
                )
            except UnwrapFailed:
                # The subject's reference is personal data too: the key's version and KEK
                # say enough to find it.
                raise KeyError_(
                    f"a data key (version {row['key_version']}) wrapped by KEK "
                    f"{row['kek_id']!r} does not unwrap: its bytes or that KEK are not the "
                    "ones it was wrapped with"
                ) from None
            kek_id, wrapped = await provider.wrap(row["subject_ref"], data_key)
            new_keks.append(kek_id)
            new_wrapped.append(wrapped)
        updated = await db.fetch(
            sql.privacy_policy.SUBJECT_KEYS_REWRAP,
            subject_refs=[row["subject_ref"] for row in rows],
            key_versions=[row["key_version"] for row in rows],
            old_kek_ids=[row["kek_id"] for row in rows],
            new_kek_ids=new_keks,
            new_wrapped=new_wrapped,
        )
        done = {(row["subject_ref"], row["key_version"]) for row in updated}
        moved.update(
            row["kek_id"] for row in rows if (row["subject_ref"], row["key_version"]) in done
        )
        after_subject, after_version = rows[-1]["subject_ref"], rows[-1]["key_version"]
        if len(rows) < batch_size:
            break
    after = await keys_by_kek(db)
    rotation = Rotation(
        kek_id=active,
        rewrapped=sum(moved.values()),
        rewrapped_from=dict(sorted(moved.items())),
        already_current=before.get(active, 0),
        keys_by_kek=after,
        log_id=0,
    )
    logged = await db.fetchrow(
        sql.privacy_policy.KEY_ROTATION_LOG,
        actor=actor,
        actor_role=actor_role,
        detail={
            "kek_id": rotation.kek_id,
            "rewrapped": rotation.rewrapped,
            "rewrapped_from": rotation.rewrapped_from,
            "already_current": rotation.already_current,
            "keys_by_kek": rotation.keys_by_kek,
        },
    )
    assert logged is not None
    return dataclasses.replace(rotation, log_id=logged["id"])
