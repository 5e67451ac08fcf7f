"""Event deliveries that fail: a 410 disables the endpoint, a refusal or running out of
attempts fails a delivery (replayed by an admin), a rotation's overlap ends, and retention.
The real apply worker, a real receiver, the reference verifier."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from standardwebhooks import WebhookVerificationError

from server.domain.failures import InvalidInput, NotFound
from server.domain.integrations import deliveries, endpoints
from server.domain.integrations.deliveries import DeliveryState
from server.domain.integrations.endpoints import WithSecret
from server.store.database import Database
from tests.apply.receiver import OK, Reply, webhook_receiver
from tests.conftest import ADMIN
from tests.integrations.endpoints_support import (
    UNAVAILABLE,
    answering,
    delivery_row,
    emit,
    endpoint,
    first_refused,
    metric_value,
    now,
    pool,
    verified,
    worker,
)

__all__ = ["pool"]


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
        unknown = await deliveries.replay(db, ADMIN, made.endpoint.id, "evt_nope", now=now())
        assert isinstance(unknown, NotFound)
        replayed = await deliveries.replay(db, ADMIN, made.endpoint.id, first, now=now())
        assert isinstance(replayed, deliveries.WebhookDelivery)
        assert replayed.state is DeliveryState.PENDING
        await recorded.until(lambda: len(recorded.delivered()) == 2, "the replay delivered")
        # A delivered one replays too, again with its id.
        again = await deliveries.replay(db, ADMIN, made.endpoint.id, second, now=now())
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
        pending = await deliveries.replay(db, ADMIN, made.endpoint.id, message_id, now=now())
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
    refused = await deliveries.replay(db, ADMIN, made.endpoint.id, pending, now=now())
    assert isinstance(refused, InvalidInput)
    assert "pending already" in refused.message
