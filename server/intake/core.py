"""From one dead letter to one exception (or review item), exactly once.

`take` maps the message (record id, reason, the document kept), then in ONE transaction
looks its key (source, message id) up in intake_messages, raises the exception through the
domain's checks (or enqueues the item through the review domain, which applies the queue's
privacy policy), and records the intake_messages row. The caller acknowledges the message
only after `take` returned, so after the commit: a crash in between brings the message back,
its key is found, and it is acknowledged as a repeat without raising anything again. Two
intakes taking one message at once (a redelivery while the first still works on it) meet at
the row's primary key: the second waits for the first's commit, finds the key taken, and
rolls its own work back.

What cannot be mapped (no record id, a body that is not JSON where a path reads it, a
reason the workflow does not know, a document the domain refuses) comes back as
`Unmappable` with the reason, for the caller to park."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from server.domain.exceptions.actions import Raised, RaiseInput, raise_exception
from server.domain.exceptions.workflows import get_reasons
from server.domain.failures import InvalidInput, NotPermitted
from server.domain.model import Principal
from server.domain.privacy.keys import Keyring
from server.domain.privacy.policy import current_policy, split_payload
from server.domain.review.items import NewItem, enqueue_items
from server.intake.config import EnqueueTarget, IntakeSource, Locator, RaiseTarget, ValueFrom
from server.intake.paths import MISSING, read_path
from server.intake.sources import DeadLetter
from server.observability.metrics import IntakeOutcome
from server.store import sql
from server.store.database import Database

# The longest detail line built from the broker's failure metadata.
MAX_DETAIL = 1000
MAX_RECORD_ID = 200


@dataclass(frozen=True)
class Taken:
    outcome: IntakeOutcome
    exception_id: str | None = None
    item_id: int | None = None


@dataclass(frozen=True)
class Unmappable:
    reason: str


class IntakeRefused(Exception):
    """The domain refused the intake's own principal (its token no longer covers the
    target): nothing is parked; the operator fixes the token or the configuration."""


class _TakenMeanwhile(Exception):
    """Rolls back a transaction whose message another intake recorded first."""


class _Refused(Exception):
    """Rolls back a transaction whose exception or item the domain refused."""

    def __init__(self, unmappable: Unmappable) -> None:
        super().__init__(unmappable.reason)
        self.unmappable = unmappable


# --- mapping ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mapped:
    record_id: str
    document: dict[str, Any]
    reason_code: str | None
    subject_ref: str | None


def _body_json(letter: DeadLetter) -> tuple[Any, str | None]:
    """The body as JSON, or (None, why not)."""
    try:
        return json.loads(letter.body.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "the body is not UTF-8 text"
    except ValueError:
        return None, "the body is not JSON"


def _locate(letter: DeadLetter, locator: Locator, body: Any, body_problem: str | None) -> Any:
    """The located value as text, or Unmappable."""
    if locator.kind is ValueFrom.HEADER:
        value: Any = _header(letter.headers, locator.where)
        if value is None:
            return Unmappable(f"no {locator.describe()} on the message")
    else:
        if body_problem is not None:
            return Unmappable(f"{body_problem}, so {locator.describe()} cannot be read")
        value = read_path(body, locator.steps)
        if value is MISSING or value is None:
            return Unmappable(f"nothing at {locator.describe()} in the body")
        if isinstance(value, bool) or not isinstance(value, str | int):
            return Unmappable(f"{locator.describe()} holds a {type(value).__name__}, not text")
    text = str(value).strip()
    if not 1 <= len(text) <= MAX_RECORD_ID:
        return Unmappable(f"{locator.describe()} must be 1 to {MAX_RECORD_ID} characters")
    return text


def _header(headers: Mapping[str, str], name: str) -> str | None:
    if name in headers:
        return headers[name]
    lowered = name.lower()
    return next((v for k, v in headers.items() if k.lower() == lowered), None)


def document_of(letter: DeadLetter, source: IntakeSource, body: Any) -> dict[str, Any]:
    """What the exception's context (or the item's payload) holds: the original message
    (its JSON, or its text) and the intake's note of where it came from and why it failed.
    A privacy policy's paths name its fields as `message.<path>` and `deadLetter.<key>`."""
    message = body if body is not None else letter.body.decode("utf-8", errors="replace")
    return {
        "message": message,
        "deadLetter": {
            "source": source.name,
            "broker": source.broker.broker.value,
            "messageId": letter.message_id,
            "origin": letter.origin.as_json(),
            "failure": dict(letter.failure),
        },
    }


def map_letter(letter: DeadLetter, source: IntakeSource) -> Mapped | Unmappable:
    body, body_problem = _body_json(letter)
    record_id = _locate(letter, source.record_id, body, body_problem)
    if isinstance(record_id, Unmappable):
        return record_id
    subject_ref = None
    if source.subject_ref is not None:
        subject_ref = _locate(letter, source.subject_ref, body, body_problem)
        if isinstance(subject_ref, Unmappable):
            return subject_ref
    reason_code = None
    if isinstance(source.target, RaiseTarget):
        reason_code = source.target.reason_code
        if source.target.reason_code_header is not None:
            reason_code = _header(letter.headers, source.target.reason_code_header) or reason_code
    return Mapped(record_id, document_of(letter, source, body), reason_code, subject_ref)


def detail_of(letter: DeadLetter, source: IntakeSource) -> str:
    """One line: where the message died and what the broker says of it (its scalar facts)."""
    facts = ", ".join(
        f"{key}={value}"
        for key, value in letter.failure.items()
        if isinstance(value, str | int | float) and not isinstance(value, bool)
    )
    where = ", ".join(f"{key} {value!r}" for key, value in letter.origin.as_json().items())
    line = (
        f"Dead-lettered message {letter.message_id!r} taken from source {source.name!r} "
        f"({where})" + (f": {facts}" if facts else "")
    )
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"


# --- the transaction -------------------------------------------------------------------------


async def take(
    db: Database,
    principal: Principal,
    source: IntakeSource,
    letter: DeadLetter,
    keyring: Keyring | None = None,
) -> Taken | Unmappable:
    """Records the dead letter and what it became, in one transaction; see the module."""
    if await _known(db, source, letter):
        return Taken(IntakeOutcome.REPEATED)
    mapped = map_letter(letter, source)
    if isinstance(mapped, Unmappable):
        return mapped
    try:
        async with db.transaction() as tx:
            if await _known(tx, source, letter):
                return Taken(IntakeOutcome.REPEATED)
            if isinstance(source.target, RaiseTarget):
                made = await _raise(tx, principal, source, source.target, letter, mapped)
            else:
                made = await _enqueue(tx, principal, source.target, mapped, keyring)
            if isinstance(made, Unmappable):
                raise _Refused(made)
            keep_original = made.keep_original
            row = await tx.fetchrow(
                sql.intake.INTAKE_MESSAGE_INSERT,
                source=source.name,
                message_id=letter.message_id,
                broker=source.broker.broker.value,
                exception_id=made.taken.exception_id,
                item_id=made.taken.item_id,
                origin=letter.origin.as_json(),
                body=letter.body if keep_original else None,
                headers=dict(letter.headers) if keep_original else {},
                failure=dict(letter.failure),
            )
            if row is None:
                raise _TakenMeanwhile
    except _TakenMeanwhile:
        return Taken(IntakeOutcome.REPEATED)
    except _Refused as refused:
        return refused.unmappable
    return made.taken


async def _known(db: Database, source: IntakeSource, letter: DeadLetter) -> bool:
    found = await db.fetchrow(
        sql.intake.INTAKE_MESSAGE_GET, source=source.name, message_id=letter.message_id
    )
    return found is not None


@dataclass(frozen=True)
class _Made:
    taken: Taken
    # False where a privacy policy governs the target: the original body and headers are
    # not kept (so such a workflow cannot redrive by broker with the original).
    keep_original: bool


async def _raise(
    tx: Database,
    principal: Principal,
    source: IntakeSource,
    target: RaiseTarget,
    letter: DeadLetter,
    mapped: Mapped,
) -> _Made | Unmappable:
    assert mapped.reason_code is not None
    context = mapped.document
    keep_original = True
    reasons = (await get_reasons(tx, [target.workflow])).get(target.workflow, [])
    reason = next((r for r in reasons if r.code == mapped.reason_code), None)
    if reason is not None:
        # The exception's item lives in its owner's queue: that queue's policy decides what
        # of the message the record may hold.
        policy = await current_policy(tx, reason.owner_role)
        if policy is not None:
            context = split_payload(policy, context).public_payload()
            keep_original = False
    raised = await raise_exception(
        tx,
        principal,
        RaiseInput(
            workflow=target.workflow,
            source_record_id=mapped.record_id,
            reason_code=mapped.reason_code,
            detail=detail_of(letter, source),
            consequence=target.consequence,
            context=context,
        ),
    )
    if isinstance(raised, NotPermitted):
        raise IntakeRefused(raised.message)
    if isinstance(raised, InvalidInput):
        return Unmappable(f"the exception was refused: {raised.message}")
    assert isinstance(raised, Raised)
    return _Made(Taken(IntakeOutcome.RAISED, exception_id=raised.exception.id), keep_original)


async def _enqueue(
    tx: Database,
    principal: Principal,
    target: EnqueueTarget,
    mapped: Mapped,
    keyring: Keyring | None,
) -> _Made | Unmappable:
    policy = await current_policy(tx, target.queue)
    enqueued = await enqueue_items(
        tx,
        principal,
        target.queue,
        [
            NewItem(
                external_key=mapped.record_id,
                payload=mapped.document,
                subject_ref=mapped.subject_ref,
            )
        ],
        keyring,
    )
    if isinstance(enqueued, NotPermitted):
        raise IntakeRefused(enqueued.message)
    if isinstance(enqueued, InvalidInput):
        return Unmappable(f"the item was refused: {enqueued.message}")
    [item] = enqueued
    return _Made(Taken(IntakeOutcome.ENQUEUED, item_id=item.item.id), policy is None)
