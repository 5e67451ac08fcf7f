"""The retention worker: erases personal data whose retention period has ended, and carries
out erasure requests whose deferral has ended (docs/privacy.md). It runs in every process
that runs the apply worker, so no cron job needs keeping alive; several may run at once (an
erasure locks its subject, and erasing again changes nothing).

`run_once(now)` is one pass, which tests call with a frozen clock; `run` repeats it every
CASEWORK_RETENTION_INTERVAL_SECONDS until `stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from server.config import Settings
from server.domain.privacy import erasure, retention
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger
from server.store.database import Database

log = logging.getLogger("casework.retention")

BATCH = 100
# One pass stops after this many batches; the next pass goes on.
MAX_BATCHES = 50


@dataclass
class RetentionStats:
    subjects_erased: int = 0
    fields_erased: int = 0
    requests_executed: int = 0
    failures: int = 0


@dataclass(frozen=True)
class Pass:
    subjects_erased: int
    fields_erased: int
    requests_executed: int


class RetentionWorker:
    def __init__(
        self,
        db: Database,
        keyring: Keyring | None,
        ledger: ErasureLedger,
        *,
        interval_seconds: float,
        batch: int = BATCH,
    ) -> None:
        self._db = db
        self._keyring = keyring
        self._ledger = ledger
        self._interval = interval_seconds
        self._batch = batch
        self._stopping = asyncio.Event()
        self.stats = RetentionStats()

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.run_once()
            except Exception:
                # The database, most likely: the next pass tries again.
                self.stats.failures += 1
                log.exception("retention pass failed; will try again")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._interval)

    async def run_once(self, now: datetime | None = None) -> Pass:
        now = now or datetime.now(UTC)
        subjects = fields = executed = 0
        for _ in range(MAX_BATCHES):
            due = await retention.due_for_erasure(self._db, now, self._batch)
            progressed = False
            for subject in due:
                erased = await erasure.erase_retained(
                    self._db, self._keyring, self._ledger, subject.subject_ref, subject.item_ids
                )
                if erased.changed:
                    progressed = True
                    subjects += 1
                    fields += erased.fields_erased
            # A batch erased nothing: a hold the query did not see (judged by the database's
            # clock) keeps the rest; the next pass looks again.
            if len(due) < self._batch or not progressed:
                break
        for _ in range(MAX_BATCHES):
            receipts = await erasure.execute_deferred(
                self._db, self._keyring, self._ledger, now, self._batch
            )
            executed += len(receipts)
            fields += sum(r.fields_erased for r in receipts)
            if len(receipts) < self._batch:
                break
        self.stats.subjects_erased += subjects
        self.stats.fields_erased += fields
        self.stats.requests_executed += executed
        if subjects or executed:
            # Counts only: subjects and values are never logged.
            log.info(
                "retention: erased %d field(s) of %d subject(s); %d deferred erasure(s) done",
                fields,
                subjects,
                executed,
            )
        return Pass(subjects, fields, executed)


def standalone_retention(db: Database, settings: Settings) -> RetentionWorker:
    """`casework worker`'s: the key file and ledger the serving processes use."""
    privacy = settings.privacy
    return RetentionWorker(
        db,
        Keyring.from_key_file(privacy.key_file or settings.home / "keys.json"),
        ErasureLedger(privacy.erasure_ledger or settings.home / "erasure-ledger.jsonl"),
        interval_seconds=privacy.retention_interval_seconds,
    )
