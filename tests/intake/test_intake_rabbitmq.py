"""What only RabbitMQ's source does: x-death as the failure and origin, a message id sent
twice, a message without one, and queues that do not exist."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from server.domain.identity.principals import CredentialResolver
from server.domain.identity.tokens import revoke_tokens
from server.domain.model import Role
from server.intake.core import IntakeRefused
from server.intake.rabbitmq import (
    PARK_REASON_HEADER,
    SourceUnavailable,
    message_id_of,
    open_source,
)
from server.intake.runner import IntakeRunner, IntakeStartError, TokenPrincipal
from server.intake.sources import SourceConfig
from server.store.database import Database
from tests.conftest import token_maker
from tests.intake.intake_support import intake_rows, rows_reach, running, source_table, sources
from tests.intake.rabbitmq_support import WORK_ROUTING_KEY, RabbitMQHarness, until_count


async def test_x_death_gives_the_failure_and_the_origin(
    rabbitmq: RabbitMQHarness, workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    config = await rabbitmq.declare("deaths")
    names = rabbitmq.declared["deaths"]
    body = json.dumps({"order": {"id": "D-1"}}).encode()
    await rabbitmq.fail_to_dead_letter("deaths", body, {"x-tenant": "acme"}, "death-1")

    async with running(db, sources(source_table(config, record_id={"path": "order.id"}))):
        [row] = await rows_reach(owner_conn, "deaths", 1)

    assert row["origin"] == {
        "broker": "rabbitmq",
        "exchange": names.work_exchange,
        "routing_key": WORK_ROUTING_KEY,
    }
    failure = row["failure"]
    assert failure["reason"] == "rejected"
    assert failure["queue"] == names.work_queue
    assert failure["count"] == 1
    assert failure["routingKeys"] == [WORK_ROUTING_KEY]
    assert failure["firstDeathReason"] == "rejected"
    assert len(failure["deaths"]) == 1
    # The message's own headers, without the broker's death headers.
    assert row["headers"] == {"x-tenant": "acme"}
    detail = await owner_conn.fetchval("SELECT detail FROM exceptions")
    assert "reason=rejected" in detail
    assert names.work_queue in detail


async def test_a_message_id_dead_lettered_twice_raises_once_and_both_are_acknowledged(
    rabbitmq: RabbitMQHarness, workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    config = await rabbitmq.declare("twice")
    body = json.dumps({"order": {"id": "T-1"}}).encode()
    for _ in range(2):
        await rabbitmq.publish_to_work("twice", body, {}, "same-id")
    marker = json.dumps({"order": {"id": "T-2"}}).encode()
    await rabbitmq.publish_to_work("twice", marker, {}, "after")
    await rabbitmq.reject_from_work("twice", 3)
    await rabbitmq.wait_dead_lettered("twice")

    async with running(
        db, sources(source_table(config, record_id={"path": "order.id"}, batch_size=1))
    ):
        # One batch at a time, in order: once "after" is in, both copies were handled.
        await rows_reach(owner_conn, "twice", 2)

    assert await rabbitmq.ready("twice") == 0
    assert sorted(
        await owner_conn.fetchval("SELECT array_agg(message_id) FROM intake_messages")
    ) == ["after", "same-id"]
    assert await owner_conn.fetchval("SELECT count(*) FROM exceptions") == 2
    assert await owner_conn.fetchval("SELECT sum(recurrences) FROM exceptions") == 0


def test_a_message_without_an_id_is_keyed_by_its_body_and_death() -> None:
    # aio-pika always sends a message id; other clients (pika, Java's) may not.
    first_death = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    death = {
        "count": 1,
        "reason": b"rejected",
        "queue": b"orders.work",
        "time": first_death,
        "exchange": b"orders",
        "routing-keys": [b"work"],
    }
    headers = {"x-death": [death], "x-first-death-queue": b"orders.work"}
    key = message_id_of(None, b'{"order":1}', headers)

    assert key.startswith("sha256:")
    assert len(key) == len("sha256:") + 64
    assert message_id_of("", b'{"order":1}', headers) == key
    assert message_id_of(None, b'{"order":2}', headers) != key
    later = headers | {"x-death": [death | {"time": first_death + timedelta(seconds=1)}]}
    assert message_id_of(None, b'{"order":1}', later) != key
    assert message_id_of("given", b'{"order":1}', headers) == "given"


async def test_a_parked_message_keeps_its_body_id_and_headers(
    rabbitmq: RabbitMQHarness, workflow: str, db: Database
) -> None:
    config = await rabbitmq.declare("park")
    await rabbitmq.fail_to_dead_letter("park", b"<xml/>", {"x-tenant": "acme"}, "xml-1")

    async with running(db, sources(source_table(config, record_id={"path": "order.id"}))):
        [parked] = await rabbitmq.take_parked("park", 1)

    assert parked.message_id == "xml-1"
    assert parked.body == b"<xml/>"
    assert parked.headers["x-tenant"] == "acme"
    assert parked.headers[PARK_REASON_HEADER].startswith("the body is not JSON")
    assert await rabbitmq.ready("park") == 0


async def test_queues_that_do_not_exist_stop_the_start(
    rabbitmq: RabbitMQHarness, workflow: str, db: Database
) -> None:
    config = await rabbitmq.declare("present")
    missing = SourceConfig(
        name="missing",
        broker=config.broker,
        url=config.url,
        dead_letter=f"{rabbitmq.prefix}.nowhere",
        parking=config.parking,
    )
    with pytest.raises(SourceUnavailable, match=r"dead_letter queue .* does not exist"):
        await open_source(missing)
    configured = sources(source_table(missing, record_id={"path": "order.id"}))
    with pytest.raises(IntakeStartError) as stopped:
        async with running(db, configured):
            pass
    assert stopped.value.problems == [
        f"source 'missing': dead_letter queue '{missing.dead_letter}' does not exist on the broker"
    ]


async def test_a_revoked_token_stops_the_intake_before_the_next_batch(
    rabbitmq: RabbitMQHarness,
    workflow: str,
    db: Database,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
) -> None:
    config = await rabbitmq.declare("revoked")
    token = await token_maker(owner_db)("order-intake", Role.INTEGRATION)
    principal = TokenPrincipal(CredentialResolver(db, ttl=0), token)
    runner = IntakeRunner(
        db, principal, sources(source_table(config, record_id={"path": "order.id"}))
    )
    running_task = asyncio.create_task(runner.run())
    # Not fail_to_dead_letter: it waits to see the message ready on the dead-letter queue,
    # which the running intake may already have taken. The intake's row is the signal.
    await rabbitmq.publish_to_work(
        "revoked", json.dumps({"order": {"id": "V-1"}}).encode(), {}, "v-1"
    )
    await rabbitmq.reject_from_work("revoked", 1)
    await rows_reach(owner_conn, "revoked", 1)

    assert await revoke_tokens(owner_db, "order-intake") == 1
    await rabbitmq.publish_to_work(
        "revoked", json.dumps({"order": {"id": "V-2"}}).encode(), {}, "v-2"
    )
    await rabbitmq.reject_from_work("revoked", 1)

    with pytest.raises(IntakeRefused, match="no longer"):
        await asyncio.wait_for(running_task, 30)
    # Nothing more was taken, and the message waits on its queue for a valid token.
    assert len(await intake_rows(owner_conn, "revoked")) == 1
    await until_count(rabbitmq.channel, rabbitmq.declared["revoked"].dead_letter, 1)
