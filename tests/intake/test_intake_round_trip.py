"""The whole way round, on each broker (RabbitMQ, NATS JetStream, and SQS through moto's
server, the only SQS that runs here): messages fail from a work queue to its dead-letter
queue; a real `casework intake` process, killed with SIGKILL mid-batch and started again,
makes each exactly one exception; one person corrects one, another approves, the redrive is
requested, and the intake publishes the corrected message back to the work queue, once,
with the redrive key as its message id; the owning system's report closes it."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from server.intake.sources import BrokerKind
from tests.api import conftest as api_fixtures
from tests.api.conftest import GraphQL
from tests.apply.helpers import configure_workflow, delivery_row, request_redrive
from tests.conftest import TestDatabase
from tests.exceptions import conftest as exception_fixtures
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, REASON, WORKFLOW, People
from tests.exceptions.operations import (
    REPORT_REDRIVE_RESULT,
    SUBMIT_CORRECTION,
    approve_as,
    claim,
    correction_input,
    run,
)
from tests.exceptions.states import CORRECTION_EVIDENCE
from tests.intake.brokers_support import BrokerHarness
from tests.intake.intake_support import source_table, to_toml, wait_until
from tests.intake.process_support import intake_env, start_intake

client = api_fixtures.client
gql = api_fixtures.gql
people = exception_fixtures.people
supplier_workflow = exception_fixtures.supplier_workflow

pytestmark = pytest.mark.usefixtures("supplier_workflow")

SOURCE = "suppliers"
TOTAL = 60
BATCH = 10
# Killed once this many are committed: inside the first batches, most not acknowledged.
KILL_AFTER = 3
CHANGES = {"legalName": "Acme Holdings Ltd"}


def original(n: int) -> dict[str, str]:
    return {"supplierId": f"SUP-{n:04}", "legalName": "Acme Trading Ltd", "country": "GB"}


async def taken(conn: asyncpg.Connection) -> int:
    count: int = await conn.fetchval(
        "SELECT count(*) FROM intake_messages WHERE source = $1", SOURCE
    )
    return count


async def test_dead_letters_come_back_corrected_once_through_a_sigkill(
    harness: BrokerHarness,
    gql: GraphQL,
    people: People,
    test_database: TestDatabase,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    configured = await configure_workflow(
        gql, people.admin, approvalQueue=APPROVAL_QUEUE, redriveVia="BROKER"
    )
    assert configured["__typename"] == "WorkflowConfigured", configured
    config = await harness.declare(SOURCE)
    sent = [
        await harness.fail_to_dead_letter(SOURCE, json.dumps(original(n)).encode(), {})
        for n in range(TOTAL)
    ]
    assert len(set(sent)) == TOTAL
    file = tmp_path / "intake.toml"
    table = source_table(
        config,
        workflow=WORKFLOW,
        reason_code=REASON,
        record_id={"path": "supplierId"},
        batch_size=BATCH,
    )
    file.write_text(to_toml([table]))
    env = intake_env(test_database, people.erp, tmp_path)

    first = await start_intake(env, file)
    await first.wait_draining()

    async def some_taken() -> bool:
        return await taken(owner_conn) >= KILL_AFTER

    await wait_until(some_taken, what=f"{KILL_AFTER} dead letters taken")
    await first.kill()
    committed = await taken(owner_conn)
    assert KILL_AFTER <= committed < TOTAL, (committed, first.log)

    second = await start_intake(env, file)
    await second.wait_draining()

    async def all_taken() -> bool:
        return await taken(owner_conn) == TOTAL

    # What the killed process held comes back to the second (at once on RabbitMQ; after the
    # ack wait or visibility timeout the harness set on NATS and SQS).
    await wait_until(all_taken, what=f"all {TOTAL} dead letters taken")
    rows = await owner_conn.fetch(
        "SELECT m.message_id, e.source_record_id, e.recurrences FROM intake_messages AS m"
        " JOIN exceptions AS e ON e.id = m.exception_id WHERE m.source = $1",
        SOURCE,
    )
    assert sorted(row["message_id"] for row in rows) == sorted(sent)
    assert sorted(row["source_record_id"] for row in rows) == [f"SUP-{n:04}" for n in range(TOTAL)]
    assert {row["recurrences"] for row in rows} == {0}

    # A person corrects the first exception of the owner queue, a second approves.
    claimed = await claim(gql, people.sam, OWNER_QUEUE)
    exception_id = claimed["item"]["exception"]["id"]
    record_id = await owner_conn.fetchval(
        "SELECT source_record_id FROM exceptions WHERE id = $1", exception_id
    )
    corrected = await run(
        gql,
        people.sam,
        SUBMIT_CORRECTION,
        input=correction_input(
            exception_id, claimed["leaseToken"], changes=CHANGES, evidence=CORRECTION_EVIDENCE
        ),
    )
    assert corrected["__typename"] == "ExceptionUpdated", corrected
    version = corrected["exception"]["version"]
    await approve_as(gql, people.ann, APPROVAL_QUEUE, exception_id, version)
    key = await request_redrive(gql, people, exception_id, version)

    # The running intake publishes it back to where it failed: the corrected original.
    [redriven] = await harness.take_from_work_queue(SOURCE, 1)
    assert redriven.message_id == key
    n = int(record_id.removeprefix("SUP-"))
    assert json.loads(redriven.body) == original(n) | CHANGES
    if harness.kind is not BrokerKind.SQS:
        # SQS gives every message an id of its own: the key travels as an attribute, which
        # Received.message_id already is for SQS.
        assert redriven.headers.get("Casework-Redrive-Key", key) == key

    async def delivered() -> dict[str, object] | None:
        row = await delivery_row(owner_conn, key)
        return row if row["delivery_state"] == "delivered" else None

    row = await wait_until(delivered, what="the redrive recorded as delivered")
    assert row["delivery_attempts"] == 1, row
    assert await second.terminate() == 0, second.log

    reported = await run(
        gql, people.erp, REPORT_REDRIVE_RESULT, input={"redriveKey": key, "succeeded": True}
    )
    assert reported["__typename"] == "RedriveResultRecorded", reported
    state = await owner_conn.fetchval("SELECT state FROM exceptions WHERE id = $1", exception_id)
    assert state == "closed"
