"""Delivering the event outbox to webhook endpoints, by the real apply worker over real HTTP
to a receiver on 127.0.0.1. Events are made with casework_outbox_emit, as the producers
will. Every request is verified with `standardwebhooks`, the reference verifier.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from cloudevents.core.bindings.http import HTTPMessage, from_structured_event
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from standardwebhooks import Webhook, WebhookVerificationError

from server.domain.failures import InvalidInput, NotFound
from server.domain.integrations import deliveries, endpoints
from server.domain.integrations.deliveries import DeliveryState, DueEventDelivery
from server.domain.integrations.endpoints import EndpointInput, WithSecret
from server.domain.integrations.envelope import EndpointFormat
from server.event_delivery import Answer, EventDeliveries
from server.signatures import verify_signature
from server.store.database import Database
from server.worker import ApplyWorker, WorkerSettings
from tests.apply.receiver import OK, Policy, Reply, Request, webhook_receiver
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


async def test_an_event_is_delivered_signed_in_the_standard_envelope(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    async with webhook_receiver("unused") as receiver, worker(db) as recorded:
        made = await endpoint(db, receiver.url)
        assert made.secret.startswith("whsec_")
        message_id = await emit(pool, 7, event_type="item.escalated")
        assert message_id is not None
        assert message_id.startswith("evt_")
        request = await receiver.next_arrival()
        body = verified(made.secret, request)
        assert request.headers["webhook-id"] == message_id
        assert request.headers["content-type"] == "application/json"
        assert body["type"] == "item.escalated"
        assert body["data"] == {"itemId": "7", "seq": 0}
        assert datetime.fromisoformat(body["timestamp"]).tzinfo is not None
        # Standard only: no legacy header for an endpoint that did not ask for it.
        assert "casework-signature" not in request.headers
        assert "idempotency-key" not in request.headers
        await recorded.until(lambda: len(recorded.delivered()) == 1, "the delivery recorded")
    async with pool.acquire() as conn:
        row = await delivery_row(conn, made.endpoint.id, message_id)
    assert (row["state"], row["attempts"], row["last_status"]) == ("delivered", 1, 200)


async def test_no_endpoint_no_event_and_a_disabled_endpoint_gets_none(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    assert await emit(pool, 1) is None
    made = await endpoint(db, "http://127.0.0.1:9/unused")
    assert await emit(pool, 1, event_type="lease.lapsed") is None  # not subscribed
    await endpoints.disable_endpoint(db, ADMIN, made.endpoint.id, "maintenance")
    assert await emit(pool, 1) is None


async def test_retries_keep_the_webhook_id_and_every_attempt_verifies(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    policy = answering(UNAVAILABLE, Reply(500), OK)
    async with webhook_receiver("unused", policy) as receiver, worker(db) as recorded:
        made = await endpoint(db, receiver.url)
        message_id = await emit(pool, 7)
        await recorded.until(lambda: len(recorded.delivered()) == 1, "delivered after retries")
    assert [r.headers["webhook-id"] for r in receiver.requests] == [message_id] * 3
    bodies = [verified(made.secret, request) for request in receiver.requests]
    assert bodies[0] == bodies[1] == bodies[2]
    assert message_id is not None
    async with pool.acquire() as conn:
        row = await delivery_row(conn, made.endpoint.id, message_id)
    assert (row["state"], row["attempts"], row["last_status"]) == ("delivered", 3, 200)


async def test_retry_after_is_stored_as_the_next_attempts_floor(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    throttled = Reply(429, headers=(("Retry-After", "120"),), body=b"slow down")
    async with (
        webhook_receiver("unused", answering(throttled)) as receiver,
        worker(db) as recorded,
    ):
        made = await endpoint(db, receiver.url)
        message_id = await emit(pool, 7)
        assert message_id is not None
        before = datetime.now(UTC)
        await recorded.until(lambda: len(recorded.outcomes) == 1, "the 429 recorded")
    async with pool.acquire() as conn:
        row = await delivery_row(conn, made.endpoint.id, message_id)
    assert row["state"] == "pending"
    assert row["last_status"] == 429
    assert "slow down" in row["last_error"]
    assert row["next_attempt_at"] >= before + timedelta(seconds=119)
    assert len(receiver.requests) == 1


async def test_a_subjects_events_go_out_in_order_under_concurrent_emits_and_retries(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    """Events of two items emitted by concurrent transactions, a first attempt of every
    third answered 503: per item, each event is delivered only after the one before it."""
    flaky: set[str] = set()

    def policy(request: Request) -> Reply:
        message_id = request.headers["webhook-id"]
        if hash(message_id) % 3 == 0 and message_id not in flaky:
            flaky.add(message_id)
            return UNAVAILABLE
        return OK

    async with webhook_receiver("unused", policy) as receiver, worker(db) as recorded:
        made = await endpoint(db, receiver.url)
        count = 40
        ids = await asyncio.gather(*(emit(pool, 100 + n % 2, seq=n) for n in range(count)))
        assert all(ids)
        await recorded.until(lambda: len(recorded.delivered()) == count, "every event delivered")
    assert flaky, "some first attempts failed"
    async with pool.acquire() as conn:
        order = {
            row["message_id"]: row["id"]
            for row in await conn.fetch("SELECT id, message_id FROM outbox_events")
        }
    items = {
        request.headers["webhook-id"]: verified(made.secret, request)["data"]["itemId"]
        for request in receiver.requests
    }
    for item in ("100", "101"):
        delivered = [
            order[request.headers["webhook-id"]]
            for request, status in receiver.replies
            if status == 200 and items[request.headers["webhook-id"]] == item
        ]
        assert delivered == sorted(delivered), f"item {item} out of order"
        assert len(delivered) == count // 2
        # No request for an event before the previous one of the item had its 200.
        asked = [
            order[request.headers["webhook-id"]]
            for request in receiver.requests
            if items[request.headers["webhook-id"]] == item
        ]
        assert asked == sorted(asked), f"item {item} asked out of order"


async def test_a_second_transaction_emitting_for_the_same_item_waits_for_the_first(
    db: Database, kyc_queue: str, pool: asyncpg.Pool, owner_conn: asyncpg.Connection
) -> None:
    """Event ids of one subject follow commit order: the second emit waits on the first's
    transaction, so that delivering in id order is delivering in the order of the changes."""
    await endpoint(db, "http://127.0.0.1:9/unused")
    async with pool.acquire() as first, pool.acquire() as second:
        first_tx = first.transaction()
        await first_tx.start()
        await first.execute(
            "SELECT casework_outbox_emit('decision.effective', 5, NULL, 'kyc', NULL, '{}')"
        )
        second_pid = await second.fetchval("SELECT pg_backend_pid()")
        later = asyncio.create_task(
            second.fetchval(
                "SELECT casework_outbox_emit('item.escalated', 5, NULL, 'kyc', NULL, '{}')"
            )
        )
        deadline = asyncio.get_running_loop().time() + RECORD_SECONDS
        while not await owner_conn.fetchval(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", second_pid
        ):
            assert asyncio.get_running_loop().time() < deadline, "the second emit never waited"
            await asyncio.sleep(0.02)
        assert not later.done()
        await first_tx.commit()
        second_id = await asyncio.wait_for(later, RECORD_SECONDS)
    types = await owner_conn.fetch("SELECT event_type FROM outbox_events ORDER BY id")
    assert [row["event_type"] for row in types] == ["decision.effective", "item.escalated"]
    assert second_id == await owner_conn.fetchval("SELECT max(id) FROM outbox_events")


async def test_a_410_disables_the_endpoint_counts_and_keeps_the_delivery_for_a_re_enable(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    gone = Reply(410, body=b"we moved on")
    before = metric_value("casework_webhook_endpoints_disabled_total", reason="gone")
    async with (
        webhook_receiver("unused", answering(gone, OK)) as receiver,
        worker(db) as recorded,
    ):
        made = await endpoint(db, receiver.url)
        message_id = await emit(pool, 9)
        assert message_id is not None
        await recorded.until(lambda: len(recorded.outcomes) == 1, "the 410 recorded")
        shown = await endpoints.get_endpoint(db, ADMIN, made.endpoint.id)
        assert isinstance(shown, endpoints.WebhookEndpoint)
        assert not shown.enabled
        assert shown.disabled_at is not None
        assert shown.disabled_reason is not None
        assert "410" in shown.disabled_reason
        assert shown.pending_deliveries == 1
        assert metric_value("casework_webhook_endpoints_disabled_total", reason="gone") == (
            before + 1
        )
        # Nothing recorded for it while disabled.
        assert await emit(pool, 9, seq=1) is None
        enabled = await endpoints.enable_endpoint(db, ADMIN, made.endpoint.id)
        assert isinstance(enabled, endpoints.WebhookEndpoint)
        assert enabled.enabled
        await recorded.until(lambda: len(recorded.delivered()) == 1, "delivered on re-enable")
    assert [r.headers["webhook-id"] for r in receiver.requests] == [message_id] * 2
    for request in receiver.requests:
        verified(made.secret, request)


async def test_a_permanent_refusal_fails_leaves_the_line_and_replays_with_the_same_id(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    async with (
        webhook_receiver("unused", first_refused(Reply(400, body=b"bad"))) as receiver,
        worker(db) as recorded,
    ):
        made = await endpoint(db, receiver.url)
        first = await emit(pool, 3, seq=0)
        second = await emit(pool, 3, seq=1)
        assert first
        assert second
        # The first fails for good; the second, behind it, goes on.
        await recorded.until(lambda: len(recorded.delivered()) == 1, "the second delivered")
        async with pool.acquire() as conn:
            row = await delivery_row(conn, made.endpoint.id, first)
        assert (row["state"], row["last_status"]) == ("failed", 400)
        # Pending deliveries cannot be replayed; unknown ids are not found.
        unknown = await deliveries.replay(db, ADMIN, made.endpoint.id, "evt_nope", now=_now())
        assert isinstance(unknown, NotFound)
        replayed = await deliveries.replay(db, ADMIN, made.endpoint.id, first, now=_now())
        assert isinstance(replayed, deliveries.WebhookDelivery)
        assert replayed.state is DeliveryState.PENDING
        await recorded.until(lambda: len(recorded.delivered()) == 2, "the replay delivered")
        # A delivered one replays too, again with its id.
        again = await deliveries.replay(db, ADMIN, made.endpoint.id, second, now=_now())
        assert isinstance(again, deliveries.WebhookDelivery)
        await recorded.until(lambda: len(recorded.delivered()) == 3, "second replay delivered")
    ids = [r.headers["webhook-id"] for r in receiver.requests]
    assert ids == [first, second, first, second]
    for request in receiver.requests:
        verified(made.secret, request)


async def test_attempts_run_out_then_failed_and_a_replay_starts_a_new_round(
    db: Database, kyc_queue: str, pool: asyncpg.Pool, owner_conn: asyncpg.Connection
) -> None:
    async with (
        webhook_receiver("unused", answering(UNAVAILABLE, UNAVAILABLE, OK)) as receiver,
        worker(db) as recorded,
    ):
        made = await endpoint(db, receiver.url)
        await owner_conn.execute(
            "UPDATE webhook_endpoints SET max_attempts = 2 WHERE id = $1",
            uuid.UUID(made.endpoint.id),
        )
        message_id = await emit(pool, 4)
        assert message_id is not None
        await recorded.until(lambda: len(recorded.outcomes) == 2, "two attempts")
        row = await delivery_row(owner_conn, made.endpoint.id, message_id)
        assert (row["state"], row["attempts"], row["last_status"]) == ("failed", 2, 503)
        pending = await deliveries.replay(db, ADMIN, made.endpoint.id, message_id, now=_now())
        assert isinstance(pending, deliveries.WebhookDelivery)
        await recorded.until(lambda: len(recorded.delivered()) == 1, "the replay delivered")
    row = await delivery_row(owner_conn, made.endpoint.id, message_id)
    assert (row["state"], row["attempts"]) == ("delivered", 3)
    assert len(receiver.requests) == 3


async def test_rotation_signs_with_both_secrets_during_the_overlap_then_only_the_new(
    db: Database, kyc_queue: str, pool: asyncpg.Pool, owner_conn: asyncpg.Connection
) -> None:
    async with webhook_receiver("unused") as receiver, worker(db) as recorded:
        made = await endpoint(db, receiver.url)
        rotated = await endpoints.rotate_secret(db, ADMIN, made.endpoint.id, None, 24)
        assert isinstance(rotated, WithSecret)
        old, new = made.secret, rotated.secret
        assert old != new
        assert len(rotated.endpoint.secrets) == 2
        await emit(pool, 1)
        during = await receiver.next_arrival()
        assert len(during.headers["webhook-signature"].split(" ")) == 2
        assert verified(old, during) == verified(new, during)
        await recorded.until(lambda: len(recorded.delivered()) == 1, "delivered")
        # The overlap ends (moved back rather than waited for).
        await owner_conn.execute(
            "UPDATE webhook_endpoint_secrets SET expires_at = now() - interval '1 second' "
            "WHERE endpoint_id = $1 AND expires_at IS NOT NULL",
            uuid.UUID(made.endpoint.id),
        )
        await emit(pool, 1, seq=1)
        after = await receiver.next_arrival()
        assert len(after.headers["webhook-signature"].split(" ")) == 1
        assert verified(new, after)["data"]["seq"] == 1
        with pytest.raises(WebhookVerificationError):
            verified(old, after)


async def test_cloudevents_structured_mode_and_legacy_headers(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    async with webhook_receiver("unused") as receiver, worker(db):
        made = await endpoint(
            db, receiver.url, endpoint_format=EndpointFormat.CLOUDEVENTS, legacy_headers=True
        )
        message_id = await emit(pool, 12, event_type="decision.effective")
        request = await receiver.next_arrival()
    assert request.headers["content-type"] == "application/cloudevents+json"
    verified(made.secret, request)
    event = from_structured_event(HTTPMessage(headers=request.headers, body=request.body))
    assert event.get_specversion() == "1.0"
    assert event.get_id() == message_id == request.headers["webhook-id"]
    assert event.get_type() == "decision.effective"
    assert event.get_source() == "urn:casework:queue:kyc"
    assert event.get_subject() == "item/12"
    assert event.get_data() == {"itemId": "12", "seq": 0}
    # The legacy pair, for a receiver written before Standard Webhooks.
    assert request.headers["idempotency-key"] == message_id
    assert verify_signature(made.secret, request.headers["casework-signature"], request.body)


async def test_retention_prunes_old_delivered_events_and_keeps_pending_ones(
    db: Database, kyc_queue: str, pool: asyncpg.Pool, owner_conn: asyncpg.Connection
) -> None:
    made = await endpoint(db, "http://127.0.0.1:9/unused")
    delivered, pending = await emit(pool, 1), await emit(pool, 2)
    await owner_conn.execute(
        "UPDATE outbox_deliveries d SET state = 'delivered' FROM outbox_events o "
        "WHERE o.id = d.event_id AND o.message_id = $1",
        delivered,
    )
    await owner_conn.execute("UPDATE outbox_events SET occurred_at = now() - interval '40 days'")
    assert await deliveries.prune(db, 30 * 86400) == 1
    left = await owner_conn.fetch("SELECT message_id FROM outbox_events")
    assert [row["message_id"] for row in left] == [pending]
    assert await deliveries.prune(db, 30 * 86400) == 0
    # A pending delivery is not replayed (it goes out in its turn).
    assert pending is not None
    refused = await deliveries.replay(db, ADMIN, made.endpoint.id, pending, now=_now())
    assert isinstance(refused, InvalidInput)
    assert "pending already" in refused.message


def _now() -> datetime:
    return datetime.now(UTC)


async def test_a_dedupe_key_records_an_event_once(
    db: Database, kyc_queue: str, pool: asyncpg.Pool
) -> None:
    await endpoint(db, "http://127.0.0.1:9/unused", event_types=("item.overdue",))
    emit_once = (
        "SELECT casework_outbox_emit('item.overdue', 8, NULL, 'kyc', NULL, '{}', 'overdue:8:1')"
    )
    assert await pool.fetchval(emit_once) is not None
    assert await pool.fetchval(emit_once) is None
    assert await pool.fetchval("SELECT count(*) FROM outbox_deliveries") == 1
