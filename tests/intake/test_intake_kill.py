"""A real `casework intake` process killed with SIGKILL mid-batch, then started again: every
message becomes exactly one exception, and the dead-letter queue ends empty."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import httpx
from prometheus_client.parser import text_string_to_metric_families

from server.domain.model import Role
from server.store.database import Database
from tests.api.live_server import free_port
from tests.conftest import TestDatabase, token_maker
from tests.intake.intake_support import WORKFLOW, source_table, to_toml, wait_until
from tests.intake.process_support import intake_env, start_intake
from tests.intake.rabbitmq_support import RabbitMQHarness

TOTAL = 200
BATCH = 50
# Killed once this many are committed: inside the first batch, most of it not acknowledged.
KILL_AFTER = 10


async def count_rows(conn: asyncpg.Connection) -> int:
    found: int = await conn.fetchval("SELECT count(*) FROM intake_messages WHERE source = 'orders'")
    return found


async def test_sigkill_mid_batch_then_restart_takes_each_message_exactly_once(
    rabbitmq: RabbitMQHarness,
    workflow: str,
    test_database: TestDatabase,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    config = await rabbitmq.declare("orders")
    for n in range(TOTAL):
        body = json.dumps({"order": {"id": f"O-{n:04}"}}).encode()
        await rabbitmq.publish_to_work("orders", body, {}, f"order-message-{n}")
    await rabbitmq.reject_from_work("orders", TOTAL)
    await rabbitmq.wait_dead_lettered("orders")
    file = tmp_path / "intake.toml"
    table = source_table(config, record_id={"path": "order.id"}, batch_size=BATCH)
    file.write_text(to_toml([table]))
    token = await token_maker(owner_db)("order-intake", Role.INTEGRATION)
    env = intake_env(test_database, token, tmp_path)

    first = await start_intake(env, file)
    await first.wait_draining()

    async def some_committed() -> bool:
        return await count_rows(owner_conn) >= KILL_AFTER

    await wait_until(some_committed, what=f"{KILL_AFTER} exceptions committed")
    await first.kill()
    committed = await count_rows(owner_conn)
    # Killed mid-way: some messages were taken, not all.
    assert KILL_AFTER <= committed < TOTAL, (committed, first.log)

    # What was not committed is back on the dead-letter queue (a killed consumer's
    # unacknowledged messages return to it); so may be a few committed but not acknowledged.
    async def returned() -> int:
        if await rabbitmq.consumers("orders"):
            return 0
        ready = await rabbitmq.ready("orders")
        return ready if ready >= TOTAL - committed else 0

    back = await wait_until(returned, what="the unacknowledged messages back on the queue")
    assert back <= TOTAL

    print(f"killed with {committed} committed; {back} back on the queue")
    metrics_port = free_port()
    second = await start_intake(env, file, "--metrics-port", str(metrics_port))
    await second.wait_draining()

    async def all_taken() -> bool:
        return await count_rows(owner_conn) == TOTAL

    await wait_until(all_taken, what=f"{TOTAL} messages taken")

    # The second process raised what the first had not committed; the rest of what came
    # back (committed, not acknowledged when killed) it acknowledged as repeats.
    async def all_counted() -> dict[str, float] | None:
        async with httpx.AsyncClient() as client:
            text = (await client.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
        counts = {
            sample.labels["outcome"]: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "casework_intake_messages_total"
            and sample.labels["source"] == "orders"
        }
        return counts if sum(counts.values()) == back else None

    counts = await wait_until(all_counted, what="the second process's counts")
    assert counts.get("raised") == TOTAL - committed
    assert counts.get("repeated", 0) == back - (TOTAL - committed)
    assert "parked" not in counts
    assert await second.terminate() == 0, second.log
    # Stopped: nothing is held by a consumer, so nothing is left but what was never taken.
    assert await rabbitmq.ready("orders") == 0
    exceptions = await owner_conn.fetch(
        "SELECT source_record_id, recurrences FROM exceptions WHERE workflow = $1", WORKFLOW
    )
    assert sorted(row["source_record_id"] for row in exceptions) == [
        f"O-{n:04}" for n in range(TOTAL)
    ]
    assert {row["recurrences"] for row in exceptions} == {0}
    rows = await owner_conn.fetch("SELECT message_id, exception_id FROM intake_messages")
    assert sorted(row["message_id"] for row in rows) == sorted(
        f"order-message-{n}" for n in range(TOTAL)
    )
    assert len({row["exception_id"] for row in rows}) == TOTAL
