"""How a sealed note reads for one reader, and a decision's note sealed in place.

A decision's note on an item under a privacy policy (submitDecision, overturnDecision, a
second review's override) lives in `review_decisions.note`, which is append-only and never
changes, erasure included. It is sealed in place: the column holds `casework-sealed:v1:<key
version>:<base64 of nonce and ciphertext>`, sealed under the subject's data key with the item
and the path `note:decision` as associated data. Erasure shreds the subject's keys and so the
note with them (crypto-shredding) while the row stays byte for byte as it was; a reader is
told it was erased as soon as the item's fields are. `read_decision_notes` reads such notes
as records.py's `read_notes` reads the others.

Kept apart from records.py (notes added with addNote, on the timeline) so that the review
loop, which seals a decision's note, does not import the timeline.
"""

from __future__ import annotations

import base64
import binascii
import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from server.domain.failures import InvalidInput
from server.domain.model import Principal
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import FieldClass, PrivacyPolicy
from server.domain.privacy.reading import FieldState, field_state
from server.domain.privacy.sealing import NONCE_BYTES, open_sealed, seal
from server.domain.text import MAX_TEXT
from server.store import sql
from server.store.database import Database, Row


class NoteState(enum.StrEnum):
    """How a sealed note reads for one reader."""

    VISIBLE = "visible"  # its text is shown
    WITHHELD = "withheld"  # the reader may not see personal data of this item
    ERASED = "erased"  # erased with its subject's data: nobody can read it again


class WithheldReason(enum.StrEnum):
    """Why a reader is not shown a sealed note's text."""

    # The policy does not show `personal` values to the reader's role.
    ROLE = "role"
    # The subject's processing is restricted (an erasure deferred): compliance only.
    RESTRICTED = "restricted"
    # An operator's export: no principal, and nothing personal is opened for it.
    NO_PRINCIPAL = "no_principal"
    # A sensitive field (never a note): shown only once revealed with a reason, one reader
    # at a time (revealField); a record that leaves the service never reveals one.
    MASKED = "masked"


@dataclass(frozen=True)
class NoteReading:
    state: NoteState
    body: str | None = None
    withheld_reason: WithheldReason | None = None


def note_withheld(
    principal: Principal | None, policy: PrivacyPolicy, restricted: bool
) -> WithheldReason | None:
    """Why this reader may not read a note of an item under `policy`; None: they may. A
    note reads as a `personal` field does (reading.field_state)."""
    if principal is None:
        return WithheldReason.NO_PRINCIPAL
    state = field_state(
        policy, principal.role, FieldClass.PERSONAL, restricted=restricted, erased=False
    )
    if state is FieldState.VISIBLE:
        return None
    unrestricted = field_state(
        policy, principal.role, FieldClass.PERSONAL, restricted=False, erased=False
    )
    return WithheldReason.RESTRICTED if unrestricted is FieldState.VISIBLE else WithheldReason.ROLE


def stored_note_withheld(
    principal: Principal | None, keyring: Keyring | None, row: Row
) -> WithheldReason | None:
    """note_withheld for a stored note's row (its item's policy and restriction beside it);
    without a keyring nothing could be opened, which reads as no principal."""
    policy = PrivacyPolicy.from_row(row)
    reason = note_withheld(principal, policy, restricted=row["restricted_at"] is not None)
    if reason is None and keyring is None:
        return WithheldReason.NO_PRINCIPAL
    return reason


# A decision's note, sealed in place in review_decisions.note.
SEALED_DECISION_NOTE = "casework-sealed:v1:"
DECISION_NOTE_PATH = "note:decision"
_SEALED_FORM = re.compile(r"^casework-sealed:v1:([1-9][0-9]{0,8}):([A-Za-z0-9+/=]+)$")
# The plain text of a decision note that is always short enough to seal within the column's
# MAX_TEXT (base64 and the marker take room); longer text is sealed if it fits.
SEALED_NOTE_TEXT = 2900


@dataclass(frozen=True)
class StoredNote:
    """A decision's note as review_decisions holds it."""

    decision_id: int
    item_id: int
    note: str | None

    @property
    def sealed(self) -> bool:
        return self.note is not None and self.note.startswith(SEALED_DECISION_NOTE)


async def seal_decision_note(
    db: Database,
    keyring: Keyring | None,
    item_id: int,
    note: str | None,
    queue_scope: list[str] | None = None,
) -> str | InvalidInput | None:
    """The note as review_decisions stores it for a decision on this item: sealed when the
    item is under a privacy policy, as written otherwise. No statement without a note (nor
    for one that says nothing: there is nothing personal to seal); one read by primary key
    with one."""
    if note is None or not note.strip():
        return note
    row = await db.fetchrow(
        sql.privacy_records.DECISION_NOTE_SUBJECT, item_id=item_id, queue_scope=queue_scope
    )
    if row is None:
        return note
    if keyring is None:
        raise RuntimeError("a note on an item under a privacy policy is sealed: pass the keyring")
    key = await keyring.current(db, row["subject_ref"])
    nonce, ciphertext = seal(
        key.key, item_id=item_id, path=DECISION_NOTE_PATH, key_version=key.version, value=note
    )
    stored = f"{SEALED_DECISION_NOTE}{key.version}:{base64.b64encode(nonce + ciphertext).decode()}"
    if len(stored) > MAX_TEXT:
        return InvalidInput(
            f"note on an item under a privacy policy is stored encrypted, which takes room: "
            f"at most {SEALED_NOTE_TEXT} characters (fewer with quotes, backslashes or "
            "letters outside ASCII)",
            "note",
        )
    return stored


def _sealed_parts(note: str) -> tuple[int, bytes, bytes] | None:
    """(key version, nonce, ciphertext) of a sealed note; None for text that only looks so."""
    found = _SEALED_FORM.match(note)
    if found is None:
        return None
    try:
        raw = base64.b64decode(found.group(2), validate=True)
    except binascii.Error:
        return None
    if len(raw) <= NONCE_BYTES:
        return None
    return int(found.group(1)), raw[:NONCE_BYTES], raw[NONCE_BYTES:]


async def open_decision_note(
    db: Database, keyring: Keyring | None, item_id: int, note: str | None
) -> str | None:
    """A decision's note as its writer wrote it, for comparing a retried submission with
    the one recorded (never shown to anyone by this function): the text itself when it is
    not sealed, None once its key is shredded."""
    if note is None or not note.startswith(SEALED_DECISION_NOTE) or keyring is None:
        return note
    row = await db.fetchrow(
        sql.privacy_records.DECISION_NOTE_SUBJECT, item_id=item_id, queue_scope=None
    )
    parts = _sealed_parts(note)
    if row is None or parts is None:
        return note
    return await _open_decision_note(db, keyring, row["subject_ref"], item_id, parts)


async def _open_decision_note(
    db: Database, keyring: Keyring, subject_ref: str, item_id: int, parts: tuple[int, bytes, bytes]
) -> str | None:
    version, nonce, ciphertext = parts
    key = await keyring.version(db, subject_ref, version)
    if key is None:
        return None
    body = open_sealed(
        key.key,
        item_id=item_id,
        path=DECISION_NOTE_PATH,
        key_version=version,
        nonce=nonce,
        ciphertext=ciphertext,
    )
    assert isinstance(body, str), "a note is text"
    return body


async def read_decision_notes(
    db: Database,
    keyring: Keyring | None,
    principal: Principal | None,
    notes: Iterable[StoredNote],
) -> dict[StoredNote, NoteReading]:
    """The sealed decision notes among these, as this reader may read them (a note stored
    as written is absent: it reads as it is). One statement for any number, none when no
    note is sealed."""
    sealed = sorted({note for note in notes if note.sealed}, key=lambda n: n.decision_id)
    if not sealed:
        return {}
    rows = await db.fetch(
        sql.privacy_records.DECISION_NOTES_GET, item_ids=sorted({n.item_id for n in sealed})
    )
    items = {row["item_id"]: row for row in rows}
    readings: dict[StoredNote, NoteReading] = {}
    for note in sealed:
        row = items.get(note.item_id)
        assert note.note is not None
        parts = _sealed_parts(note.note)
        if row is None or parts is None:  # not a policy item: text that looks sealed
            continue
        readings[note] = await _decision_reading(db, keyring, principal, row, note, parts)
    return readings


async def _decision_reading(
    db: Database,
    keyring: Keyring | None,
    principal: Principal | None,
    row: Row,
    note: StoredNote,
    parts: tuple[int, bytes, bytes],
) -> NoteReading:
    if row["erased"] or parts[0] in row["shredded_versions"]:
        return NoteReading(NoteState.ERASED)
    reason = stored_note_withheld(principal, keyring, row)
    if reason is not None:
        return NoteReading(NoteState.WITHHELD, withheld_reason=reason)
    assert keyring is not None
    body = await _open_decision_note(db, keyring, row["subject_ref"], note.item_id, parts)
    return NoteReading(NoteState.ERASED) if body is None else NoteReading(NoteState.VISIBLE, body)
