"""`casework worker --metrics-port`: the worker's own counters, on a port of its own, in a
fresh process (so the values are absolute); and its log lines have a time, a level and a
logger."""

from __future__ import annotations

import asyncio
import socket

import httpx
from prometheus_client.parser import text_string_to_metric_families

from server.store.database import Database
from tests.api.live_server import free_port
from tests.apply.helpers import make_decisions, start_worker, worker_env
from tests.conftest import TestDatabase

APPLIED_WITHIN_SECONDS = 30.0


def values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_the_worker_serves_its_own_counters(
    test_database: TestDatabase, db: Database, kyc_queue: str
) -> None:
    port = free_port()
    worker = await start_worker(worker_env(test_database), "--metrics-port", str(port))
    applied = ("casework_apply_attempts_total", (("outcome", "applied"),))
    connected = ("casework_listener_connected", ())
    try:
        await make_decisions(db, kyc_queue, 3, claimers=1)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + APPLIED_WITHIN_SECONDS
        seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        async with httpx.AsyncClient() as client:
            while seen.get(applied) != 3 or seen.get(connected) != 1:
                assert loop.time() < deadline, (seen, worker.log)
                await asyncio.sleep(0.05)
                try:
                    response = await client.get(f"http://127.0.0.1:{port}/metrics")
                except httpx.ConnectError:
                    continue  # not listening yet
                seen = values(response.text)
    finally:
        assert await worker.terminate() == 0, worker.log
    assert ("casework_apply_attempts_total", (("outcome", "failed"),)) not in seen
    # Text lines: time, level, logger, then the message.
    [stopped] = [line for line in worker.output if " stopped: " in line]
    stamp, level, logger, _ = stopped.split(" ", 3)
    assert stamp.endswith("+00:00")
    assert (level, logger) == ("INFO", "casework.worker")


async def test_a_metrics_port_in_use_is_one_line_and_status_2(
    test_database: TestDatabase,
) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        worker = await start_worker(worker_env(test_database), "--metrics-port", str(port))
        code = await worker.wait()
    assert code == 2, worker.log
    assert worker.log.strip().splitlines()[-1].startswith("casework: error: --metrics-port")
    assert "Traceback" not in worker.log
