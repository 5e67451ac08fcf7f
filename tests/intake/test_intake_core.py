"""The intake's core on the real database, with dead letters made here (no broker): exactly
once however often a message comes back, or however many intakes take it at once; what a
privacy policy lets the record keep; what is refused is written nowhere."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg
import pytest

from server.domain.privacy.keys import Keyring, LocalKeyFile
from server.domain.privacy.policies import PolicyInput, set_privacy_policy
from server.domain.privacy.policy import FieldClass, PrivacyPolicy
from server.intake.core import Taken, Unmappable, take
from server.intake.sources import BrokerKind, DeadLetter, Origin, SourceConfig
from server.observability.metrics import IntakeOutcome
from server.store.database import Database
from tests.conftest import ADMIN
from tests.intake.intake_support import INTAKE, OWNER_QUEUE, REVIEW_QUEUE, source_table, sources

BROKER = SourceConfig(
    name="orders",
    broker=BrokerKind.RABBITMQ,
    url="amqp://127.0.0.1/",
    dead_letter="orders.dead",
    parking="orders.parked",
)
RAISING = sources(source_table(BROKER, record_id={"path": "order.id"}))[0]


def letter(message_id: str, body: object, **headers: str) -> DeadLetter:
    return DeadLetter(
        message_id=message_id,
        body=body if isinstance(body, bytes) else json.dumps(body).encode(),
        headers=headers,
        failure={"reason": "rejected", "queue": "orders.work", "count": 1},
        origin=Origin(BrokerKind.RABBITMQ, exchange="orders", routing_key="work"),
    )


async def test_a_message_taken_again_is_a_repeat(
    workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    message = letter("m-1", {"order": {"id": "A-1"}})
    first = await take(db, INTAKE, RAISING, message)
    # The acknowledgement was lost: the broker brings the message back.
    again = await take(db, INTAKE, RAISING, message)

    assert isinstance(first, Taken)
    assert first.outcome is IntakeOutcome.RAISED
    assert again == Taken(IntakeOutcome.REPEATED)
    assert await owner_conn.fetchval("SELECT count(*) FROM exceptions") == 1
    assert await owner_conn.fetchval("SELECT recurrences FROM exceptions") == 0
    row = await owner_conn.fetchrow("SELECT * FROM intake_messages")
    assert row["exception_id"] == first.exception_id
    assert row["origin"] == {"broker": "rabbitmq", "exchange": "orders", "routing_key": "work"}
    assert row["failure"] == {"reason": "rejected", "queue": "orders.work", "count": 1}


async def test_intakes_taking_one_message_at_once_raise_it_once(
    workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    message = letter("m-2", {"order": {"id": "A-2"}})
    results = await asyncio.gather(*(take(db, INTAKE, RAISING, message) for _ in range(4)))

    outcomes = sorted(r.outcome for r in results if isinstance(r, Taken))
    assert outcomes == sorted([IntakeOutcome.RAISED] + [IntakeOutcome.REPEATED] * 3)
    assert await owner_conn.fetchval("SELECT count(*) FROM intake_messages") == 1
    # The losers' raises were rolled back with their transactions: not even a recurrence.
    assert await owner_conn.fetchval("SELECT recurrences FROM exceptions") == 0
    assert await owner_conn.fetchval("SELECT count(*) FROM exception_events") == 1


async def test_what_the_domain_refuses_is_unmappable_and_written_nowhere(
    workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    refused = await take(
        db, INTAKE, RAISING, letter("m-3", {"order": {"id": "A-3"}, "password": "hunter2"})
    )

    assert isinstance(refused, Unmappable)
    assert "looks like a credential" in refused.reason
    assert await owner_conn.fetchval("SELECT count(*) FROM exceptions") == 0
    assert await owner_conn.fetchval("SELECT count(*) FROM intake_messages") == 0


@pytest.mark.parametrize(
    ("body", "headers", "reason"),
    [
        (b"\xff\xfe", {}, "the body is not UTF-8 text, so path 'order.id' cannot be read"),
        ({"order": {"id": True}}, {}, "path 'order.id' holds a bool, not text"),
        ({"order": {"id": ""}}, {}, "path 'order.id' must be 1 to 200 characters"),
        ({"order": ["A"]}, {}, "nothing at path 'order.id' in the body"),
    ],
)
async def test_unmappable_messages_say_why(
    workflow: str, db: Database, body: object, headers: dict[str, str], reason: str
) -> None:
    assert await take(db, INTAKE, RAISING, letter("m-4", body, **headers)) == Unmappable(reason)


async def test_an_owner_queue_policy_keeps_only_its_public_part_and_no_original(
    workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    policy = await set_privacy_policy(
        db,
        ADMIN,
        OWNER_QUEUE,
        PolicyInput(
            fields={
                "message.order.id": FieldClass.PUBLIC,
                "message.customer.email": FieldClass.PERSONAL,
                "deadLetter.failure": FieldClass.PUBLIC,
            }
        ),
    )
    assert isinstance(policy, PrivacyPolicy), policy
    body = {"order": {"id": "A-5"}, "customer": {"email": "ann@example.org"}}

    taken = await take(db, INTAKE, RAISING, letter("m-5", body, **{"x-customer": "Ann"}))

    assert isinstance(taken, Taken)
    context = await owner_conn.fetchval(
        "SELECT context FROM exceptions WHERE id = $1", taken.exception_id
    )
    assert context == {
        "message": {"order": {"id": "A-5"}},
        "deadLetter": {"failure": {"reason": "rejected", "queue": "orders.work", "count": 1}},
    }
    row = await owner_conn.fetchrow("SELECT body, headers FROM intake_messages")
    assert row["body"] is None
    assert row["headers"] == {}
    assert "ann@example.org" not in json.dumps(dict(row)) + json.dumps(context)


async def test_a_review_queue_with_a_policy_seals_what_is_personal(
    workflow: str, db: Database, owner_conn: asyncpg.Connection, tmp_path: Path
) -> None:
    policy = await set_privacy_policy(
        db,
        ADMIN,
        REVIEW_QUEUE,
        PolicyInput(
            fields={
                "message.order.id": FieldClass.PUBLIC,
                "message.customer.email": FieldClass.PERSONAL,
            }
        ),
    )
    assert isinstance(policy, PrivacyPolicy), policy
    keyring = Keyring(LocalKeyFile.create(tmp_path / "keys.json"))
    enqueuing = sources(
        source_table(
            BROKER,
            queue=REVIEW_QUEUE,
            record_id={"path": "order.id"},
            subject_ref={"path": "customer.id"},
        )
    )[0]
    body = {"order": {"id": "A-6"}, "customer": {"id": "c-6", "email": "bo@example.org"}}

    taken = await take(db, INTAKE, enqueuing, letter("m-6", body), keyring)
    without_subject = await take(
        db, INTAKE, enqueuing, letter("m-7", {"order": {"id": "A-7"}}), keyring
    )

    assert isinstance(taken, Taken)
    assert taken.outcome is IntakeOutcome.ENQUEUED
    item = await owner_conn.fetchrow(
        "SELECT payload, subject_ref FROM review_items WHERE id = $1", taken.item_id
    )
    assert item["payload"] == {"message": {"order": {"id": "A-6"}}}
    assert item["subject_ref"] == "c-6"
    stored = await owner_conn.fetchrow("SELECT body FROM intake_messages")
    assert stored["body"] is None
    assert without_subject == Unmappable("nothing at path 'customer.id' in the body")
