"""Recording the apply worker's successes in batches: one statement for every attempt that
ended in a 2xx while the previous recording ran, instead of one statement each.

An attempt hands its success to `record` and waits for its own answer (applied, or applied
already). The first success starts a recording of everything waiting; successes that come
while it runs wait for the next one, which starts as soon as it ends. Under a trickle each
recording holds one decision and costs what it did before; under load the recordings grow
and their number stays at about one per database round trip (group commit).

Nothing about what is recorded changes (applications_record_applied does what
application_record_applied does, row by row): the proof is inserted once per decision, a
repeat says so. A redriven decision closes its exception in the same transaction, so it is
recorded on its own, as before. Each recording runs in a task of its own, in the context
of the attempt that started it (its trace span, its decision id in the log), so that an
attempt cancelled while it waits (the worker fencing itself) does not cancel a recording
that carries others; the decision it carried out is recorded all the same.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass, field

from server.domain.review import apply
from server.store.database import Database


@dataclass
class _Waiting:
    attempt: apply.AppliedAttempt
    context: contextvars.Context
    answer: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class AppliedRecorder:
    def __init__(self, db: Database, worker: str) -> None:
        self._db = db
        self._worker = worker
        self._waiting: list[_Waiting] = []
        self._recording: asyncio.Task[None] | None = None

    async def record(self, attempt: apply.AppliedAttempt) -> bool:
        """True if this attempt applied the decision; False if it had been applied already.
        Raises what the database raised (the lock lapses and the decision is tried again)."""
        if attempt.due.redrive_key is not None:
            return await apply.record_applied(
                self._db,
                attempt.due,
                note=attempt.note,
                worker=self._worker,
                started_at=attempt.started_at,
            )
        waiting = _Waiting(attempt, contextvars.copy_context())
        self._waiting.append(waiting)
        if self._recording is None:
            self._start()
        return await waiting.answer

    def _start(self) -> None:
        first = self._waiting[0]
        self._recording = asyncio.create_task(
            self._record_batch(), name="casework-apply-recording", context=first.context
        )

    async def _record_batch(self) -> None:
        batch, held = self._take_batch()
        try:
            applied = await apply.record_applied_batch(
                self._db, [w.attempt for w in batch], worker=self._worker
            )
        except Exception as error:
            for waiting in batch:
                if not waiting.answer.done():
                    waiting.answer.set_exception(error)
        else:
            for waiting in batch:
                if not waiting.answer.done():
                    waiting.answer.set_result(applied.get(waiting.attempt.due.decision_id, False))
        finally:
            for waiting in batch:
                # Cancelled itself (the loop closing): its attempts are tried again later.
                waiting.answer.cancel()
            self._waiting[:0] = held
            self._recording = None
            if self._waiting:
                self._start()

    def _take_batch(self) -> tuple[list[_Waiting], list[_Waiting]]:
        """Everything waiting, each decision once: a decision claimed again by this worker
        (its lock lapsed while an attempt ran) waits for the next recording, whose answer
        then says it was applied already."""
        batch: list[_Waiting] = []
        held: list[_Waiting] = []
        seen: set[int] = set()
        for waiting in self._waiting:
            decision_id = waiting.attempt.due.decision_id
            (held if decision_id in seen else batch).append(waiting)
            seen.add(decision_id)
        self._waiting = []
        return batch, held

    async def close(self) -> None:
        """Waits for the recordings still running (at the worker's stop)."""
        while self._recording is not None:
            await asyncio.wait({self._recording})
