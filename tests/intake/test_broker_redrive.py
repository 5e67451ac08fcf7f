"""Redrives by broker: a workflow configured with redriveVia BROKER has each requested redrive
published by `casework intake` back to where the original message failed, as the original
JSON with the approved correction merged in, with the redrive key as its message id and in
Casework-Redrive-Key. Delivered is not done: the owning system still reports the result.

Against a real PostgreSQL, the real GraphQL app (in-process) for the people and the owning
system, and the real RabbitMQ (the intake tests' `rabbitmq_url`: this machine's, or one they
start). Each test
sets the exception up as the intake would: raised through the API, with the intake's record
of the dead letter (origin, body, headers) beside it."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import aio_pika
import asyncpg
import pytest
from aio_pika.abc import (
    AbstractChannel,
    AbstractExchange,
    AbstractIncomingMessage,
    AbstractQueue,
    AbstractRobustConnection,
)
from prometheus_client import REGISTRY

from server.domain.exceptions import redrive_delivery, redrives
from server.domain.exceptions.records import SYSTEM_ACTOR, SYSTEM_ROLE
from server.domain.failures import NotPermitted
from server.effects.webhook import REDRIVE_HEADER
from server.intake.rabbitmq_publisher import open_publisher
from server.intake.redrive import (
    RedriveSettings,
    claim_due,
    redrive_round,
    redrive_until_stopped,
)
from server.intake.sources import BrokerKind, Origin, RedrivePublisher, SourceConfig
from server.observability.intake_redrives import RedriveOutcome
from server.store.database import Database
from server.store.queries import Queries
from tests.api import conftest as api_fixtures
from tests.api.conftest import GraphQL
from tests.apply.helpers import (
    configure_workflow,
    delivery_row,
    exception_of,
    request_redrive,
    wait_until,
)
from tests.conftest import TestDatabase
from tests.exceptions import conftest as exception_fixtures
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, People
from tests.exceptions.domain_drivers import own_connections
from tests.exceptions.operations import (
    REPORT_REDRIVE_RESULT,
    approve_as,
    correct_as,
    raise_mismatch,
    run,
)
from tests.exceptions.states import CORRECTION, CORRECTION_EVIDENCE

client = api_fixtures.client
gql = api_fixtures.gql
people = exception_fixtures.people
supplier_workflow = exception_fixtures.supplier_workflow

pytestmark = pytest.mark.usefixtures("supplier_workflow")

SOURCE = "supplier-dlq"
ROUTING_KEY = "supplier.onboard"
# Retries fall due at once; loops look again often: a test never waits on the backstop.
FAST = RedriveSettings(batch_size=4, poll_seconds=0.05, backoff_seconds=0.01)
WITHIN = 20.0

ORIGINAL = {
    "supplierId": "SUP-1042",
    "legalName": "Acme Trading Ltd",
    "country": "GB",
    "bank": {"iban": "GB33BUKB20201555555555"},
}
# What the intake kept of the dead letter's headers: RabbitMQ's record of the failure beside
# what the producer set.
ORIGINAL_HEADERS = {
    "source-record-id": "SUP-1042",
    "tenant": "eu-west",
    "x-death": [{"count": 1, "reason": "rejected", "queue": "supplier-work"}],
    "x-first-death-queue": "supplier-work",
    "x-first-death-reason": "rejected",
}


@dataclass
class Rabbit:
    """A fresh direct exchange with one work queue bound to ROUTING_KEY: where the supplier
    messages go, and where a redrive must land."""

    url: str
    connection: AbstractRobustConnection
    channel: AbstractChannel
    exchange: AbstractExchange
    queue: AbstractQueue

    @property
    def origin(self) -> Origin:
        return Origin(BrokerKind.RABBITMQ, exchange=self.exchange.name, routing_key=ROUTING_KEY)

    async def take_all(self) -> list[AbstractIncomingMessage]:
        """Every message now on the work queue. A publish returns once the broker confirmed
        it, so what was published is there: nothing to wait for."""
        taken = []
        while (message := await self.queue.get(no_ack=True, fail=False)) is not None:
            taken.append(message)
        return taken


@pytest.fixture
async def rabbit(rabbitmq_url: str) -> AsyncIterator[Rabbit]:
    connection = await aio_pika.connect_robust(rabbitmq_url, timeout=5)
    name = f"casework-redrive-{uuid.uuid4().hex[:12]}"
    async with connection:
        channel = await connection.channel()
        exchange = await channel.declare_exchange(name, aio_pika.ExchangeType.DIRECT)
        queue = await channel.declare_queue(f"{name}-work", durable=True)
        await queue.bind(exchange, ROUTING_KEY)
        try:
            yield Rabbit(rabbitmq_url, connection, channel, exchange, queue)
        finally:
            await queue.delete(if_unused=False, if_empty=False)
            await exchange.delete()


def source_config(url: str, name: str = SOURCE) -> SourceConfig:
    return SourceConfig(
        name=name,
        broker=BrokerKind.RABBITMQ,
        url=url,
        dead_letter="supplier-dlq",
        parking="supplier-parked",
    )


@pytest.fixture
async def publishers(rabbit: Rabbit) -> AsyncIterator[dict[str, RedrivePublisher]]:
    """The intake's publishers by source name, as its runner holds them."""
    publisher = await open_publisher(source_config(rabbit.url))
    try:
        yield {SOURCE: publisher}
    finally:
        await publisher.close()


async def take_redrives_by_broker(gql: GraphQL, people: People, **settings: Any) -> None:
    configured = await configure_workflow(
        gql, people.admin, approvalQueue=APPROVAL_QUEUE, redriveVia="BROKER", **settings
    )
    assert configured["__typename"] == "WorkflowConfigured", configured
    assert configured["workflow"]["redriveVia"] == "BROKER"
    assert configured["workflow"]["redriveTarget"] is None


async def record_intake_message(
    conn: asyncpg.Connection,
    exception_id: str,
    origin: Origin,
    body: bytes | None,
    *,
    source: str = SOURCE,
    headers: dict[str, Any] | None = None,
) -> None:
    """What the intake writes in the transaction that raises the exception."""
    await conn.execute(
        "INSERT INTO intake_messages (source, message_id, broker, exception_id, origin, body,"
        " headers, failure) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        source,
        f"amq-{uuid.uuid4().hex}",
        origin.broker.value,
        exception_id,
        origin.as_json(),
        body,
        ORIGINAL_HEADERS if headers is None else headers,
        {"x-death": ORIGINAL_HEADERS["x-death"]},
    )


async def redrive_requested(
    gql: GraphQL,
    people: People,
    conn: asyncpg.Connection,
    origin: Origin | None,
    *,
    record_id: str = "SUP-1042",
    body: bytes | None = b"",
    changes: dict[str, Any] | None = None,
    source: str = SOURCE,
) -> tuple[str, str]:
    """An exception the intake raised from a dead letter (none when `origin` is None),
    corrected by sam, approved by ann, its redrive requested: its id and the redrive key.
    `body` b"" stands for the ORIGINAL as JSON."""
    raised = await raise_mismatch(gql, people.erp, sourceRecordId=record_id)
    exception_id: str = raised["id"]
    if origin is not None:
        original = json.dumps(ORIGINAL | {"supplierId": record_id}).encode()
        kept = original if body == b"" else body
        await record_intake_message(conn, exception_id, origin, kept, source=source)
    corrected = await correct_as(
        gql,
        people.sam,
        OWNER_QUEUE,
        exception_id,
        changes=CORRECTION if changes is None else changes,
        evidence=CORRECTION_EVIDENCE,
    )
    await approve_as(gql, people.ann, APPROVAL_QUEUE, exception_id, corrected["version"])
    key = await request_redrive(gql, people, exception_id, corrected["version"])
    return exception_id, key


def counted(outcome: RedriveOutcome, source: str = SOURCE) -> float:
    value = REGISTRY.get_sample_value(
        "casework_intake_redrives_total", {"source": source, "outcome": outcome.value}
    )
    return value or 0.0


async def report(gql: GraphQL, token: str, key: str, *, succeeded: bool) -> dict[str, Any]:
    return await run(
        gql, token, REPORT_REDRIVE_RESULT, input={"redriveKey": key, "succeeded": succeeded}
    )


async def make_due_now(conn: asyncpg.Connection, key: str) -> None:
    """The retry's time comes: driven, not waited for."""
    status = await conn.execute(
        "UPDATE exception_redrives SET next_delivery_at = now() WHERE key = $1 "
        "AND delivery_state = 'pending'",
        key,
    )
    assert status == "UPDATE 1", key


def last_event(exception: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = exception["events"][-1]
    return event


# --- published ------------------------------------------------------------------------------


async def test_a_broker_redrive_is_published_once_corrected_and_closed_only_by_the_report(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
) -> None:
    await take_redrives_by_broker(gql, people)
    exception_id, key = await redrive_requested(gql, people, owner_conn, rabbit.origin)
    assert key == "supplier_onboarding:SUP-1042:v1"
    queued = await exception_of(gql, people.manager, exception_id)
    assert queued["redrive"]["deliveryState"] == "pending"
    # The apply worker never takes it.
    assert await redrive_delivery.claim_due(db, 10) == []
    published_before = counted(RedriveOutcome.PUBLISHED)

    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.PUBLISHED}

    [message] = await rabbit.take_all()
    assert message.message_id == key
    assert message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
    assert message.routing_key == ROUTING_KEY
    # The original's headers go with it, without the broker's record of the failure.
    assert message.headers == {
        "source-record-id": "SUP-1042",
        "tenant": "eu-west",
        REDRIVE_HEADER: key,
    }
    # The original with the correction merged in, in the original's order.
    assert json.loads(message.body) == {
        "supplierId": "SUP-1042",
        "legalName": "Acme Holdings Ltd",
        "country": "GB",
        "bank": {"iban": "GB33BUKB20201555555555"},
        "legalEntityId": "LEI-5493001KJTIIGC8Y1R12",
    }
    assert list(json.loads(message.body)) == [
        "supplierId",
        "legalName",
        "country",
        "bank",
        "legalEntityId",
    ]
    assert counted(RedriveOutcome.PUBLISHED) == published_before + 1

    # Delivered, not done; nothing more is due, so nothing more is published.
    delivered = await exception_of(gql, people.manager, exception_id)
    assert delivered["state"] == "REDRIVE_PENDING"
    assert delivered["redrive"]["deliveryState"] == "delivered"
    assert delivered["redrive"]["deliveryAttempts"] == 1
    assert delivered["redrive"]["deliveredAt"] is not None
    assert await redrive_round(db, publishers, settings=FAST) == {}
    assert await rabbit.take_all() == []

    # Casework cannot say the work succeeded: the owning system confirms, and only that
    # closes the exception.
    by_casework = await redrives.report_checked(
        db, key, True, None, actor=SYSTEM_ACTOR, actor_role=SYSTEM_ROLE
    )
    assert isinstance(by_casework, NotPermitted), by_casework
    assert "answered by the owning system" in by_casework.message
    reported = await report(gql, people.erp, key, succeeded=True)
    assert reported["__typename"] == "RedriveResultRecorded", reported
    assert reported["exception"]["state"] == "CLOSED"
    assert reported["exception"]["closure"] == "CORRECTED"


async def test_two_intakes_racing_publish_each_redrive_once(
    test_database: TestDatabase,
    queries: Queries,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
) -> None:
    await take_redrives_by_broker(gql, people)
    count = 6
    stop = asyncio.Event()
    wake = [asyncio.Event(), asyncio.Event()]
    first = await open_publisher(source_config(rabbit.url))
    second = await open_publisher(source_config(rabbit.url))
    async with own_connections(test_database, queries, 2) as (db_a, db_b):
        loops = [
            asyncio.create_task(
                redrive_until_stopped(db, {SOURCE: publisher}, stop, settings=FAST, wake=w)
            )
            for db, publisher, w in ((db_a, first, wake[0]), (db_b, second, wake[1]))
        ]
        try:
            keys = []
            for n in range(count):
                _, key = await redrive_requested(
                    gql, people, owner_conn, rabbit.origin, record_id=f"SUP-{2000 + n}"
                )
                keys.append(key)
                for event in wake:
                    event.set()

            async def all_delivered() -> bool:
                states = await owner_conn.fetch(
                    "SELECT delivery_state FROM exception_redrives WHERE key = ANY ($1)", keys
                )
                return [row["delivery_state"] for row in states] == ["delivered"] * count

            await wait_until(all_delivered, within=WITHIN, what="every redrive delivered")
        finally:
            stop.set()
            await asyncio.gather(*loops)
            await first.close()
            await second.close()

    taken = await rabbit.take_all()
    assert sorted(message.message_id or "" for message in taken) == sorted(keys)
    for message in taken:
        record_id = message.message_id.split(":")[1] if message.message_id else ""
        assert json.loads(message.body)["supplierId"] == record_id
    attempts = await owner_conn.fetch(
        "SELECT delivery_attempts FROM exception_redrives WHERE key = ANY ($1)", keys
    )
    assert [row["delivery_attempts"] for row in attempts] == [1] * count


# --- failures ------------------------------------------------------------------------------


async def test_a_publish_that_fails_is_retried_then_handed_to_a_person(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
) -> None:
    await take_redrives_by_broker(gql, people, redriveMaxAttempts=2)
    gone = Origin(BrokerKind.RABBITMQ, exchange=f"{rabbit.exchange.name}-gone", routing_key="x")
    exception_id, key = await redrive_requested(gql, people, owner_conn, gone)
    retried_before = counted(RedriveOutcome.RETRIED)
    failed_before = counted(RedriveOutcome.FAILED)
    attempts_before = (await exception_of(gql, people.manager, exception_id))["attempts"]

    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.RETRIED}
    row = await delivery_row(owner_conn, key)
    assert row["delivery_state"] == "pending"
    assert row["delivery_attempts"] == 1
    assert row["delivery_locked_until"] is None
    assert "no exchange" in row["last_delivery_error"]
    # Not due yet (backoff): a round now takes nothing.
    await owner_conn.execute(
        "UPDATE exception_redrives SET next_delivery_at = now() + interval '1 hour' WHERE key = $1",
        key,
    )
    assert await redrive_round(db, publishers, settings=FAST) == {}

    await make_due_now(owner_conn, key)
    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.FAILED}

    back = await exception_of(gql, people.manager, exception_id)
    assert back["state"] == "NEEDS_REVIEW"
    assert back["attempts"] == attempts_before + 1
    assert back["redrive"]["deliveryState"] == "failed"
    assert back["redrive"]["deliveryAttempts"] == 2
    assert back["redrive"]["succeeded"] is False
    event = last_event(back)
    assert (event["kind"], event["actor"], event["actorRole"]) == (
        "redrive_failed",
        "casework",
        "system",
    )
    assert event["detail"].startswith("the redrive could not be delivered after 2 attempt(s)")
    assert "no exchange" in event["detail"]
    assert counted(RedriveOutcome.RETRIED) == retried_before + 1
    assert counted(RedriveOutcome.FAILED) == failed_before + 1
    # Failed for good: nothing more is attempted.
    assert await redrive_round(db, publishers, settings=FAST) == {}


async def test_an_unroutable_publish_is_retried_and_lands_once_the_queue_is_bound(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
) -> None:
    await take_redrives_by_broker(gql, people)
    unbound = Origin(BrokerKind.RABBITMQ, exchange=rabbit.exchange.name, routing_key="later")
    _, key = await redrive_requested(gql, people, owner_conn, unbound)

    # The broker takes the message but routes it nowhere: not delivered.
    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.RETRIED}
    assert "NO_ROUTE" in (await delivery_row(owner_conn, key))["last_delivery_error"]

    await rabbit.queue.bind(rabbit.exchange, "later")
    await make_due_now(owner_conn, key)
    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.PUBLISHED}
    [message] = await rabbit.take_all()
    assert message.message_id == key
    assert (await delivery_row(owner_conn, key))["delivery_attempts"] == 2


@pytest.mark.parametrize(
    ("kept", "why"),
    [
        # Raised through the API: no intake took it, so there is no origin.
        (None, "no intake took this exception from a broker"),
        # A queue with a privacy policy: the intake kept no body.
        (b"not kept", "the original message was not kept"),
        (b"<supplier id='SUP-1042'/>", "the original message is not JSON"),
    ],
)
async def test_with_nothing_to_publish_the_redrive_goes_back_to_a_person_at_once(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
    kept: bytes | None,
    why: str,
) -> None:
    await take_redrives_by_broker(gql, people)
    origin = None if kept is None else rabbit.origin
    body = None if kept == b"not kept" else kept
    exception_id, key = await redrive_requested(gql, people, owner_conn, origin, body=body)

    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.FAILED}

    assert await rabbit.take_all() == []
    back = await exception_of(gql, people.manager, exception_id)
    assert back["state"] == "NEEDS_REVIEW"
    assert back["redrive"]["deliveryAttempts"] == 1
    event = last_event(back)
    assert event["kind"] == "redrive_failed"
    assert why in event["detail"]


@pytest.mark.parametrize(
    ("kept", "whole", "published"),
    [
        (
            None,
            {"supplierId": "SUP-1042", "legalName": "Acme Holdings Ltd"},
            b'{"supplierId":"SUP-1042","legalName":"Acme Holdings Ltd"}',
        ),
        (
            b"<supplier id='SUP-1042'/>",
            "<supplier id='SUP-1042' name='Acme Holdings Ltd'/>",
            b"<supplier id='SUP-1042' name='Acme Holdings Ltd'/>",
        ),
    ],
)
async def test_a_correction_giving_the_whole_message_is_published_as_given(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
    kept: bytes | None,
    whole: Any,
    published: bytes,
) -> None:
    await take_redrives_by_broker(gql, people)
    _, key = await redrive_requested(
        gql, people, owner_conn, rabbit.origin, body=kept, changes={"$replace": whole}
    )

    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.PUBLISHED}
    [message] = await rabbit.take_all()
    assert message.message_id == key
    if isinstance(whole, str):
        assert message.body == published
    else:
        # The correction is kept as jsonb, which keeps no order of members.
        assert json.loads(message.body) == json.loads(published)


# --- each route to its own deliverer --------------------------------------------------------


async def test_a_broker_redrive_is_taken_only_by_an_intake_with_the_message_s_source(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
) -> None:
    await take_redrives_by_broker(gql, people)
    # Taken twice: the newest intake message names the source (an older one names another).
    exception_id, key = await redrive_requested(
        gql, people, owner_conn, rabbit.origin, source="retired-dlq"
    )
    other_publisher = await open_publisher(source_config(rabbit.url, "retired-dlq"))
    try:
        others = {"retired-dlq": other_publisher}
        await record_intake_message(
            owner_conn, exception_id, rabbit.origin, json.dumps(ORIGINAL).encode()
        )

        assert await redrive_delivery.claim_due(db, 10) == []
        assert await redrive_round(db, others, settings=FAST) == {}
        row = await delivery_row(owner_conn, key)
        assert (row["delivery_state"], row["delivery_attempts"]) == ("pending", 0)

        assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.PUBLISHED}
        [message] = await rabbit.take_all()
        assert message.message_id == key
    finally:
        await other_publisher.close()


async def test_a_webhook_redrive_is_never_taken_by_the_intake(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
) -> None:
    configured = await configure_workflow(
        gql,
        people.admin,
        approvalQueue=APPROVAL_QUEUE,
        redriveVia="WEBHOOK",
        redriveTarget="http://127.0.0.1:9/erp/redrives",
        redriveSecret="whsec_ZXJwLXJlZHJpdmUtc2lnbmluZy1zZWNyZXQtMQ==",
    )
    assert configured["__typename"] == "WorkflowConfigured", configured
    # Even with an intake message behind it.
    _, key = await redrive_requested(gql, people, owner_conn, rabbit.origin)

    assert await redrive_round(db, publishers, settings=FAST) == {}
    assert (await delivery_row(owner_conn, key))["delivery_attempts"] == 0
    assert [due.key for due in await redrive_delivery.claim_due(db, 10)] == [key]
    assert await rabbit.take_all() == []


async def test_the_route_between_webhook_and_broker_keeps_an_undelivered_redrive_due(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
) -> None:
    await take_redrives_by_broker(gql, people)
    exception_id, key = await redrive_requested(gql, people, owner_conn, rabbit.origin)

    # To SUBSCRIPTION: no longer Casework's to deliver.
    configured = await configure_workflow(
        gql, people.admin, redriveVia="SUBSCRIPTION", approvalQueue=APPROVAL_QUEUE
    )
    assert configured["workflow"]["redriveVia"] == "SUBSCRIPTION"
    assert (await delivery_row(owner_conn, key))["delivery_state"] is None
    assert await redrive_round(db, publishers, settings=FAST) == {}

    # A fresh redrive under WEBHOOK, then moved to BROKER before the worker took it.
    reported = await report(gql, people.erp, key, succeeded=False)
    assert reported["exception"]["state"] == "NEEDS_REVIEW"
    corrected = await correct_as(
        gql,
        people.sam,
        OWNER_QUEUE,
        exception_id,
        changes=CORRECTION,
        evidence=CORRECTION_EVIDENCE,
    )
    await approve_as(gql, people.ann, APPROVAL_QUEUE, exception_id, corrected["version"])
    await configure_workflow(
        gql,
        people.admin,
        approvalQueue=APPROVAL_QUEUE,
        redriveVia="WEBHOOK",
        redriveTarget="http://127.0.0.1:9/erp/redrives",
        redriveSecret="whsec_ZXJwLXJlZHJpdmUtc2lnbmluZy1zZWNyZXQtMQ==",
    )
    second = await request_redrive(gql, people, exception_id, corrected["version"])
    await take_redrives_by_broker(gql, people)
    assert (await delivery_row(owner_conn, second))["delivery_state"] == "pending"

    assert await redrive_round(db, publishers, settings=FAST) == {second: RedriveOutcome.PUBLISHED}
    [message] = await rabbit.take_all()
    assert message.message_id == second


async def test_configure_workflow_takes_broker_without_a_target(
    gql: GraphQL, people: People
) -> None:
    refused = await configure_workflow(
        gql,
        people.admin,
        approvalQueue=APPROVAL_QUEUE,
        redriveVia="BROKER",
        redriveTarget="http://127.0.0.1:9/erp/redrives",
    )
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == "redriveVia"
    await take_redrives_by_broker(gql, people)
    body = await gql(people.admin, "{ workflows { name redriveVia } }")
    assert {"name": "supplier_onboarding", "redriveVia": "BROKER"} in body["data"]["workflows"]


class Unconfirmed:
    """A broker that takes the message and never confirms it."""

    def __init__(self) -> None:
        self.published: list[str] = []

    async def publish(
        self, origin: Origin, body: bytes, *, message_id: str, headers: Mapping[str, str]
    ) -> None:
        self.published.append(message_id)
        await asyncio.Event().wait()

    async def close(self) -> None:
        pass


async def test_a_publish_the_broker_never_confirms_is_given_up_after_the_timeout(
    db: Database, owner_conn: asyncpg.Connection, gql: GraphQL, people: People, rabbit: Rabbit
) -> None:
    await take_redrives_by_broker(gql, people, redriveTimeoutSeconds=0.2)
    _, key = await redrive_requested(gql, people, owner_conn, rabbit.origin)
    silent = Unconfirmed()

    assert await redrive_round(db, {SOURCE: silent}, settings=FAST) == {key: RedriveOutcome.RETRIED}
    assert silent.published == [key]
    row = await delivery_row(owner_conn, key)
    assert row["delivery_state"] == "pending"
    assert row["last_delivery_error"] == "the broker did not confirm the message within 0.2 s"


async def test_a_claim_left_by_a_stopped_intake_is_taken_over_once_it_lapses(
    db: Database,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    rabbit: Rabbit,
    publishers: dict[str, RedrivePublisher],
) -> None:
    await take_redrives_by_broker(gql, people)
    _, key = await redrive_requested(gql, people, owner_conn, rabbit.origin)
    # An intake claims it and stops before publishing (killed, say).
    [stopped] = await claim_due(db, [SOURCE], 10)
    assert (stopped.key, stopped.attempt) == (key, 1)

    # While its claim holds, no other intake takes the redrive.
    assert await redrive_round(db, publishers, settings=FAST) == {}
    await owner_conn.execute(
        "UPDATE exception_redrives SET delivery_locked_until = now() WHERE key = $1", key
    )
    assert await redrive_round(db, publishers, settings=FAST) == {key: RedriveOutcome.PUBLISHED}
    [message] = await rabbit.take_all()
    assert message.message_id == key

    # The stopped intake's attempt, were it to come back, no longer counts.
    assert not await redrive_delivery.record_delivered(db, stopped)
    row = await delivery_row(owner_conn, key)
    assert (row["delivery_state"], row["delivery_attempts"]) == ("delivered", 2)
