"""Deliveries of the event outbox to webhook endpoints: claiming due ones, recording each
attempt, an admin's view of them and their replay, and retention.

Each delivery goes out at least once, with its event's `message_id` as `webhook-id` on every
attempt. A subject's (an item's or an exception's) deliveries to one endpoint go out one at a
time in event order: a retry holds back those behind it. A delivery that fails for good
(`failed`) leaves the line, so that the ones behind it go on; a replay puts it back.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.domain.integrations import endpoints
from server.domain.integrations.envelope import EndpointFormat, OutboxEvent
from server.domain.model import Principal
from server.domain.text import storable
from server.store import sql
from server.store.database import Database, Row

MAX_PAGE = 200
PRUNE_BATCH = 1000


class DeliveryState(enum.StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


@dataclass(frozen=True)
class DueEventDelivery:
    """One claimed attempt: the event, where it goes and how it is signed."""

    endpoint_id: uuid.UUID
    event_id: int
    # The subject whose line it is in (item:<id> or exception:<id>).
    ordering_key: str
    # Every attempt so far, this one included (the fence), and this round's (the backoff).
    attempt: int
    round_attempt: int
    event: OutboxEvent
    url: str
    format: EndpointFormat
    legacy_headers: bool
    timeout_seconds: float
    # Newest first; more than one during a rotation's overlap.
    secrets: tuple[str, ...]

    @classmethod
    def from_row(cls, row: Row) -> DueEventDelivery:
        data: dict[str, Any] = row["data"]
        return cls(
            endpoint_id=row["endpoint_id"],
            event_id=row["event_id"],
            ordering_key=row["ordering_key"],
            attempt=row["attempt"],
            round_attempt=row["round_attempt"],
            event=OutboxEvent(
                message_id=row["message_id"],
                event_type=row["event_type"],
                occurred_at=row["occurred_at"],
                data=data,
                item_id=row["item_id"],
                exception_id=row["exception_id"],
                queue=row["queue"],
                workflow=row["workflow"],
            ),
            url=row["url"],
            format=EndpointFormat(row["format"]),
            legacy_headers=row["legacy_headers"],
            timeout_seconds=row["timeout_seconds"],
            secrets=tuple(row["secrets"]),
        )


@dataclass(frozen=True)
class WebhookDelivery:
    """A delivery as an admin sees it."""

    endpoint_id: str
    event_id: int
    webhook_id: str
    event_type: str
    occurred_at: datetime
    item_id: int | None
    exception_id: str | None
    state: DeliveryState
    attempts: int
    next_attempt_at: datetime | None
    # Behind an earlier pending delivery of the same item (or exception) to the endpoint.
    waiting_turn: bool
    in_flight: bool
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None

    @classmethod
    def from_row(cls, row: Row, now: datetime) -> WebhookDelivery:
        state = DeliveryState(row["state"])
        locked = row["locked_until"]
        return cls(
            endpoint_id=str(row["endpoint_id"]),
            event_id=row["event_id"],
            webhook_id=row["message_id"],
            event_type=row["event_type"],
            occurred_at=row["occurred_at"],
            item_id=row["item_id"],
            exception_id=row["exception_id"],
            state=state,
            attempts=row["attempts"],
            next_attempt_at=row["next_attempt_at"]
            if state is DeliveryState.PENDING and not row["waiting_turn"]
            else None,
            waiting_turn=state is DeliveryState.PENDING and row["waiting_turn"],
            in_flight=state is DeliveryState.PENDING and locked is not None and locked > now,
            last_status=row["last_status"],
            last_error=row["last_error"],
            delivered_at=row["delivered_at"],
        )


# The worker's side.


async def any_endpoint_enabled(db: Database) -> bool:
    row = await db.fetchrow(sql.integrations.WEBHOOK_ENDPOINTS_ANY_ENABLED)
    return bool(row and row["any_enabled"])


async def claim_due(db: Database, limit: int) -> list[DueEventDelivery]:
    rows = await db.fetch(sql.integrations.OUTBOX_DELIVERIES_CLAIM, batch_size=limit)
    return [DueEventDelivery.from_row(row) for row in rows]


async def _next_turn(tx: Database, due: DueEventDelivery) -> None:
    """The delivery left its subject's line: the next one falls due."""
    await tx.fetchrow(
        sql.integrations.OUTBOX_DELIVERY_NEXT_TURN,
        endpoint_id=due.endpoint_id,
        ordering_key=due.ordering_key,
    )


async def record_delivered(db: Database, due: DueEventDelivery, status: int) -> bool:
    """False if this attempt no longer counts (a later one took over its lapsed lock)."""
    async with db.transaction() as tx:
        await tx.fetchrow(sql.integrations.OUTBOX_SUBJECT_LOCK, ordering_key=due.ordering_key)
        row = await tx.fetchrow(
            sql.integrations.OUTBOX_DELIVERY_RECORD_DELIVERED,
            endpoint_id=due.endpoint_id,
            event_id=due.event_id,
            attempt=due.attempt,
            status=status,
        )
        if row is not None:
            await _next_turn(tx, due)
    return row is not None


async def record_failure(
    db: Database,
    due: DueEventDelivery,
    *,
    status: int | None,
    error: str,
    permanent: bool,
    retry_at: datetime,
) -> DeliveryState | None:
    """PENDING (will retry at `retry_at`), FAILED, or None if this attempt no longer counts.
    A failed delivery leaves its subject's line: the next one falls due."""
    async with db.transaction() as tx:
        await tx.fetchrow(sql.integrations.OUTBOX_SUBJECT_LOCK, ordering_key=due.ordering_key)
        row = await tx.fetchrow(
            sql.integrations.OUTBOX_DELIVERY_RECORD_FAILURE,
            endpoint_id=due.endpoint_id,
            event_id=due.event_id,
            attempt=due.attempt,
            status=status,
            error=storable(error),
            permanent=permanent,
            next_attempt_at=retry_at,
        )
        state = None if row is None else DeliveryState(row["state"])
        if state is DeliveryState.FAILED:
            await _next_turn(tx, due)
    return state


async def record_gone(db: Database, due: DueEventDelivery, *, error: str) -> bool:
    """The receiver answered 410 Gone: the endpoint is disabled, saying so, and this
    delivery waits (pending) for a re-enable or is dropped with the endpoint. True when
    this call disabled the endpoint."""
    row = await db.fetchrow(
        sql.integrations.OUTBOX_DELIVERY_RECORD_GONE,
        endpoint_id=due.endpoint_id,
        event_id=due.event_id,
        attempt=due.attempt,
        error=storable(error),
        reason=f"the receiver answered 410 Gone to {due.event.message_id}",
    )
    return row is not None and bool(row["disabled"])


async def prune(db: Database, keep_seconds: float) -> int:
    """Deletes up to PRUNE_BATCH events older than `keep_seconds` with nothing pending (and
    hands on any subject's turn left waiting, which should never be)."""
    await db.fetch(sql.integrations.OUTBOX_DELIVERIES_REPAIR_TURNS)
    row = await db.fetchrow(
        sql.integrations.OUTBOX_PRUNE, keep_seconds=keep_seconds, batch_size=PRUNE_BATCH
    )
    return 0 if row is None else int(row["pruned"])


# The admin's side.


async def list_deliveries(
    db: Database,
    principal: Principal,
    endpoint_id: str,
    *,
    state: DeliveryState | None,
    first: int,
    before: int | None,
    now: datetime,
) -> list[WebhookDelivery] | NotPermitted | InvalidInput | NotFound:
    if not 1 <= first <= MAX_PAGE:
        return InvalidInput(f"first is between 1 and {MAX_PAGE}", "first")
    endpoint = await endpoints.get_endpoint(db, principal, endpoint_id)
    if isinstance(endpoint, NotPermitted | NotFound):
        return endpoint
    rows = await db.fetch(
        sql.integrations.WEBHOOK_DELIVERIES_PAGE,
        endpoint_id=uuid.UUID(endpoint.id),
        state=None if state is None else state.value,
        before_event_id=before,
        row_limit=first,
    )
    return [WebhookDelivery.from_row(row, now) for row in rows]


async def replay(
    db: Database, principal: Principal, endpoint_id: str, webhook_id: str, *, now: datetime
) -> WebhookDelivery | NotPermitted | InvalidInput | NotFound:
    """Sends a delivered or failed delivery again, with the same webhook-id and a fresh
    round of attempts. A disabled endpoint's replay waits for its re-enable."""
    endpoint = await endpoints.get_endpoint(db, principal, endpoint_id, what="replay deliveries")
    if isinstance(endpoint, NotPermitted | NotFound):
        return endpoint
    key = {"endpoint_id": uuid.UUID(endpoint.id), "message_id": webhook_id}
    async with db.transaction() as tx:
        found = await tx.fetchrow(sql.integrations.WEBHOOK_DELIVERY_GET, **key)
        if found is None:
            return NotFound("delivery", webhook_id)
        await tx.fetchrow(sql.integrations.OUTBOX_SUBJECT_LOCK, ordering_key=found["ordering_key"])
        replayed = await tx.fetchrow(sql.integrations.WEBHOOK_DELIVERY_REPLAY, **key)
        row = await tx.fetchrow(sql.integrations.WEBHOOK_DELIVERY_GET, **key)
    if row is None:
        return NotFound("delivery", webhook_id)
    if replayed is None:
        return InvalidInput(
            f"delivery {webhook_id[:100]} is pending already: it goes out when its turn comes",
            "webhookId",
        )
    return WebhookDelivery.from_row(row, now)
