"""Notes on items under a privacy policy: written sealed, read back by those who may.

A reviewer's note on such an item is as personal as the item's fields ("the name on the
passport does not match the utility bill"), so its body is never stored in `item_events`:
the `noted` row keeps an empty body and `sealed_notes` holds the text sealed with AES-GCM
under the subject's data key (server/domain/privacy/sealing.py), with the item, the path
`note:<event id>` and the key's version as associated data. Erasing the subject (shredding
its keys, clearing `sealed_notes`) erases its notes with its fields.

Reading a note back is a reading of personal data: a caller whose role the policy shows
`personal` values to, on a subject whose processing is not restricted (or a compliance
officer), sees the text; anyone else sees that a note is there and why its text is not
shown (WITHHELD), or that it was erased (ERASED). A reader without a principal (an operator
at the command line, `casework export`) never opens a note.

A decision's note on such an item is sealed in place instead (notes.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from server.domain.model import Principal
from server.domain.privacy.keys import Keyring
from server.domain.privacy.notes import NoteReading, NoteState, stored_note_withheld
from server.domain.privacy.sealing import open_sealed, seal
from server.domain.step_up import provenance
from server.domain.timeline.events import TimelineEvent
from server.store import sql
from server.store.database import Database, Row


def note_path(event_id: int) -> str:
    """The path a note's body is sealed under: part of the associated data, so a sealed
    body moved to another event (or item, or key version) does not open."""
    return f"note:{event_id}"


async def add_sealed_note(
    db: Database, keyring: Keyring, principal: Principal, item_id: int, body: str
) -> TimelineEvent | None:
    """The note, sealed, on a policy item the caller's token covers; None if the item is
    not one (or not covered). Its event's body is None: read it with `read_notes`."""
    async with db.transaction() as tx:
        row = await tx.fetchrow(
            sql.privacy_records.SEALED_NOTE_ADD,
            item_id=item_id,
            queue_scope=principal.queue_scope(),
            **principal.actor(),
            **provenance(principal),
        )
        if row is None:
            return None
        event_id: int = row["id"]
        subject_ref: str = row["subject_ref"]
        key = await keyring.current(tx, subject_ref)
        nonce, ciphertext = seal(
            key.key,
            item_id=item_id,
            path=note_path(event_id),
            key_version=key.version,
            value=body,
        )
        await tx.fetch(
            sql.privacy_records.SEALED_NOTE_INSERT,
            event_id=event_id,
            item_id=item_id,
            subject_ref=subject_ref,
            key_version=key.version,
            nonce=nonce,
            ciphertext=ciphertext,
        )
    return TimelineEvent.from_row(row)


async def read_notes(
    db: Database, keyring: Keyring | None, principal: Principal | None, event_ids: Iterable[int]
) -> dict[int, NoteReading]:
    """The sealed notes among these events, by event id, as this reader may read them
    (events that are not sealed notes are absent). One statement for any number; each
    subject's key is unwrapped once per process (Keyring's cache)."""
    wanted = sorted(set(event_ids))
    if not wanted:
        return {}
    rows = await db.fetch(sql.privacy_records.SEALED_NOTES_GET, event_ids=wanted)
    return {row["event_id"]: await _reading(db, keyring, principal, row) for row in rows}


async def _reading(
    db: Database, keyring: Keyring | None, principal: Principal | None, row: Row
) -> NoteReading:
    if row["erased_at"] is not None or row["ciphertext"] is None:
        return NoteReading(NoteState.ERASED)
    reason = stored_note_withheld(principal, keyring, row)
    if reason is not None:
        return NoteReading(NoteState.WITHHELD, withheld_reason=reason)
    assert keyring is not None
    key = await keyring.version(db, row["subject_ref"], row["key_version"])
    if key is None:  # shredded: the erasure that cleared the row is committing
        return NoteReading(NoteState.ERASED)
    body = open_sealed(
        key.key,
        item_id=row["item_id"],
        path=note_path(row["event_id"]),
        key_version=row["key_version"],
        nonce=row["nonce"],
        ciphertext=row["ciphertext"],
    )
    assert isinstance(body, str), "a note's body is text"
    return NoteReading(NoteState.VISIBLE, body=body)
