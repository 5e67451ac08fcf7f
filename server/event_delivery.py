"""Delivering the event outbox to webhook endpoints, for the apply worker (server/worker.py):
every `casework serve` and `casework worker` runs it beside decisions and redrives.

Each attempt is claimed (a lock that lapses), POSTed outside any transaction, and recorded,
so that a delivery goes out at least once: a worker that dies mid-POST leaves the lock to
lapse and another attempt is made, with the same `webhook-id`. The body is the endpoint's
format (Standard Webhooks' envelope, or a CloudEvents 1.0 structured-mode event), signed
with every secret in force. A 2xx is delivered; 429 and 5xx, timeouts and refused
connections are retried with the decisions' backoff (Retry-After is a floor); another 4xx
fails the delivery for good (an admin may replay it); 410 Gone disables the endpoint and
leaves the delivery pending for a re-enable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from datetime import datetime

from server.domain.integrations import deliveries
from server.domain.integrations.deliveries import DeliveryState, DueEventDelivery
from server.domain.integrations.envelope import render
from server.domain.review import apply
from server.domain.review.queues import target_refusal
from server.effects.http import Session
from server.effects.webhook import Answer, Signing, send_signed
from server.observability import metrics
from server.observability.metrics import EventDeliveryOutcome
from server.store.database import Database
from server.store.errors import is_unavailable

log = logging.getLogger("casework.worker")

# Retention runs at most this often per worker (each run deletes a bounded batch).
PRUNE_EVERY_SECONDS = 600.0


async def post_event(client: Session, due: DueEventDelivery) -> Answer:
    """One signed POST of the event in the endpoint's format."""
    payload, content_type = render(due.event, due.format)
    return await send_signed(
        client,
        target=due.url,
        payload=payload,
        signing=Signing(due.event.message_id, due.secrets, legacy=due.legacy_headers),
        timeout_seconds=due.timeout_seconds,
        content_type=content_type,
    )


Spawn = Callable[[Coroutine[None, None, None]], None]


class EventDeliveries:
    """The worker's part that delivers events: claims a batch when there may be some due,
    spawns one task per attempt, records, and prunes old events now and then."""

    def __init__(
        self,
        db: Database,
        *,
        worker: str,
        backoff_seconds: float,
        poll_seconds: float,
        allowed_hosts: frozenset[str],
        retention_seconds: float,
    ) -> None:
        self._db = db
        self._worker = worker
        self._backoff_seconds = backoff_seconds
        self._poll_seconds = poll_seconds
        self._allowed_hosts = allowed_hosts
        self._retention_seconds = retention_seconds
        self._look = True
        self._next_look = 0.0
        self._next_prune = 0.0
        self._next_endpoint_check = 0.0
        self._any_endpoint = False
        self.delivered = 0
        self.retried = 0
        self.failed = 0
        self.disabled = 0

    def hint(self) -> None:
        """Something changed that may have recorded events: look on the next round."""
        self._look = True

    async def _endpoints_enabled(self, now: float) -> bool:
        """Whether any endpoint is enabled, asked at most once a poll interval: without
        endpoints, the decisions' hints would otherwise cost a claim each. One created since
        is found within the interval."""
        if now >= self._next_endpoint_check:
            self._next_endpoint_check = now + self._poll_seconds
            self._any_endpoint = await deliveries.any_endpoint_enabled(self._db)
        return self._any_endpoint

    def _may_be_due(self, now: float) -> bool:
        """Look on a hint, after a full batch, and otherwise once a poll interval (for
        retries falling due and events no hint announced)."""
        if not self._look and now < self._next_look:
            return False
        self._look = False
        self._next_look = now + self._poll_seconds
        return True

    async def start(self, client: Session, free: int, spawn: Spawn) -> int:
        """Claims up to `free` attempts and spawns them; returns how many. Raises what the
        database raised (the worker backs off on an outage)."""
        now = asyncio.get_running_loop().time()
        if now >= self._next_prune:
            self._next_prune = now + PRUNE_EVERY_SECONDS
            spawn(self._prune())
        if free <= 0 or not self._may_be_due(now) or not await self._endpoints_enabled(now):
            return 0
        claimed = await deliveries.claim_due(self._db, free)
        for due in claimed:
            spawn(self._deliver(client, due))
        # A full batch: there may be more right now.
        self._look = len(claimed) == free
        return len(claimed)

    async def _deliver(self, client: Session, due: DueEventDelivery) -> None:
        try:
            refusal = target_refusal(due.url, self._allowed_hosts)
            if refusal:
                # The allow-list changed since the endpoint was registered: a person must
                # change one or the other.
                answer = Answer(None, f"not sent: {refusal}", permanent=True)
            else:
                answer = await post_event(client, due)
            await self._record(due, answer)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The lock lapses and the event is delivered again; keep the traceback.
            log.exception(
                "worker %s: delivering event %s to endpoint %s failed",
                self._worker,
                due.event.message_id,
                due.endpoint_id,
            )

    async def _record(self, due: DueEventDelivery, answer: Answer) -> None:
        if answer.delivered:
            assert answer.status is not None
            if await deliveries.record_delivered(self._db, due, answer.status):
                self.delivered += 1
                metrics.record_event_delivery(EventDeliveryOutcome.DELIVERED)
            return
        error = answer.error or "no answer"
        if answer.gone:
            if await deliveries.record_gone(self._db, due, error=error):
                self.disabled += 1
                metrics.record_endpoint_disabled_by_receiver()
                log.warning(
                    "webhook endpoint %s answered 410 Gone: disabled until an admin enables it",
                    due.endpoint_id,
                )
            metrics.record_event_delivery(EventDeliveryOutcome.GONE)
            return
        state = await deliveries.record_failure(
            self._db,
            due,
            status=answer.status,
            error=error,
            permanent=answer.permanent,
            retry_at=self._retry_at(due.round_attempt, answer.retry_after),
        )
        if state is DeliveryState.FAILED:
            self.failed += 1
            metrics.record_event_delivery(EventDeliveryOutcome.FAILED)
            log.error(
                "event %s could not be delivered to endpoint %s after %d attempt(s): %s",
                due.event.message_id,
                due.endpoint_id,
                due.attempt,
                error,
            )
        elif state is DeliveryState.PENDING:
            self.retried += 1
            metrics.record_event_delivery(EventDeliveryOutcome.RETRIED)

    def _retry_at(self, attempt: int, retry_after: float | None) -> datetime:
        # Events back off as decisions do (server/domain/review/apply.py).
        return apply.next_attempt_at(
            attempt,
            base_seconds=self._backoff_seconds,
            retry_after=retry_after,
            now=apply.utcnow(),
        )

    async def _prune(self) -> None:
        try:
            pruned = await deliveries.prune(self._db, self._retention_seconds)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if is_unavailable(error):
                # The worker's outage log says the database is away; once is enough.
                log.debug("worker %s: pruning waits for the database", self._worker)
            else:
                log.exception("worker %s: pruning delivered events failed", self._worker)
            return
        if pruned:
            log.info("worker %s: pruned %d delivered event(s)", self._worker, pruned)
