"""Publish, fail to the dead-letter queue, see the exception (or the item): against each
broker harness in HARNESSES, through an IntakeRunner in this process."""

from __future__ import annotations

import json

import asyncpg
from prometheus_client import REGISTRY

from server.observability.metrics import IntakeOutcome
from server.store.database import Database
from tests.intake.brokers_support import BrokerHarness
from tests.intake.intake_support import (
    REVIEW_QUEUE,
    WORKFLOW,
    rows_reach,
    running,
    source_table,
    sources,
)


def counted(source: str, outcome: IntakeOutcome) -> float:
    value = REGISTRY.get_sample_value(
        "casework_intake_messages_total", {"source": source, "outcome": outcome.value}
    )
    return value or 0.0


def order(record: str, **more: object) -> bytes:
    return json.dumps({"order": {"id": record, "lines": [{"sku": "X-1"}]}, **more}).encode()


async def test_each_dead_letter_becomes_one_exception_with_its_record(
    harness: BrokerHarness, workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    by_header = await harness.declare("by-header")
    by_path = await harness.declare("by-path")
    sent: dict[str, tuple[str, bytes]] = {}
    for n in range(3):
        body = order(f"ignored-{n}", total=n)
        message_id = await harness.fail_to_dead_letter("by-header", body, {"x-order-id": f"H-{n}"})
        sent[message_id] = (f"H-{n}", body)
        body = order(f"P-{n}")
        sent[await harness.fail_to_dead_letter("by-path", body, {})] = (f"P-{n}", body)
    configured = sources(
        source_table(by_header, record_id={"header": "x-order-id"}),
        source_table(by_path, record_id={"path": "order.id"}, batch_size=2),
    )
    raised_before = counted("by-header", IntakeOutcome.RAISED)

    async with running(db, configured):
        rows = await rows_reach(owner_conn, "by-header", 3) + await rows_reach(
            owner_conn, "by-path", 3
        )

    assert counted("by-header", IntakeOutcome.RAISED) - raised_before == 3
    assert sorted(row["message_id"] for row in rows) == sorted(sent)
    exceptions = {
        row["id"]: row
        for row in await owner_conn.fetch("SELECT * FROM exceptions WHERE workflow = $1", WORKFLOW)
    }
    # Exactly one exception per message, and each row names its own.
    assert len(exceptions) == 6
    assert len({row["exception_id"] for row in rows}) == 6
    for row in rows:
        record_id, body = sent[row["message_id"]]
        raised = exceptions[row["exception_id"]]
        assert raised["source_record_id"] == record_id
        assert raised["state"] == "needs_review"
        assert raised["recurrences"] == 0
        assert row["message_id"] in raised["detail"]
        context = raised["context"]
        assert context["message"] == json.loads(body)
        assert context["deadLetter"]["messageId"] == row["message_id"]
        assert context["deadLetter"]["source"] == row["source"]
        # What a redrive needs: the original, where it failed, what the broker said.
        assert row["broker"] == harness.kind.value
        assert bytes(row["body"]) == body
        assert row["origin"]["broker"] == harness.kind.value
        assert row["failure"]


async def test_what_cannot_be_mapped_is_parked_with_the_reason(
    harness: BrokerHarness, workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    config = await harness.declare("parking")
    await harness.fail_to_dead_letter("parking", b"not json at all", {})
    await harness.fail_to_dead_letter("parking", json.dumps({"order": {}}).encode(), {})
    await harness.fail_to_dead_letter("parking", order("R-1"), {"x-reason": "no_such_reason"})
    good = await harness.fail_to_dead_letter("parking", order("G-1"), {})
    configured = sources(
        source_table(config, record_id={"path": "order.id"}, reason_code_header="x-reason")
    )
    parked_before = counted("parking", IntakeOutcome.PARKED)

    async with running(db, configured):
        parked = await harness.take_parked("parking", 3)
        [row] = await rows_reach(owner_conn, "parking", 1)

    assert row["message_id"] == good
    reasons = sorted(p.headers["Casework-Park-Reason"] for p in parked)
    assert "the body is not JSON, so path 'order.id' cannot be read" in reasons
    assert "nothing at path 'order.id' in the body" in reasons
    assert any("'no_such_reason' is not in the catalogue" in r for r in reasons), reasons
    assert sorted(p.body for p in parked) == sorted(
        [b"not json at all", json.dumps({"order": {}}).encode(), order("R-1")]
    )
    assert counted("parking", IntakeOutcome.PARKED) - parked_before == 3
    assert await owner_conn.fetchval("SELECT count(*) FROM exceptions") == 1


async def test_a_review_queue_target_enqueues_one_item_per_message(
    harness: BrokerHarness, workflow: str, db: Database, owner_conn: asyncpg.Connection
) -> None:
    config = await harness.declare("review")
    sent = {await harness.fail_to_dead_letter("review", order(f"Q-{n}"), {}): n for n in range(2)}
    configured = sources(source_table(config, queue=REVIEW_QUEUE, record_id={"path": "order.id"}))
    enqueued_before = counted("review", IntakeOutcome.ENQUEUED)

    async with running(db, configured):
        rows = await rows_reach(owner_conn, "review", 2)

    assert counted("review", IntakeOutcome.ENQUEUED) - enqueued_before == 2
    items = await owner_conn.fetch(
        "SELECT * FROM review_items WHERE queue = $1 ORDER BY external_key", REVIEW_QUEUE
    )
    assert [item["external_key"] for item in items] == ["Q-0", "Q-1"]
    assert sorted(row["item_id"] for row in rows) == sorted(item["id"] for item in items)
    assert all(row["exception_id"] is None for row in rows)
    for item in items:
        payload = item["payload"]
        assert payload["message"] == json.loads(order(item["external_key"]))
        assert payload["deadLetter"]["messageId"] in sent
    assert await owner_conn.fetchval("SELECT count(*) FROM exceptions") == 0
