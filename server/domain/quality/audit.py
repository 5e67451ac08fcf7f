"""Audit packs: everything recorded about one review item, as one self-describing document
with a SHA-256 over its canonical form (ReviewItem.auditPack, `casework export`).

A pack is `{"pack": {...}, "sha256": "..."}`; the hash is over `canonical_json(pack)`, the
canonical form the evidence hash uses (server/domain/review/evidence.py), so anyone can check it.
Nothing in the hashed part depends on when the pack was made: rows are serialised with
every column of their table (a lease token excepted), times as ISO-8601 UTC strings, lists
in a fixed order. docs/audit.md describes the document.

Reading costs a constant number of statements however many items, decisions, attempts and
events there are: one per kind of row, for a whole batch of items (`read_packs`). Each part
of the pack has its own builder below (`_item_part`, `_decision_part`, ...); a new kind of
row is one more statement in `_read_rows` and one more key in its builder.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from server.domain.model import Authentication, Decision, Item, Principal
from server.domain.privacy.keys import Keyring
from server.domain.quality import audit_privacy, qa
from server.domain.reads import authentications_by_ids
from server.domain.review import apply
from server.domain.review.evidence import canonical_json
from server.domain.timeline.events import PageKey, TimelineEvent, TimelineKind, events_pages
from server.store import sql
from server.store.database import Database, Row

FORMAT = "casework.audit-pack/1"

# The page size that reads an item's whole timeline in one page (the column is an int).
WHOLE_TIMELINE = 2**31 - 1

# Items packed per batch of `casework export queue`: each batch costs the same statements.
EXPORT_BATCH_SIZE = 500

# A lease token is a fence credential: a pack names a lease as the timeline does, by a
# one-way hash of it (`lease_id`), and never shows the token itself.
_NEVER_SHOWN = frozenset({"lease_token"})

# The kinds of timeline entry that change the payload: the evidence hash they record.
_PAYLOAD_KINDS = (TimelineKind.ENQUEUED, TimelineKind.REUPLOADED)


class Withheld(enum.StrEnum):
    """What a reader's copy of a pack leaves out (the pack's `withheld` list)."""

    # What a receiver answered, for roles that may not read it (apply.may_read_receiver_text).
    RECEIVER_TEXT = "receiver_text"
    # Exceptions about the item (a failed effect's) owned by queues the token does not cover.
    EXCEPTIONS_OUTSIDE_TOKEN_SCOPE = "exceptions_outside_token_scope"
    # Personal data of an item under a privacy policy: which fields, and why, are listed in
    # the pack's `privacy.withheld`; sealed notes the reader may not read have no body.
    PERSONAL_DATA = "personal_data"


@dataclass(frozen=True)
class Viewer:
    """Who a pack is made for. No principal: an operator at the command line, who reads the
    database itself and so gets everything, but personal data: nothing sealed is opened for
    an export (audit_privacy.py). `keyring`: where a principal's readable personal values
    are opened with (none: they are withheld)."""

    principal: Principal | None = None
    keyring: Keyring | None = None

    def withheld(self, item_queue: str) -> frozenset[Withheld]:
        if self.principal is None:
            return frozenset()
        left_out = set()
        if not apply.may_read_receiver_text(self.principal, (item_queue,)):
            left_out.add(Withheld.RECEIVER_TEXT)
        if self.principal.queue_scope() is not None:
            left_out.add(Withheld.EXCEPTIONS_OUTSIDE_TOKEN_SCOPE)
        return frozenset(left_out)

    def sees(self, queues: Iterable[str]) -> bool:
        return self.principal is None or any(map(self.principal.works_in, queues))


EVERYTHING = Viewer()


def lease_id(token: UUID | str) -> str:
    """The name the timeline gives a lease (item_events_get_pages' `lease_id`): the first 15
    hexadecimal digits of the SHA-256 of its token's text. Opens nothing."""
    return hashlib.sha256(str(token).encode()).hexdigest()[:15]


def timestamp(value: datetime) -> str:
    """ISO-8601 in UTC, always to the microsecond: one instant, one string
    (2026-11-14T09:30:00.000000Z)."""
    return value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


# What JSON holds as it is (exact types: the common case, tested first).
_AS_IS = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """A value as JSON holds it, the same every time."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is dict:
        return {str(key): plain(entry) for key, entry in value.items()}
    if kind is list or kind is tuple:
        return [plain(entry) for entry in value]
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, UUID | Decimal):
        return str(value)
    if isinstance(value, str | int | float):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _FIELD_NAMES.get(kind)
        if names is None:
            names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(value))
        return {name: plain(getattr(value, name)) for name in names}
    raise TypeError(f"an audit pack cannot hold a {kind.__name__}: {value!r}")


# The fields of each record type a pack holds (TimelineEvent, TimelineLease), read once.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def columns(row: Row, *, leave_out: Iterable[str] = ()) -> dict[str, Any]:
    """Every column of a row, as JSON holds it; a new column of the table flows in."""
    skipped = _NEVER_SHOWN.union(leave_out)
    return {name: plain(value) for name, value in row.items() if name not in skipped}


def sealed(pack: dict[str, Any]) -> dict[str, Any]:
    """The document: the pack and the SHA-256 of its canonical form."""
    return {"pack": pack, "sha256": hashlib.sha256(canonical_json(pack)).hexdigest()}


def pack_bytes(document: dict[str, Any]) -> bytes:
    """What `casework export` writes for one pack: its canonical form and a newline."""
    return canonical_json(document) + b"\n"


def sealed_bytes(pack: dict[str, Any]) -> bytes:
    """`pack_bytes(sealed(pack))`, with the pack serialised once instead of twice (once to
    hash it, once to write it): the canonical form of {"pack": P, "sha256": H} is the text
    below, since "pack" sorts before "sha256" (tests/integration/test_audit_pack.py holds
    the two together). A queue export writes every line this way."""
    body = canonical_json(pack)
    digest = hashlib.sha256(body).hexdigest()
    return b'{"pack":' + body + b',"sha256":"' + digest.encode() + b'"}\n'


@dataclass(frozen=True)
class _Rows:
    """The rows of a batch of items, each kind read by one statement."""

    items: dict[int, Row]
    timelines: dict[PageKey, list[TimelineEvent]]
    decisions: dict[int, list[Row]]
    applications: dict[int, Row]
    attempts: dict[int, list[Row]]
    confirmations: dict[int, Row]
    qa_checks: dict[int, qa.QaCheck]
    exceptions: dict[int, list[Row]]
    exception_events: dict[str, list[Row]]
    corrections: dict[str, list[Row]]
    redrives: dict[str, list[Row]]
    # How the actors of the rows above authenticated, by authentication_id (migration 0023).
    authentications: dict[int, Authentication]
    # Personal data of policy items and sealed notes, as the viewer may see them.
    privacy: audit_privacy.PrivacyRead = audit_privacy.NOTHING


def _grouped(rows: list[Row], key: str) -> dict[Any, list[Row]]:
    grouped: dict[Any, list[Row]] = {}
    for row in rows:
        grouped.setdefault(row[key], []).append(row)
    return grouped


async def _read_rows(db: Database, item_ids: list[int], viewer: Viewer) -> _Rows:
    """At most fifteen statements, whatever the number of items and rows (three of them for
    personal data, sent only for a batch that holds policy items or sealed notes)."""
    items = {row["id"]: row for row in await db.fetch(sql.items.ITEMS_GET_BY_IDS, ids=item_ids)}
    found = sorted(items)
    timelines = await events_pages(db, [PageKey(i, None, WHOLE_TIMELINE) for i in found])
    decision_rows = await db.fetch(sql.decisions_read.DECISIONS_GET_BY_ITEM_IDS, item_ids=found)
    decision_ids = [row["id"] for row in decision_rows]
    applications: list[Row] = []
    attempts: list[Row] = []
    confirmations: list[Row] = []
    qa_checks: dict[int, qa.QaCheck] = {}
    if decision_ids:
        qa_checks = await qa.checks_by_decision_ids(db, decision_ids)
        confirmations = await db.fetch(
            sql.decisions_read.DECISION_CONFIRMATIONS_GET_BY_DECISION_IDS,
            decision_ids=decision_ids,
        )
        applications = await db.fetch(
            sql.applications.APPLICATIONS_GET_BY_DECISION_IDS, decision_ids=decision_ids
        )
        attempts = await db.fetch(
            sql.applications.APPLICATION_ATTEMPTS_GET_BY_DECISION_IDS, decision_ids=decision_ids
        )
    exceptions = await db.fetch(
        sql.exceptions_read.EXCEPTIONS_GET_ABOUT_ITEMS,
        item_ids=found,
        apply_workflow=apply.APPLY_WORKFLOW,
    )
    exception_ids = sorted({row["id"] for row in exceptions})
    events: list[Row] = []
    corrections: list[Row] = []
    redrives: list[Row] = []
    if exception_ids:
        read = sql.exceptions_read
        events = await db.fetch(
            read.EXCEPTION_EVENTS_GET_BY_EXCEPTION_IDS, exception_ids=exception_ids
        )
        corrections = await db.fetch(
            read.EXCEPTION_CORRECTIONS_GET_BY_EXCEPTION_IDS, exception_ids=exception_ids
        )
        redrives = await db.fetch(
            read.EXCEPTION_REDRIVES_GET_BY_EXCEPTION_IDS, exception_ids=exception_ids
        )
    recorded = [row["authentication_id"] for row in [*decision_rows, *confirmations, *events]]
    recorded += [event.authentication_id for found in timelines.values() for event in found]
    authentication_ids = sorted({found for found in recorded if found is not None})
    authentications = (
        await authentications_by_ids(db, authentication_ids) if authentication_ids else {}
    )
    # A note stored without its body is a sealed one (server/domain/privacy/records.py).
    sealed_notes = [
        event.position.ref
        for found in timelines.values()
        for event in found
        if event.kind is TimelineKind.NOTED and event.body is None
    ]
    privacy = await audit_privacy.read_privacy(
        db,
        [Item.from_row(row) for row in items.values()],
        sealed_notes,
        viewer.principal,
        viewer.keyring,
        decision_rows,
    )
    return _Rows(
        privacy=privacy,
        authentications=authentications,
        items=items,
        timelines=timelines,
        decisions=_grouped(decision_rows, "item_id"),
        applications={row["decision_id"]: row for row in applications},
        attempts=_grouped(attempts, "decision_id"),
        confirmations={row["decision_id"]: row for row in confirmations},
        qa_checks=qa_checks,
        exceptions=_grouped(exceptions, "about_item_id"),
        exception_events=_grouped(events, "exception_id"),
        corrections=_grouped(corrections, "exception_id"),
        redrives=_grouped(redrives, "exception_id"),
    )


# --- The parts of a pack, one builder each.


def _item_part(row: Row, rows: _Rows) -> dict[str, Any]:
    """The item as review_items holds it now: payload, evidence hash, state, times, counts.
    Under a privacy policy, the payload is what the reader is shown of it."""
    part = columns(row)
    shown = rows.privacy.payloads.get(row["id"])
    if shown is not None:
        part["payload"] = plain(shown)
    return part


def _payload_history(timeline: list[TimelineEvent]) -> list[dict[str, Any]]:
    """Each evidence hash the item has had and when it took effect, from the timeline's
    ENQUEUED and REUPLOADED entries. Only the current payload is kept (in `item`)."""
    return [
        {
            "kind": plain(event.kind),
            "evidence_hash": event.evidence_hash,
            "at": plain(event.at),
            "actor": event.actor,
            "actor_role": event.actor_role,
        }
        for event in timeline
        if event.kind in _PAYLOAD_KINDS
    ]


# Said by the pack itself: the item, and the order of the list.
_TIMELINE_IMPLIED = frozenset({"item_id", "position"})


def _timeline_part(timeline: list[TimelineEvent], rows: _Rows) -> list[dict[str, Any]]:
    """The item's whole timeline, as ReviewItem.events reads it, in its order, each entry
    with how its actor authenticated where it was recorded."""
    return [
        {
            **{
                name: value for name, value in plain(event).items() if name not in _TIMELINE_IMPLIED
            },
            "authentication": _authentication_part(event.authentication_id, rows),
            **audit_privacy.note_part(event, rows.privacy),
        }
        for event in timeline
    ]


def _authentication_part(authentication_id: int | None, rows: _Rows) -> dict[str, Any] | None:
    """How an actor authenticated: credential kind, issuer, subject, session or token,
    client, sign-in time and acr, the rules that granted the role."""
    found = None if authentication_id is None else rows.authentications.get(authentication_id)
    if found is None:
        return None
    part: dict[str, Any] = plain(found)
    return part


def _decision_part(decision: Row, rows: _Rows, withheld: frozenset[Withheld]) -> dict[str, Any]:
    """A decision with every column review_decisions holds (reason, note, evidence hash,
    reviewer and role, supersedes, provisional), what supersedes it, its status, the lease
    it was made under (by its `lease_id`), the second review that confirmed it, its QA
    sample and check, and how it was carried out."""
    token = decision["lease_token"]
    part = columns(decision)
    part["lease_id"] = lease_id(token) if token is not None else None
    part["authentication"] = _authentication_part(decision["authentication_id"], rows)
    part.update(audit_privacy.decision_note_part(decision, rows.privacy))
    part["status"] = plain(Decision.from_row(decision).status)
    part["confirmation"] = _confirmation_part(decision["id"], rows)
    # Sampled for QA: the copy's item id and queue, and the QA reviewer's result once given.
    part["qa"] = plain(rows.qa_checks.get(decision["id"]))
    part["application"] = _application_part(decision["id"], rows, withheld)
    return part


def _confirmation_part(decision_id: int, rows: _Rows) -> dict[str, Any] | None:
    """decision_confirmations' row: who confirmed the provisional decision, in which queue,
    on which evidence, under which lease (by its `lease_id`), and when."""
    confirmation = rows.confirmations.get(decision_id)
    if confirmation is None:
        return None
    part = columns(confirmation)
    part["lease_id"] = lease_id(confirmation["lease_token"])
    part["authentication"] = _authentication_part(confirmation["authentication_id"], rows)
    return part


def _application_part(
    decision_id: int, rows: _Rows, withheld: frozenset[Withheld]
) -> dict[str, Any] | None:
    """decision_applications' row with its proof of application (applied_at, applied_note)
    and every attempt (`history`); the decision id is the idempotency key every attempt carried."""
    application = rows.applications.get(decision_id)
    if application is None:
        return None
    hidden = Withheld.RECEIVER_TEXT in withheld
    part = columns(application)
    if hidden:
        part.update(last_error=None, applied_note=None)
    part["idempotency_key"] = str(decision_id)
    part["history"] = [
        {**columns(attempt), **({"error": None} if hidden else {})}
        for attempt in rows.attempts.get(decision_id, [])
    ]
    return part


# Columns exceptions_get_about_items adds to an exception's own, to tell whom it concerns.
_EXCEPTION_READ_COLUMNS = ("about_item_id", "item_queue", "approval_queue", "reason_owner_role")


def _exception_queues(exception: Row) -> tuple[str, ...]:
    """The queues whose tokens see the exception (as ExceptionRecord.queues)."""
    return (
        exception["item_queue"],
        exception["owner_role"],
        exception["reason_owner_role"],
        exception["escalation_role"],
        exception["approval_queue"],
    )


def _exception_part(exception: Row, rows: _Rows, withheld: frozenset[Withheld]) -> dict[str, Any]:
    """An exception about the item, with its whole history, corrections and redrives."""
    exception_id = exception["id"]
    hidden = Withheld.RECEIVER_TEXT in withheld
    part = columns(exception, leave_out=_EXCEPTION_READ_COLUMNS)
    part["events"] = [columns(event) for event in rows.exception_events.get(exception_id, [])]
    part["corrections"] = [columns(c) for c in rows.corrections.get(exception_id, [])]
    part["redrives"] = [
        {**columns(redrive), **({"last_delivery_error": None} if hidden else {})}
        for redrive in rows.redrives.get(exception_id, [])
    ]
    return part


def _pack(item_id: int, rows: _Rows, viewer: Viewer) -> dict[str, Any]:
    """The pack itself, before it is sealed."""
    item = rows.items[item_id]
    withheld = viewer.withheld(item["queue"])
    timeline = rows.timelines[PageKey(item_id, None, WHOLE_TIMELINE)]
    privacy = rows.privacy.parts.get(item_id)
    notes = [audit_privacy.note_part(event, rows.privacy) for event in timeline]
    if (privacy is not None and privacy["withheld"]) or any(
        note.get("note_withheld") for note in notes
    ):
        withheld = withheld | {Withheld.PERSONAL_DATA}
    pack = {
        "format": FORMAT,
        "item": _item_part(item, rows),
        "payload_history": _payload_history(timeline),
        "timeline": _timeline_part(timeline, rows),
        "decisions": [
            _decision_part(decision, rows, withheld) for decision in rows.decisions.get(item_id, [])
        ],
        "exceptions": [
            _exception_part(exception, rows, withheld)
            for exception in rows.exceptions.get(item_id, [])
            if viewer.sees(_exception_queues(exception))
        ],
        "withheld": sorted(withheld),
    }
    if privacy is not None:
        pack["privacy"] = privacy
    return pack


async def read_packs(
    db: Database, item_ids: list[int], viewer: Viewer = EVERYTHING
) -> dict[int, dict[str, Any]]:
    """The packs of these items, by id; an unknown id has none. Read them inside one
    snapshot (`audit_packs` does) so that every part describes the same moment."""
    rows = await _read_rows(db, sorted(set(item_ids)), viewer)
    return {item_id: sealed(_pack(item_id, rows, viewer)) for item_id in rows.items}


async def audit_packs(
    db: Database, item_ids: list[int], viewer: Viewer = EVERYTHING
) -> dict[int, dict[str, Any]]:
    """`read_packs` in a snapshot of its own (a read-only REPEATABLE READ transaction)."""
    async with db.snapshot() as snapshot:
        return await read_packs(snapshot, item_ids, viewer)


async def export_queue(
    db: Database,
    queue: str,
    since: datetime,
    until: datetime,
    *,
    batch_size: int = EXPORT_BATCH_SIZE,
) -> AsyncIterator[bytes]:
    """The pack of every item first enqueued to `queue` in [since, until), oldest first, as
    the line `casework export queue` writes for it (`sealed_bytes`).

    One snapshot for the whole export; the items' ids come through a server-side cursor,
    `batch_size` at a time, and each batch is packed with the same few statements, so
    memory holds one batch however long the window."""
    async with db.snapshot() as snapshot:
        async for batch in snapshot.batches(
            sql.items.ITEM_IDS_GET_ENQUEUED_BETWEEN,
            batch_size,
            queue=queue,
            since=since,
            until=until,
        ):
            ids = [row["id"] for row in batch]
            rows = await _read_rows(snapshot, ids, EVERYTHING)
            for item_id in ids:
                yield sealed_bytes(_pack(item_id, rows, EVERYTHING))
