"""One access line and one timing per GraphQL operation, over HTTP or a websocket.

The transport starts an `OperationRecord` (HTTP: the view; a socket: each operation's task)
and finishes it with the answer; meanwhile the schema's extension (operation.py) notes
the operation's type and root fields once the document is valid, `from_failure` notes
every union error member a resolver answers with, and the schema's `process_errors` notes
client mistakes and server faults. The line: operation type, root fields, duration,
outcome (ok, error_member, refused, error), the caller's user and role, never the token.
A refused request is that one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionSetNode,
)
from graphql.utilities import get_operation_ast

from server.domain.model import Principal
from server.observability import metrics

log = logging.getLogger("casework.access")

# What one line says of a client's mistake, at most.
MESSAGE_LIMIT = 300


class Outcome(enum.StrEnum):
    OK = "ok"
    # A root field answered with an expected failure (StaleLease, NotPermitted, ...).
    ERROR_MEMBER = "error_member"
    # Refused before or while running: no valid token, a bad document, a limit, bad values.
    REFUSED = "refused"
    # The server's fault, or the database's absence.
    ERROR = "error"


@dataclass(slots=True)
class OperationRecord:
    transport: str
    started: float = field(default_factory=time.perf_counter)
    # "query", "mutation" or "subscription", once the document is valid.
    operation_type: str | None = None
    root_fields: tuple[str, ...] = ()
    error_members: list[str] = field(default_factory=list)
    refusal: str | None = None
    failed: bool = False
    user: str | None = None
    role: str | None = None
    decision_ids: list[int] = field(default_factory=list)
    subscribed: tuple[str, ...] = ()

    def caller(self, principal: Principal) -> None:
        if principal.user:
            self.user, self.role = principal.user, principal.role.value

    def refuse(self, message: str) -> None:
        if self.refusal is None:
            self.refusal = message.splitlines()[0][:MESSAGE_LIMIT] if message else "refused"

    @property
    def outcome(self) -> Outcome:
        if self.failed:
            return Outcome.ERROR
        if self.refusal is not None:
            return Outcome.REFUSED
        if self.error_members:
            return Outcome.ERROR_MEMBER
        return Outcome.OK

    def finish(self, *, status: int | None = None) -> None:
        """Times the operation and writes its access line."""
        seconds = time.perf_counter() - self.started
        kind = self.operation_type
        if kind in ("query", "mutation"):
            for name in dict.fromkeys(self.root_fields):
                metrics.operation_seconds(kind, name).observe(seconds)
        outcome = self.outcome
        words = [
            f"graphql {kind or '-'} {','.join(self.root_fields) or '-'}",
            outcome.value,
            f"{seconds * 1000:.1f} ms",
            f"user={self.user or '-'}",
            f"role={self.role or '-'}",
        ]
        if self.error_members:
            words.append(f"members={','.join(dict.fromkeys(self.error_members))}")
        if self.decision_ids:
            words.append(f"decisions={','.join(map(str, self.decision_ids))}")
        if status is not None:
            words.append(f"status={status}")
        if self.refusal is not None:
            words.append(f"refusal={self.refusal!r}")
        log.info(
            " ".join(words),
            extra={
                "fields": {
                    "transport": self.transport,
                    "operation_type": kind,
                    "root_fields": list(self.root_fields),
                    "outcome": outcome.value,
                    "duration_ms": round(seconds * 1000, 3),
                    "user": self.user,
                    "role": self.role,
                    "error_members": list(dict.fromkeys(self.error_members)),
                    "decision_ids": self.decision_ids,
                    "status": status,
                    "refusal": self.refusal,
                }
            },
        )


_RECORD: ContextVar[OperationRecord | None] = ContextVar("casework_operation", default=None)


@contextlib.contextmanager
def observed(transport: str) -> Iterator[OperationRecord]:
    """The record of one operation, current for everything the operation runs; the
    transport writes its access line with `finish` once it has answered."""
    record = OperationRecord(transport)
    token = _RECORD.set(record)
    try:
        yield record
    finally:
        _RECORD.reset(token)


def current() -> OperationRecord | None:
    return _RECORD.get()


def note_error_member(name: str) -> None:
    record = _RECORD.get()
    if record is not None:
        record.error_members.append(name)


def note_decision(decision_id: int) -> None:
    record = _RECORD.get()
    if record is not None:
        record.decision_ids.append(decision_id)


def note_refusal(message: str) -> None:
    record = _RECORD.get()
    if record is not None:
        record.refuse(message)


def note_failure() -> None:
    record = _RECORD.get()
    if record is not None:
        record.failed = True


def describe(document: DocumentNode, operation_name: str | None) -> tuple[str, tuple[str, ...]]:
    """The type and root field names of the operation that runs, fragments at the root
    included; once the document is valid these are names of the schema, never a client's."""
    operation = get_operation_ast(document, operation_name)
    if operation is None:
        return "-", ()
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    names: list[str] = []

    def walk(selections: SelectionSetNode, seen: frozenset[str]) -> Iterator[str]:
        for selection in selections.selections:
            if isinstance(selection, FieldNode):
                yield selection.name.value
            elif isinstance(selection, InlineFragmentNode):
                yield from walk(selection.selection_set, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name in fragments and name not in seen:
                    yield from walk(fragments[name].selection_set, seen | {name})

    names.extend(walk(operation.selection_set, frozenset()))
    return operation.operation.value, tuple(dict.fromkeys(names))


# What `describe` found, per document text and operation name: a process sees the same
# few documents again and again. Bounded as the parser's cache is.
_DESCRIBED_LIMIT = 256
_described: dict[tuple[str, str | None], tuple[str, tuple[str, ...]]] = {}


def _described_once(
    query: str | None, document: DocumentNode, operation_name: str | None
) -> tuple[str, tuple[str, ...]]:
    if query is None:
        return describe(document, operation_name)
    key = (query, operation_name)
    found = _described.get(key)
    if found is None:
        if len(_described) >= _DESCRIBED_LIMIT:
            _described.clear()
        found = _described[key] = describe(document, operation_name)
    return found


def begin_operation(query: str | None, document: DocumentNode, operation_name: str | None) -> None:
    """A valid operation starts: its type and root fields, and a subscription counted."""
    record = _RECORD.get()
    if record is None:
        return
    record.operation_type, record.root_fields = _described_once(query, document, operation_name)
    if record.operation_type == "subscription" and not record.subscribed:
        record.subscribed = record.root_fields
        for name in record.subscribed:
            metrics.SUBSCRIPTIONS.labels(name).inc()


def end_subscription() -> None:
    """An operation has ended; a subscription's ends with its stream."""
    record = _RECORD.get()
    if record is not None and record.subscribed:
        for name in record.subscribed:
            metrics.SUBSCRIPTIONS.labels(name).dec()
        record.subscribed = ()
