"""An apply worker's liveness: how another worker knows, within seconds, that this one died.

Each run of a worker has a row in `apply_workers` (db/migrations/0029) that it renews every
quarter of its lease, and every claim it makes names that row. Once a row's lease has passed,
any worker may take over the claims that name it, without waiting out their locks (twice
the effect timeout plus ten seconds, still the bound for claims that name no row).

Why a row and not a session advisory lock (pg_try_advisory_lock on a connection held for
the worker's life): a transaction pooler hands a session's statements to any server
connection, so a session lock would be held by whichever connection took it and released
by chance; a row works through a pooler, moves with the data in a failover, and can be read.

A worker that is alive but cannot renew (its database away, its loop stalled) must not keep
attempts going that another worker may already have taken over: it fences itself, cancelling
its attempts in flight once its own clock says its lease is nearly over (measured from before
the renewal was sent, so it is never later than the database's), and comes back under a new
id. The decision id stays the receiver's idempotency key, and the proof of application is
still recorded once (applications_record_applied, application_record_applied): the fence
that records stays the guard.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from server.domain.review import apply
from server.events.outage import OutageLog, Retrying
from server.store.database import Database

log = logging.getLogger("casework.worker")

# A worker renews this many times per lease, and fences itself this far into it without one.
RENEWALS_PER_LEASE = 4
FENCE_AT = 0.75


class Liveness:
    def __init__(
        self,
        db: Database,
        name: str,
        lease_seconds: float,
        outage: OutageLog,
        fence: Callable[[], int],
    ) -> None:
        self._db = db
        self._name = name
        self.lease_seconds = lease_seconds
        self._outage = outage
        self._fence = fence
        self.current = self._new_run()
        # The loop's time by which the lease must be renewed, or this worker fences itself.
        self._fence_at: float | None = None
        self.fenced = 0

    def _new_run(self) -> apply.Liveness:
        return apply.Liveness(uuid.uuid4(), self._name, self.lease_seconds)

    def renewed(self, run: apply.Liveness, sent_at: float) -> bool:
        """A renewal (or a claim) for `run`, sent at loop time `sent_at`, succeeded. False if
        the worker fenced itself meanwhile: what that claim took belongs to a lapsing run."""
        if run is not self.current:
            return False
        fence_at = sent_at + self.lease_seconds * FENCE_AT
        if self._fence_at is None or fence_at > self._fence_at:
            self._fence_at = fence_at
        return True

    async def run(self) -> None:
        """Renews until cancelled; fences the worker when renewals fail for too long."""
        loop = asyncio.get_running_loop()
        retrying = Retrying(self._outage)
        try:
            while True:
                sent, run = loop.time(), self.current
                try:
                    await apply.renew_liveness(self._db, run)
                except Exception as error:
                    if not retrying.failed(error):
                        log.exception("worker %s: renewing its liveness failed", self._name)
                else:
                    retrying.succeeded()
                    self.renewed(run, sent)
                self._fence_if_lapsing(loop.time())
                wait = self.lease_seconds / RENEWALS_PER_LEASE
                if retrying.down:
                    wait = min(wait, retrying.delay())
                if self._fence_at is not None:
                    wait = max(0.0, min(wait, self._fence_at - loop.time()))
                await asyncio.sleep(wait)
        finally:
            retrying.abandon()

    def _fence_if_lapsing(self, now: float) -> None:
        if self._fence_at is None or now < self._fence_at:
            return
        abandoned = self._fence()
        self.fenced += 1
        log.warning(
            "worker %s: could not renew its liveness for %.1f s; abandoned %d attempt(s) "
            "for another worker to take over, and goes on under a new id",
            self._name,
            self.lease_seconds * FENCE_AT,
            abandoned,
        )
        self.current = self._new_run()
        self._fence_at = None

    async def leave(self) -> None:
        """At shutdown, after the attempts in flight ended or were cancelled."""
        try:
            await apply.leave(self._db, self.current.worker_id)
        except Exception as error:
            # The lease lapses by itself; nothing is lost.
            log.warning("worker %s: could not record that it stopped: %s", self._name, error)
