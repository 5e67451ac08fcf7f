"""Redrives by broker: `casework intake` publishes the corrected message back to where the
original failed.

A workflow configured with redriveVia BROKER has each requested redrive queued for delivery
(exception_redrives.delivery_state 'pending') as a webhook workflow's is; the apply worker
leaves it alone, and the intake claims it (db/queries/intake_redrives.sql) when the
exception's newest intake message came from one of its sources. One attempt:

1. claim (SKIP LOCKED, under a lock that lapses: a crashed intake's claim is taken over);
2. build the corrected message: the original JSON body with the approved correction's
   `changes` merged in (JSON merge patch, RFC 7396), or the whole message the correction
   gives as `{"$replace": ...}`;
3. publish it to the origin with the redrive key as its message id and in the
   `Casework-Redrive-Key` header, outside any transaction, bounded by the workflow's
   redriveTimeoutSeconds;
4. record delivered, or the failure with backoff, by the statements webhook redrives use
   (fenced by the attempt number; out of attempts, or nothing to publish: the redrive is
   reported failed by Casework and the exception goes back to a person, in the same
   transaction).

Publishing is at least once: an intake that dies between the broker's confirmation and
the recording publishes again after the lock lapses, with the same message id. Delivered
is not done: the owning system reports the durable result (reportRedriveResult)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from server.domain.exceptions import redrive_delivery
from server.domain.review.apply import next_attempt_at, utcnow
from server.effects.webhook import REDRIVE_HEADER
from server.events.outage import OutageLog, Retrying, describe
from server.intake.sources import BrokerKind, Origin, RedrivePublisher
from server.observability.intake_redrives import RedriveOutcome, record_intake_redrive
from server.store import sql
from server.store.database import Database, Row

log = logging.getLogger("casework.intake.redrive")
OUTAGE = OutageLog(log, "intake redrives")

# A correction that gives the whole message rather than changes to the original: its
# `changes` is exactly {"$replace": <the message>} (a JSON string is published as its
# text, anything else as JSON). Needed when the original was not kept or is not JSON.
REPLACE = "$replace"
# Headers of the original that are not carried to the redrive: the broker's record of the
# failure (RabbitMQ adds x-death and friends when it dead-letters), the id NATS keys its
# once-only window on (set afresh by its publisher), Casework's own markers (set afresh).
DROPPED_HEADERS = frozenset(
    {"x-death", "x-delivery-count", "nats-msg-id", "casework-park-reason", REDRIVE_HEADER.lower()}
)
DROPPED_PREFIXES = ("x-first-death-", "x-last-death-", "nats-expected-")


@dataclass(frozen=True)
class RedriveSettings:
    # Redrives claimed (and published concurrently) per round.
    batch_size: int = 16
    # How often the loop looks for due redrives (new ones, and retries falling due).
    poll_seconds: float = 1.0
    # The first retry's delay; it doubles per attempt (capped, jittered), as for webhooks.
    backoff_seconds: float = 1.0


@dataclass(frozen=True)
class BrokerRedrive:
    """One claimed attempt at publishing a redrive, with the intake message behind it
    (source, message id, origin, body, headers: all None when no intake took the exception)."""

    key: str
    attempt: int
    exception_id: str
    workflow: str
    source_record_id: str
    version: int
    changes: Any
    max_attempts: int
    timeout_seconds: float
    source: str | None
    message_id: str | None
    origin: Mapping[str, Any] | None
    body: bytes | None
    headers: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Row) -> BrokerRedrive:
        return cls(
            key=row["key"],
            attempt=row["delivery_attempts"],
            exception_id=row["exception_id"],
            workflow=row["workflow"],
            source_record_id=row["source_record_id"],
            version=row["version"],
            changes=row["changes"],
            max_attempts=row["redrive_max_attempts"],
            timeout_seconds=row["redrive_timeout_seconds"],
            source=row["source"],
            message_id=row["message_id"],
            origin=row["origin"],
            body=None if row["body"] is None else bytes(row["body"]),
            headers=row["headers"] or {},
        )


class Unpublishable(Exception):
    """Nothing can be published for this redrive: retrying cannot help, a person must."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: `patch`'s members replace the target's, recursively for
    objects; a null member removes one; a patch that is not an object replaces the whole."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = merge_patch(merged.get(name), value)
    return merged


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def corrected_message(body: bytes | None, changes: Any) -> bytes:
    """The message to publish: the whole message the correction gives, or the original JSON
    body with the correction's changes merged in. Raises Unpublishable, saying why, when
    neither is possible."""
    if isinstance(changes, dict) and set(changes) == {REPLACE}:
        whole = changes[REPLACE]
        return whole.encode() if isinstance(whole, str) else _json(whole)
    how = f'the correction must give the whole message as {{"{REPLACE}": ...}}'
    if body is None:
        raise Unpublishable(
            f"the original message was not kept (its queue's privacy policy), so the "
            f"correction's changes cannot be merged into it: {how}"
        )
    try:
        original = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Unpublishable(
            f"the original message is not JSON, so the correction's changes cannot be merged "
            f"into it: {how}"
        ) from None
    return _json(merge_patch(original, changes))


def carried_headers(original: Mapping[str, Any]) -> dict[str, str]:
    """The original's headers that go with the corrected message (what the consumer may
    need, like the header the intake read the source record id from): scalar values, as
    text, without the broker's failure record or Casework's own markers."""
    carried: dict[str, str] = {}
    for name, value in original.items():
        lowered = name.lower()
        if lowered in DROPPED_HEADERS or lowered.startswith(DROPPED_PREFIXES):
            continue
        if isinstance(value, str):
            carried[name] = value
        elif isinstance(value, bool | int | float):
            carried[name] = json.dumps(value)
    return carried


def origin_of(stored: Mapping[str, Any]) -> Origin:
    """The Origin an intake message recorded (Origin.as_json)."""
    try:
        broker = BrokerKind(stored["broker"])
    except (KeyError, ValueError):
        raise Unpublishable(f"the intake message names no known broker: {stored!r}") from None
    names = ("exchange", "routing_key", "subject", "stream", "queue")
    fields = {name: stored[name] for name in names if isinstance(stored.get(name), str)}
    return Origin(broker, **fields)


async def claim_due(db: Database, sources: list[str], limit: int) -> list[BrokerRedrive]:
    rows = await db.fetch(
        sql.intake_redrives.INTAKE_REDRIVES_CLAIM, sources=sources, batch_size=limit
    )
    return [BrokerRedrive.from_row(row) for row in rows]


async def redrive_round(
    db: Database,
    publishers: Mapping[str, RedrivePublisher],
    *,
    settings: RedriveSettings = RedriveSettings(),
) -> dict[str, RedriveOutcome]:
    """Claims what is due for these sources (by name) and makes one attempt at each,
    concurrently: the outcome of each, by redrive key. Raises what claiming raised (the
    database away); an attempt that could not be recorded is logged, and its lock lapses."""
    claimed = await claim_due(db, list(publishers), settings.batch_size)
    results = await asyncio.gather(
        *(_attempt(db, publishers, due, settings) for due in claimed), return_exceptions=True
    )
    outcomes: dict[str, RedriveOutcome] = {}
    for due, result in zip(claimed, results, strict=True):
        if isinstance(result, asyncio.CancelledError):
            raise result
        if isinstance(result, BaseException):
            log.error(
                "redrive %s: attempt %d could not be recorded; it is made again once its "
                "lock lapses: %s",
                due.key,
                due.attempt,
                describe(result),
            )
        else:
            outcomes[due.key] = result
    return outcomes


async def _attempt(
    db: Database,
    publishers: Mapping[str, RedrivePublisher],
    due: BrokerRedrive,
    settings: RedriveSettings,
) -> RedriveOutcome:
    try:
        if due.source is None or due.origin is None:
            raise Unpublishable(
                "no intake took this exception from a broker, so there is no origin to "
                "publish the corrected message to"
            )
        origin = origin_of(due.origin)
        body = corrected_message(due.body, due.changes)
    except Unpublishable as reason:
        return await _failed(db, due, str(reason), permanent=True, settings=settings)
    headers = carried_headers(due.headers) | {REDRIVE_HEADER: due.key}
    try:
        async with asyncio.timeout(due.timeout_seconds):
            await publishers[due.source].publish(origin, body, message_id=due.key, headers=headers)
    except TimeoutError:
        error = f"the broker did not confirm the message within {due.timeout_seconds:g} s"
        return await _failed(db, due, error, permanent=False, settings=settings)
    except Exception as failure:
        return await _failed(db, due, describe(failure), permanent=False, settings=settings)
    if not await redrive_delivery.record_delivered(db, due):
        return _counted(due, RedriveOutcome.SUPERSEDED)
    log.info("redrive %s published to %s (attempt %d)", due.key, due.source, due.attempt)
    return _counted(due, RedriveOutcome.PUBLISHED)


async def _failed(
    db: Database, due: BrokerRedrive, error: str, *, permanent: bool, settings: RedriveSettings
) -> RedriveOutcome:
    retry_at = next_attempt_at(
        due.attempt, base_seconds=settings.backoff_seconds, retry_after=None, now=utcnow()
    )
    state = await redrive_delivery.record_failure(
        db, due, error=error, permanent=permanent, retry_at=retry_at
    )
    if state is None:
        return _counted(due, RedriveOutcome.SUPERSEDED)
    if state == "failed":
        log.error("redrive %s could not be published: %s", due.key, error)
        return _counted(due, RedriveOutcome.FAILED)
    log.warning("redrive %s: attempt %d failed, will retry: %s", due.key, due.attempt, error)
    return _counted(due, RedriveOutcome.RETRIED)


def _counted(due: BrokerRedrive, outcome: RedriveOutcome) -> RedriveOutcome:
    record_intake_redrive(due.source, outcome)
    return outcome


async def redrive_until_stopped(
    db: Database,
    publishers: Mapping[str, RedrivePublisher],
    stop: asyncio.Event,
    *,
    settings: RedriveSettings = RedriveSettings(),
    wake: asyncio.Event | None = None,
) -> None:
    """The intake's redrive loop: a round every poll interval (at once again after a full
    batch, or when `wake` is set) until `stop` is set. While the database is away it backs
    off, with one log line when lost and one when back. A round in progress when `stop` is
    set finishes (each publish is bounded by its workflow's timeout)."""
    retrying = Retrying(OUTAGE)
    try:
        while not stop.is_set():
            if wake is not None:
                wake.clear()
            try:
                outcomes = await redrive_round(db, publishers, settings=settings)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if retrying.failed(error):
                    await _pause(stop, wake, retrying.delay())
                    continue
                log.exception("intake redrives: claiming failed; will poll again")
                outcomes = {}
            else:
                retrying.succeeded()
            if len(outcomes) < settings.batch_size:
                await _pause(stop, wake, settings.poll_seconds)
    finally:
        retrying.abandon()


async def _pause(stop: asyncio.Event, wake: asyncio.Event | None, seconds: float) -> None:
    """Waits `seconds`, or less if `stop` or `wake` is set."""
    events = [stop] if wake is None else [stop, wake]
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        for waiter in waiters:
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
