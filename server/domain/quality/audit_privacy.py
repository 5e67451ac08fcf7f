"""The personal-data part of an audit pack: for an item under a privacy policy, what the
pack's reader may see of its fields and notes, what it withholds and why, and what an
auditor needs to verify the item's evidence without any value (docs/audit.md).

- Each current field: path, class, salted digest, state for the reader (reading.py's:
  visible, masked, withheld, erased) and its value only when visible. A pack never reveals
  a sensitive value and, made without a principal (`casework export`), never opens a sealed
  one: the operator's export carries digests and salts, not personal values.
- The salt of a field the reader is shown (and every salt, in an operator's export) while
  the field is not erased: with it, a value the auditor holds can be checked against its
  digest. A reader who is not shown the value does not get its salt either, which would let
  them confirm guesses of it.
- The policy version and the evidence hash: the digests of all fields, with the version,
  hash to it (sealing.policy_evidence_hash), erased fields included, since digests outlive
  erasure.
- Sealed notes (records.py) read as the reader may read them, and so do decisions' notes
  sealed in place: the pack's decision and timeline entry carry the text only for a reader
  the policy shows it to, else null with the note's state and why it is withheld (an
  operator's export never opens one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from server.domain.model import Item, Principal, Role
from server.domain.privacy import reading, records
from server.domain.privacy.keys import Keyring
from server.domain.privacy.notes import NoteReading, StoredNote, WithheldReason, read_decision_notes
from server.domain.privacy.policy import FieldClass
from server.domain.privacy.reading import FieldState
from server.domain.timeline.events import TimelineEvent, TimelineKind
from server.store import sql
from server.store.database import Database, Row

FORMAT = "casework.policy-evidence/1"


@dataclass(frozen=True)
class PrivacyRead:
    """What a batch of packs shows of personal data, read once for the batch."""

    # Item id -> the pack's `privacy` part; items without a policy have none.
    parts: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Item id -> the payload the reader is shown, for policy items read by a principal.
    payloads: dict[int, Any] = field(default_factory=dict)
    # Event id -> a sealed note, as the reader may read it.
    notes: dict[int, NoteReading] = field(default_factory=dict)
    # Decision id -> its note sealed in place, as the reader may read it.
    decision_notes: dict[int, NoteReading] = field(default_factory=dict)


NOTHING = PrivacyRead()


async def read_privacy(
    db: Database,
    items: Iterable[Item],
    note_event_ids: Iterable[int],
    principal: Principal | None,
    keyring: Keyring | None,
    decision_rows: Iterable[Row] = (),
) -> PrivacyRead:
    """At most four statements for any batch (fields, readable values, notes, decisions'
    notes); none for a batch without policy items and without sealed notes."""
    policy_items = [item for item in items if reading.may_have_fields(item)]
    wanted_notes = list(note_event_ids)
    notes = await records.read_notes(db, keyring, principal, wanted_notes) if wanted_notes else {}
    stored = (StoredNote(row["id"], row["item_id"], row["note"]) for row in decision_rows)
    decided = await read_decision_notes(db, keyring, principal, stored)
    decision_notes = {note.decision_id: found for note, found in decided.items()}
    if not policy_items:
        return PrivacyRead(notes=notes, decision_notes=decision_notes)
    rows = await db.fetch(
        sql.privacy_records.AUDIT_FIELDS_GET, item_ids=[item.id for item in policy_items]
    )
    by_item: dict[int, list[Row]] = {}
    for row in rows:
        by_item.setdefault(row["item_id"], []).append(row)
    readable = [item for item in policy_items if item.id in by_item]
    views = (
        await reading.read_items(db, principal, readable, keyring)
        if principal is not None and readable
        else {}
    )
    parts: dict[int, dict[str, Any]] = {}
    payloads: dict[int, Any] = {}
    for item in readable:
        view = views.get(item.id)
        parts[item.id] = _part(item, by_item[item.id], view, principal)
        if view is not None:
            payloads[item.id] = view.payload
    return PrivacyRead(parts=parts, payloads=payloads, notes=notes, decision_notes=decision_notes)


def note_part(event: TimelineEvent, privacy: PrivacyRead) -> dict[str, Any]:
    """A sealed note's body as the reader may read it (a NOTED's, or a decision's note on
    the decision's entry), its state, and why it is withheld; nothing for any other entry
    (packs of items without a policy are as they were)."""
    if event.decision_id is not None:
        sealed = StoredNote(event.decision_id, event.item_id, event.body).sealed
        note = privacy.decision_notes.get(event.decision_id) if sealed else None
    elif event.kind is TimelineKind.NOTED and event.body is None:
        note = privacy.notes.get(event.position.ref)
    else:
        note = None
    return {} if note is None else _note_fields("body", note)


def decision_note_part(decision: Row, privacy: PrivacyRead) -> dict[str, Any]:
    """A decision's note sealed in place, as the reader may read it: the text or null, its
    state and why it is withheld; nothing for a note stored as written."""
    note = privacy.decision_notes.get(decision["id"])
    return {} if note is None else _note_fields("note", note)


def _note_fields(name: str, note: NoteReading) -> dict[str, Any]:
    return {
        name: note.body,
        "note_state": note.state.value,
        "note_withheld": None if note.withheld_reason is None else note.withheld_reason.value,
    }


def _part(
    item: Item, rows: list[Row], view: reading.ItemView | None, principal: Principal | None
) -> dict[str, Any]:
    fields: list[dict[str, Any]] = []
    withheld: list[dict[str, Any]] = []
    for row in rows:
        field_class = FieldClass(row["class"])
        state, value = _state(item, row, field_class, view)
        entry: dict[str, Any] = {
            "path": row["path"],
            "class": field_class.value,
            "digest": row["digest"],
            "salt": _salt(row, state, principal),
            "state": state.value,
        }
        if state is FieldState.VISIBLE:
            entry["value"] = value
        elif state is not FieldState.ERASED:
            reason = _reason(state, row, principal)
            withheld.append({"path": row["path"], "class": field_class.value, "reason": reason})
        fields.append(entry)
    return {
        "format": FORMAT,
        "policy_version": rows[0]["policy_version"],
        "subject_ref": rows[0]["subject_ref"],
        "evidence_hash": item.evidence_hash,
        "fields": fields,
        "withheld": withheld,
    }


def _state(
    item: Item, row: Row, field_class: FieldClass, view: reading.ItemView | None
) -> tuple[FieldState, Any]:
    """The field's state and value for the reader: reading.py's for a principal; for an
    operator's export, the stored (public and reference) values, and nothing sealed."""
    if view is not None:
        found = view.field(row["path"])
        if found is None:  # fail closed
            return FieldState.WITHHELD, None
        return found.state, found.value
    if row["erased_at"] is not None:
        return FieldState.ERASED, None
    if field_class.encrypted:
        return FieldState.WITHHELD, None
    present, value = reading.value_at(item.payload, row["path"])
    return (FieldState.VISIBLE, value) if present else (FieldState.WITHHELD, None)


def _salt(row: Row, state: FieldState, principal: Principal | None) -> str | None:
    salt = row["salt"]
    if salt is None or row["erased_at"] is not None:
        return None
    if principal is not None and state is not FieldState.VISIBLE:
        return None
    return bytes(salt).hex()


def _reason(state: FieldState, row: Row, principal: Principal | None) -> str:
    if principal is None:
        return WithheldReason.NO_PRINCIPAL.value
    if state is FieldState.MASKED:
        return WithheldReason.MASKED.value
    if row["restricted"] and principal.role is not Role.COMPLIANCE:
        return WithheldReason.RESTRICTED.value
    return WithheldReason.ROLE.value
