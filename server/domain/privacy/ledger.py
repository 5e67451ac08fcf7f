"""The erasure ledger: every erasure, one JSON line each, kept outside the database.

A restore brings back a backup taken before some erasures; the ledger does not go back with
it. `casework privacy replay` reads it and erases again what each line names (erasure is
idempotent, so replaying lines already applied changes nothing).

A line is appended and fsynced while the erasure's transaction is still open, before it
commits: a committed erasure always has its line. A line whose transaction then failed names
an erasure that was approved but did not happen; replaying it erases what was meant to be
erased anyway. A line names the subject, the items, the request (or retention) and the
time, never a value.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

LEDGER_VERSION = 1


class LedgerError(Exception):
    """A ledger that cannot be written or read: the operator's to fix, said in one line."""


@dataclass(frozen=True)
class LedgerEntry:
    subject_ref: str
    # "request" (an approved erasure request) or "retention" (the worker).
    kind: str
    at: datetime
    item_ids: tuple[int, ...]
    request_id: int | None = None
    queues: tuple[str, ...] | None = None

    def to_json(self) -> str:
        document: dict[str, Any] = {
            "v": LEDGER_VERSION,
            "at": self.at.isoformat(),
            "kind": self.kind,
            "subject_ref": self.subject_ref,
            "request_id": self.request_id,
            "item_ids": list(self.item_ids),
            "queues": None if self.queues is None else list(self.queues),
        }
        return json.dumps(document, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> LedgerEntry:
        document = json.loads(line)
        queues = document.get("queues")
        return cls(
            subject_ref=str(document["subject_ref"]),
            kind=str(document["kind"]),
            at=datetime.fromisoformat(document["at"]),
            item_ids=tuple(int(i) for i in document["item_ids"]),
            request_id=None if document.get("request_id") is None else int(document["request_id"]),
            queues=None if queues is None else tuple(str(q) for q in queues),
        )


class ErasureLedger:
    """An append-only file of LedgerEntry lines. Appends are serialised within the process
    and each is fsynced; several processes append with O_APPEND, a line at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, entries: Sequence[LedgerEntry]) -> None:
        if not entries:
            return
        data = "".join(entry.to_json() + "\n" for entry in entries).encode()
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    written = 0
                    while written < len(data):
                        written += os.write(descriptor, data[written:])
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
            except OSError as error:
                raise LedgerError(
                    f"cannot append to the erasure ledger {self.path}: {error}"
                ) from None

    def entries(self) -> Iterator[LedgerEntry]:
        """Every entry in order. A last line cut short by a crash is skipped (its erasure did
        not commit: the line is written before the commit); any other bad line stops here."""
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return
        except OSError as error:
            raise LedgerError(f"cannot read the erasure ledger {self.path}: {error}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield LedgerEntry.from_json(line)
            except (ValueError, KeyError, TypeError) as error:
                if number == len(lines):
                    return
                raise LedgerError(
                    f"erasure ledger {self.path}, line {number}: not an entry ({error})"
                ) from None
