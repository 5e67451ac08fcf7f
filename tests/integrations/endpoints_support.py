"""What the endpoint delivery tests share: the real apply worker with its event deliveries
awaited, a receiver, events made with casework_outbox_emit, and the reference verifier.
No tests here."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from standardwebhooks import Webhook

from server.domain.integrations import endpoints
from server.domain.integrations.deliveries import DueEventDelivery
from server.domain.integrations.endpoints import EndpointInput, WithSecret
from server.domain.integrations.envelope import EndpointFormat
from server.effects.webhook import Answer
from server.event_delivery import EventDeliveries
from server.store.database import Database
from server.worker import ApplyWorker, WorkerSettings
from tests.apply.receiver import OK, Policy, Reply, Request
from tests.conftest import ADMIN, TestDatabase

RECORD_SECONDS = 15.0
FAST = WorkerSettings(concurrency=4, backoff_seconds=0.05, poll_seconds=0.05, grace_seconds=5)
UNAVAILABLE = Reply(503, body=b"down")


@dataclass
class Recorded:
    """The worker's event deliveries, each awaited once recorded (no polling)."""

    outcomes: list[tuple[DueEventDelivery, Answer]] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def until(self, ready: Callable[[], bool], what: str) -> None:
        async with self.changed:
            try:
                await asyncio.wait_for(self.changed.wait_for(ready), RECORD_SECONDS)
            except TimeoutError:
                raise AssertionError(f"not within {RECORD_SECONDS} s: {what}") from None

    def delivered(self) -> list[DueEventDelivery]:
        return [due for due, answer in self.outcomes if answer.delivered]


class AwaitedDeliveries(EventDeliveries):
    def __init__(self, db: Database, recorded: Recorded) -> None:
        super().__init__(
            db,
            worker="endpoint-tests",
            backoff_seconds=FAST.backoff_seconds,
            poll_seconds=FAST.poll_seconds,
            allowed_hosts=frozenset(),
            retention_seconds=30 * 86400,
        )
        self.recorded = recorded

    async def _record(self, due: DueEventDelivery, answer: Answer) -> None:
        try:
            await super()._record(due, answer)
        finally:
            async with self.recorded.changed:
                self.recorded.outcomes.append((due, answer))
                self.recorded.changed.notify_all()


@asynccontextmanager
async def worker(db: Database) -> AsyncIterator[Recorded]:
    recorded = Recorded()
    apply_worker = ApplyWorker(db, FAST, name="endpoint-tests")
    apply_worker.events = AwaitedDeliveries(db, recorded)
    task = asyncio.create_task(apply_worker.run())
    try:
        yield recorded
    finally:
        apply_worker.stop()
        await task


async def endpoint(
    db: Database,
    url: str,
    *,
    queues: tuple[str, ...] = ("kyc",),
    event_types: tuple[str, ...] = ("decision.effective", "item.escalated"),
    endpoint_format: EndpointFormat = EndpointFormat.STANDARD,
    legacy_headers: bool = False,
) -> WithSecret:
    made = await endpoints.create_endpoint(
        db,
        ADMIN,
        EndpointInput(
            url=url,
            event_types=list(event_types),
            queues=list(queues),
            format=endpoint_format,
            legacy_headers=legacy_headers,
        ),
        None,
    )
    assert isinstance(made, WithSecret), made
    return made


@pytest.fixture
async def pool(test_database: TestDatabase) -> AsyncIterator[asyncpg.Pool]:
    """Plain connections of the application role, for events made as a producer would."""
    made = await asyncpg.create_pool(test_database.app_dsn, min_size=1, max_size=8)
    assert made is not None
    try:
        yield made
    finally:
        await made.close()


async def emit(
    pool: asyncpg.Pool, item_id: int, seq: int = 0, event_type: str = "decision.effective"
) -> str | None:
    """One event about `item_id` in queue kyc; its message id, or None if none subscribes."""
    event_id = await pool.fetchval(
        "SELECT casework_outbox_emit($1, $2, NULL, 'kyc', NULL, $3::jsonb)",
        event_type,
        item_id,
        json.dumps({"itemId": str(item_id), "seq": seq}),
    )
    if event_id is None:
        return None
    return str(await pool.fetchval("SELECT message_id FROM outbox_events WHERE id = $1", event_id))


def verified(secret: str, request: Request) -> dict[str, Any]:
    """The body, verified as Standard Webhooks says (raises if it does not verify)."""
    body: dict[str, Any] = Webhook(secret).verify(request.body, request.headers)
    return body


async def delivery_row(conn: asyncpg.Connection, endpoint_id: str, message_id: str) -> Any:
    return await conn.fetchrow(
        "SELECT d.* FROM outbox_deliveries d JOIN outbox_events o ON o.id = d.event_id "
        "WHERE d.endpoint_id = $1 AND o.message_id = $2",
        uuid.UUID(endpoint_id),
        message_id,
    )


def metric_value(name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(generate_latest(REGISTRY).decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def answering(*replies: Reply) -> Policy:
    """Answers each webhook-id's n-th request with replies[n] (the last one after that)."""
    seen: dict[str, int] = {}

    def policy(request: Request) -> Reply:
        n = seen.get(request.headers["webhook-id"], 0)
        seen[request.headers["webhook-id"]] = n + 1
        return replies[min(n, len(replies) - 1)]

    return policy


def first_refused(refusal: Reply) -> Policy:
    """Answers the very first request with `refusal`, every other one 200."""
    seen: list[Request] = []

    def policy(request: Request) -> Reply:
        seen.append(request)
        return refusal if len(seen) == 1 else OK

    return policy


def now() -> datetime:
    return datetime.now(UTC)
