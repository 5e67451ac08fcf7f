"""The apply worker: carries recorded decisions out, at least once per attempt and recorded
exactly once, with retries for what may pass and a visible failure for what will not. It
also delivers the redrives of workflows that take them by webhook, the same way, and the
event outbox to webhook endpoints (server/event_delivery.py).

Several workers may run at once (SKIP LOCKED shares the work). A hint wakes the worker; a
short poll is the backstop for hints that never come (a retry falling due, a lost hint).
While the database is away the worker backs off (capped, jittered; one log line when lost
and one when back) and comes back at once on a hint or the listener's reconnection.
SIGTERM: stop claiming, let attempts in flight finish for a grace period, then abandon
them. A worker's claims name its liveness row (server/worker_liveness.py): an abandoned or
SIGKILLed attempt is taken over by another worker once that row's lease lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime

from server.apply_recorder import AppliedRecorder
from server.config import Settings
from server.config_mail import MailSettings
from server.domain.exceptions import redrive_delivery
from server.domain.exceptions.redrive_delivery import DueDelivery
from server.domain.integrations import sweeps
from server.domain.model import EffectKind
from server.domain.review import apply
from server.domain.review.queues import target_refusal
from server.effects.errors import PermanentEffectError, TransientEffectError
from server.effects.http import Session, open_session
from server.effects.run import perform
from server.effects.webhook import post_redrive
from server.event_delivery import EventDeliveries
from server.events.channels import Event, EventKind
from server.events.listener import PostgresListener
from server.events.outage import OutageLog, Retrying, quiet_outage_tracebacks
from server.events.reconnecting import ReconnectingTransport
from server.events.redis import RedisTransport
from server.notification_delivery import NotificationSender, NotificationSettings
from server.notification_delivery import sweep_until_stopped as sweep_unclaimed_until_stopped
from server.observability import metrics, tracing
from server.observability.context import DECISION_ID
from server.observability.metrics import ApplyOutcome
from server.pooler import listen_dsn
from server.retention_worker import RetentionWorker, standalone_retention
from server.store.database import Database, open_service_database
from server.store.queries import Queries
from server.worker_liveness import Liveness

log = logging.getLogger("casework.worker")
OUTAGE = OutageLog(log, "apply worker")

POLL_SECONDS = 1.0
GRACE_SECONDS = 10.0
# "exception": a redrive may have put a failed decision back on the work list.
HINT_KINDS = frozenset(
    {EventKind.DECIDED, EventKind.ESCALATED, EventKind.OVERTURNED, EventKind.EXCEPTION}
)


@dataclass(frozen=True)
class WorkerSettings:
    concurrency: int = 16
    backoff_seconds: float = 1.0
    poll_seconds: float = POLL_SECONDS
    grace_seconds: float = GRACE_SECONDS
    # How long the worker's liveness lasts once renewed (CASEWORK_WORKER_LEASE_SECONDS).
    lease_seconds: float = 10.0
    # Hosts webhooks may be posted to (CASEWORK_EFFECT_ALLOWED_HOSTS); empty: any host.
    allowed_hosts: frozenset[str] = frozenset()
    # How long delivered events are kept (CASEWORK_EVENT_RETENTION_DAYS).
    event_retention_seconds: float = 30 * 86400.0
    # The console links' base in notifications (CASEWORK_PUBLIC_URL).
    public_url: str | None = None
    # How e-mail channels send (CASEWORK_SMTP_URL, CASEWORK_NOTIFY_FROM); None: they cannot.
    mail: MailSettings | None = None


def worker_settings(settings: Settings) -> WorkerSettings:
    return WorkerSettings(
        concurrency=settings.worker_concurrency,
        backoff_seconds=settings.apply_backoff_seconds,
        lease_seconds=settings.worker_lease_seconds,
        allowed_hosts=settings.effect_allowed_hosts,
        event_retention_seconds=settings.event_retention_days * 86400.0,
        public_url=settings.auth.public_url,
        mail=settings.mail,
    )


@dataclass
class WorkerStats:
    applied: int = 0
    retried: int = 0
    failed: int = 0
    already_applied: int = 0
    redrives_delivered: int = 0
    redrives_retried: int = 0
    redrives_undeliverable: int = 0


class ApplyWorker:
    def __init__(
        self,
        db: Database,
        settings: WorkerSettings,
        *,
        name: str | None = None,
        perform_effect: Callable[[Session, apply.DueApplication], Awaitable[str]] | None = None,
        time_events: sweeps.SweepSettings | None = None,
        notifications: NotificationSettings | None = None,
    ) -> None:
        self._db = db
        self._settings = settings
        # The sweep for the time-based events (item.overdue, lease.lapsed).
        self._time_events = time_events or sweeps.SweepSettings()
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self._perform = perform_effect or perform
        self._wake = asyncio.Event()
        # Ends a backoff early: a hint or a reconnection says the database is back.
        self._resume = asyncio.Event()
        self._stopping = asyncio.Event()
        self._in_flight: set[asyncio.Task[None]] = set()
        # Attempts of decisions (a subset of _in_flight), cancelled if the worker fences.
        self._applying: set[asyncio.Task[None]] = set()
        self.liveness = Liveness(db, self.name, settings.lease_seconds, OUTAGE, self._fence)
        self._look_for_redrives = True
        self._next_redrive_look = 0.0
        self.stats = WorkerStats()
        # Successes are recorded in batches (server/apply_recorder.py).
        self.recorder = AppliedRecorder(db, self.name)
        # Claims are made in batches: once attempts are in flight, the next claim waits
        # until no more than this many are (a hint included), instead of one claim for
        # each attempt that ends.
        self._refill_at = settings.concurrency // 2
        # The event outbox's deliveries to webhook endpoints (server/event_delivery.py).
        self.events = EventDeliveries(
            db,
            worker=self.name,
            backoff_seconds=settings.backoff_seconds,
            poll_seconds=settings.poll_seconds,
            allowed_hosts=settings.allowed_hosts,
            retention_seconds=settings.event_retention_seconds,
        )
        # Notifications to owners' channels (server/notification_delivery.py).
        self._notification_settings = notifications or NotificationSettings(
            poll_seconds=settings.poll_seconds,
            backoff_seconds=settings.backoff_seconds,
            public_url=settings.public_url,
            allowed_hosts=settings.allowed_hosts,
            mail=settings.mail,
        )
        self.notifications = NotificationSender(db, self._notification_settings, worker=self.name)

    def hint(self, event: Event) -> None:
        if event.kind == EventKind.EXCEPTION:
            self._look_for_redrives = True
        if event.kind in HINT_KINDS:
            self.events.hint()
            self._wake.set()
            self._resume.set()

    def wake(self) -> None:
        self._look_for_redrives = True
        self.events.hint()
        self._wake.set()
        self._resume.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._resume.set()

    async def run(self) -> None:
        # An attempt that cannot record while the database is away: one line, not one each.
        quiet_outage_tracebacks(("casework.worker",))
        # One session for the worker's life: its connections are kept between attempts.
        async with open_session(self._settings.concurrency) as client:
            renewing = asyncio.create_task(self.liveness.run(), name="casework-worker-liveness")
            sweeping = asyncio.create_task(
                sweeps.sweep_until_stopped(self._db, self._time_events, self._stopping),
                name="casework-time-event-sweep",
            )
            unclaimed = asyncio.create_task(
                sweep_unclaimed_until_stopped(
                    self._db, self._notification_settings, self._stopping
                ),
                name="casework-unclaimed-sweep",
            )
            try:
                await self._claim_until_stopped(client)
            finally:
                await self._drain()
                await self.recorder.close()
                for task in (renewing, sweeping, unclaimed):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                await self.liveness.leave()

    async def _claim_until_stopped(self, client: Session) -> None:
        retrying = Retrying(OUTAGE)
        try:
            while not self._stopping.is_set():
                self._wake.clear()
                busy = len(self._in_flight)
                free = self._settings.concurrency - busy if busy <= self._refill_at else 0
                try:
                    started = await self._start(client, free) if free > 0 else 0
                except Exception as error:
                    started = 0
                    if retrying.failed(error):
                        await self._back_off(retrying.delay())
                        continue
                    log.exception("worker %s: claiming failed; will poll again", self.name)
                else:
                    retrying.succeeded()
                if free > 0 and started == free:
                    continue  # there may be more due right now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._settings.poll_seconds)
        finally:
            retrying.abandon()

    async def _back_off(self, delay: float) -> None:
        """The database is away: wait `delay`, or less if a hint or the listener's
        reconnection says it is back (an attempt ending is no such sign)."""
        self._resume.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._resume.wait(), delay)

    async def _start(self, client: Session, free: int) -> int:
        """Claims up to `free` attempts, decisions first, then redrive deliveries. Raises
        what the database raised (the caller backs off on an outage)."""
        started = 0
        run, sent = self.liveness.current, asyncio.get_running_loop().time()
        claimed = await apply.claim_due(self._db, free, run)
        # Claimed under a run that has just fenced itself: leave them for its lease to lapse.
        if self.liveness.renewed(run, sent):
            for due in claimed:
                self._spawn(self._attempt(client, due), applying=True)
                started += 1
        if started < free and self._redrives_may_be_due():
            deliveries = await redrive_delivery.claim_due(self._db, free - started)
            for delivery in deliveries:
                self._spawn(self._deliver(client, delivery))
            started += len(deliveries)
            # A full batch: there may be more right now.
            self._look_for_redrives = started == free
        # Then events for webhook endpoints, when some may be due.
        started += await self.events.start(client, free - started, self._spawn)
        # Then notifications to owners' channels.
        started += await self.notifications.start(client, free - started, self._spawn)
        return started

    def _redrives_may_be_due(self) -> bool:
        """Redrive deliveries are rare beside decisions: look for them on a hint that an
        exception changed, and otherwise once a poll interval (for retries falling due),
        not on every round of a busy worker."""
        now = asyncio.get_running_loop().time()
        if not self._look_for_redrives and now < self._next_redrive_look:
            return False
        self._look_for_redrives = False
        self._next_redrive_look = now + self._settings.poll_seconds
        return True

    def _spawn(self, attempt: Coroutine[None, None, None], *, applying: bool = False) -> None:
        task = asyncio.create_task(attempt)
        self._in_flight.add(task)
        if applying:
            self._applying.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._applying.discard(task)
        if len(self._in_flight) <= self._refill_at:
            self._wake.set()

    def _fence(self) -> int:
        """Cancels the attempts of decisions in flight: the liveness they were claimed under
        is lapsing, and another worker may take them over. Returns how many."""
        for task in self._applying:
            task.cancel()
        return len(self._applying)

    async def _drain(self) -> None:
        if not self._in_flight:
            return
        _, pending = await asyncio.wait(self._in_flight, timeout=self._settings.grace_seconds)
        for task in pending:
            task.cancel()
        if pending:
            # Their locks lapse and another attempt is made; nothing is lost.
            log.warning("worker %s: abandoned %d attempt(s) at shutdown", self.name, len(pending))
            await asyncio.wait(pending)

    async def _attempt(self, client: Session, due: apply.DueApplication) -> None:
        # Each attempt runs in a task of its own: every line it logs names the decision.
        DECISION_ID.set(due.decision_id)
        try:
            with tracing.effect_span(
                "casework.effect_attempt",
                decision_id=due.decision_id,
                attempt=due.attempt,
                traceparent=due.traceparent,
            ):
                await self._attempt_and_record(client, due)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Recording failed (the database, most likely): the lock lapses and the decision
            # is attempted again; say so rather than lose the traceback in a task.
            log.exception(
                "worker %s: could not record an attempt on decision %s",
                self.name,
                due.decision_id,
            )

    async def _attempt_and_record(self, client: Session, due: apply.DueApplication) -> None:
        started = apply.utcnow()
        try:
            if due.effect_kind is EffectKind.WEBHOOK:
                self._check_target(due.effect_target or "")
            note = await self._perform(client, due)
        except PermanentEffectError as error:
            await self._failed(due, str(error), permanent=True, retry_after=None, started=started)
        except TransientEffectError as error:
            await self._failed(
                due, str(error), permanent=False, retry_after=error.retry_after, started=started
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.exception("worker %s: effect of decision %s raised", self.name, due.decision_id)
            await self._failed(
                due,
                f"{type(error).__name__}: {error}",
                permanent=False,
                retry_after=None,
                started=started,
            )
        else:
            applied = await self.recorder.record(apply.AppliedAttempt(due, note, started))
            if applied:
                self.stats.applied += 1
                metrics.record_apply_attempt(ApplyOutcome.APPLIED)
            else:
                self.stats.already_applied += 1
                metrics.record_apply_attempt(ApplyOutcome.ALREADY_APPLIED)

    def _check_target(self, target: str) -> None:
        """Targets are checked when configured; the allow-list may have changed since (or a
        target predates it), so it is checked again before every POST. Retrying cannot help:
        a person must change the target or the allow-list."""
        refusal = target_refusal(target, self._settings.allowed_hosts)
        if refusal:
            raise PermanentEffectError(f"not sent: {refusal}")

    async def _failed(
        self,
        due: apply.DueApplication,
        error: str,
        *,
        permanent: bool,
        retry_after: float | None,
        started: datetime,
    ) -> None:
        retry_at = self._retry_at(due.attempt, retry_after)
        state = await apply.record_failure(
            self._db,
            due,
            error=error,
            permanent=permanent,
            retry_at=retry_at,
            worker=self.name,
            started_at=started,
        )
        if state == "failed":
            self.stats.failed += 1
            metrics.record_apply_attempt(ApplyOutcome.FAILED)
            log.error(
                "decision %s could not be carried out after %d attempt(s): %s",
                due.decision_id,
                due.attempt,
                error,
            )
        else:
            self.stats.retried += 1
            metrics.record_apply_attempt(ApplyOutcome.RETRIED)

    def _retry_at(self, attempt: int, retry_after: float | None) -> datetime:
        # Decisions and redrive deliveries back off alike.
        return apply.next_attempt_at(
            attempt,
            base_seconds=self._settings.backoff_seconds,
            retry_after=retry_after,
            now=apply.utcnow(),
        )

    async def _deliver(self, client: Session, due: DueDelivery) -> None:
        try:
            try:
                self._check_target(due.target)
                await post_redrive(client, due)
            except PermanentEffectError as error:
                await self._undelivered(due, str(error), permanent=True, retry_after=None)
            except TransientEffectError as error:
                await self._undelivered(
                    due, str(error), permanent=False, retry_after=error.retry_after
                )
            else:
                if await redrive_delivery.record_delivered(self._db, due):
                    self.stats.redrives_delivered += 1
        except asyncio.CancelledError:
            raise
        except Exception:
            # The lock lapses and the redrive is delivered again; keep the traceback.
            log.exception("worker %s: delivering redrive %s failed", self.name, due.key)

    async def _undelivered(
        self, due: DueDelivery, error: str, *, permanent: bool, retry_after: float | None
    ) -> None:
        retry_at = self._retry_at(due.attempt, retry_after)
        state = await redrive_delivery.record_failure(
            self._db, due, error=error, permanent=permanent, retry_at=retry_at
        )
        if state == "failed":
            self.stats.redrives_undeliverable += 1
            log.error("redrive %s could not be delivered: %s", due.key, error)
        elif state == "pending":
            self.stats.redrives_retried += 1


def _stop_both(worker: ApplyWorker, retention: RetentionWorker) -> Callable[[], None]:
    def stop() -> None:
        worker.stop()
        retention.stop()

    return stop


async def run_standalone(app_dsn: str, settings: Settings) -> None:
    """`casework worker`: its own pool and its own hint listener; stops on SIGTERM/SIGINT."""
    transport: ReconnectingTransport
    if settings.events_transport == "redis":
        redis = RedisTransport(settings.redis_url, channel=settings.redis_channel)
        # Its writes' hints (an application recorded, a failure) go to Redis as a serving
        # process's do: a NOTIFY would reach nobody in a Redis deployment.
        transport, publish_hints = redis, redis.publish
    else:
        transport, publish_hints = PostgresListener(listen_dsn(settings, app_dsn)), None
    pool, db = await open_service_database(
        app_dsn,
        Queries(settings.db_dir / "queries"),
        min_size=1,
        max_size=settings.worker_concurrency + 2,
        publish_hints=publish_hints,
        transaction_pooler=settings.transaction_pooler,
    )
    worker = ApplyWorker(db, worker_settings(settings))
    # Beside it, as in a serving process: retention and deferred erasures.
    retention = standalone_retention(db, settings)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _stop_both(worker, retention))
    retention_task = asyncio.create_task(retention.run(), name="casework-retention-worker")
    try:
        await transport.start(worker.hint, worker.wake)
        await worker.run()
    finally:
        retention.stop()
        await retention_task
        await transport.stop()
        await pool.close()
        log.info("worker %s stopped: %s", worker.name, worker.stats)
