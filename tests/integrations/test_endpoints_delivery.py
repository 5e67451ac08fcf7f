"""Delivering the event outbox to webhook endpoints, by the real apply worker over real HTTP
to a receiver on 127.0.0.1. Events are made with casework_outbox_emit, as the producers
will. Every request is verified with `standardwebhooks`, the reference verifier.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
from cloudevents.core.bindings.http import HTTPMessage, from_structured_event

from server.domain.integrations import deliveries, endpoints
from server.domain.integrations.envelope import EndpointFormat
from server.signatures import verify_signature
from server.store.database import Database
from tests.apply.receiver import OK, Reply, Request, webhook_receiver
from tests.conftest import ADMIN
from tests.integrations.endpoints_support import (
    RECORD_SECONDS,
    UNAVAILABLE,
    answering,
    delivery_row,
    emit,
    endpoint,
    now,
    pool,
    verified,
    worker,
)

__all__ = ["pool"]


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


async def test_only_the_first_pending_delivery_of_a_subject_is_claimed_and_hands_on_its_turn(
    db: Database, kyc_queue: str, pool: asyncpg.Pool, owner_conn: asyncpg.Connection
) -> None:
    made = await endpoint(db, "http://127.0.0.1:9/unused")
    first, second, other = await emit(pool, 1), await emit(pool, 1, seq=1), await emit(pool, 2)
    assert first is not None
    assert second is not None
    assert other is not None
    listed = await deliveries.list_deliveries(
        db, ADMIN, made.endpoint.id, state=None, first=10, before=None, now=now()
    )
    assert isinstance(listed, list)
    waiting = {d.webhook_id: (d.waiting_turn, d.next_attempt_at is None) for d in listed}
    assert waiting == {first: (False, False), second: (True, True), other: (False, False)}
    claimed = await deliveries.claim_due(db, 10)
    assert sorted(due.event.message_id for due in claimed) == sorted([first, other])
    assert await deliveries.claim_due(db, 10) == []
    (head,) = [due for due in claimed if due.event.message_id == first]
    assert await deliveries.record_delivered(db, head, 200)
    (after,) = await deliveries.claim_due(db, 10)
    assert after.event.message_id == second
    # The safety net: a head left waiting (it should never be) falls due with retention.
    await owner_conn.execute(
        "UPDATE outbox_deliveries SET waiting_turn = true, locked_until = NULL"
    )
    assert await deliveries.claim_due(db, 10) == []
    await deliveries.prune(db, 30 * 86400)
    assert sorted(due.event.message_id for due in await deliveries.claim_due(db, 10)) == sorted(
        [second, other]
    )
