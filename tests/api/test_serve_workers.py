"""`casework serve --workers 2`: two processes answer GraphQL on one port, each with its own
listener, so a subscriber on one hears of a write through the other; the two in-process
apply workers carry each decision out exactly once; /metrics from either process counts
what both did, and the database figures once; a killed process is replaced; SIGTERM stops
both processes, their lifespans run, and serve exits 0 leaving no process behind.

Which process answered is read from the access line's pid: with several processes every
log line carries one. Connections are opened afresh for each request, so that the kernel
hands each to whichever process accepts it first.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from prometheus_client.parser import text_string_to_metric_families

from server.domain.model import Role
from server.events.listener import APPLICATION_NAME
from server.store.database import Database
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, decision_input
from tests.api.live_server import Served, casework_serve_process, run_casework
from tests.apply.helpers import (
    SECRET,
    attempt_rows,
    configure_effect,
    inconsistencies,
    wait_until,
    webhook,
    worker_env,
)
from tests.apply.receiver import webhook_receiver
from tests.conftest import TestDatabase, token_maker
from tests.live.helpers import LEASE_EVENTS, next_where, subscriptions_started
from tests.live.wsclient import graphql_socket

Line = dict[str, Any]
WITHIN_SECONDS = 30.0
# Fresh connections until both processes have answered: each goes to either process, so
# forty that all land on one would mean the second does not accept at all.
ATTEMPTS = 40
STARTED = re.compile(r"Started server process \[(\d+)\]")
ME = "query { me { user } }"
SHUTDOWN_COMPLETE = "Application shutdown complete."


def lines_of(served: Served) -> list[Line]:
    return [json.loads(line) for line in served.log if line.startswith("{")]


async def until(served: Served, found: Callable[[list[Line]], Any]) -> Any:
    """Polls the log (a real condition, with a deadline) until `found` gives something."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_SECONDS
    while not (result := found(lines_of(served))):
        assert loop.time() < deadline, "".join(served.log)
        await asyncio.sleep(0.05)
    return result


def serving_pids(lines: list[Line]) -> list[int]:
    return [int(m.group(1)) for line in lines if (m := STARTED.search(line["message"]))]


def access_pid(request_id: str) -> Callable[[list[Line]], int | None]:
    def found(lines: list[Line]) -> int | None:
        for line in lines:
            if line["logger"] == "casework.access" and line.get("request_id") == request_id:
                pid: int = line["pid"]
                return pid
        return None

    return found


class Caller:
    """GraphQL over HTTP, each request on a new connection; remembers who answered."""

    def __init__(self, served: Served, client: httpx.AsyncClient) -> None:
        self._served = served
        self.client = client
        self._ids = itertools.count(1)

    async def call(self, token: str, query: str, **variables: Any) -> tuple[dict[str, Any], int]:
        request_id = f"workers-{next(self._ids)}"
        response = await self.client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}", "X-Request-ID": request_id},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert "errors" not in body, body
        pid: int = await until(self._served, access_pid(request_id))
        return body["data"], pid


@asynccontextmanager
async def two_processes(env: dict[str, str]) -> AsyncIterator[tuple[Served, Caller]]:
    async with (
        casework_serve_process(env, "--workers", "2", started=2) as served,
        # No keep-alive: every request is a connection of its own.
        httpx.AsyncClient(
            base_url=served.url, timeout=30, limits=httpx.Limits(max_keepalive_connections=0)
        ) as client,
    ):
        yield served, Caller(served, client)


async def listeners(owner: asyncpg.Connection, database: str) -> int:
    count: int = await owner.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
        database,
        APPLICATION_NAME,
    )
    return count


def scraped(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"{key} twice in one scrape"
            samples[key] = sample.value
    return samples


def claimed_event(item_id: str) -> Callable[[dict[str, Any]], bool]:
    def wanted(data: dict[str, Any]) -> bool:
        event = data["leaseEvents"]
        return bool(event["itemId"] == item_id and event["kind"] == "CLAIMED")

    return wanted


def environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode()
    return dict(entry.split("=", 1) for entry in raw.split("\0") if "=" in entry)


def metric_files(directory: str) -> set[str]:
    return set(os.listdir(directory))


def live_gauges(files: set[str], pid: int) -> set[str]:
    return {name for name in files if name.startswith("gauge_live") and name.endswith(f"_{pid}.db")}


def gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


async def test_workers_is_a_whole_number_from_1(tmp_path: Path) -> None:
    env = {**os.environ, "CASEWORK_HOME": str(tmp_path)}
    refused = await run_casework(env, "serve", "--workers", "0")
    assert refused.code == 2, refused
    assert "argument --workers: expected a whole number, at least 1: '0'" in refused.stderr
    from_env = await run_casework({**env, "CASEWORK_WORKERS": "none"}, "serve")
    assert from_env.code == 2, from_env
    assert "CASEWORK_WORKERS='none': expected a whole number" in from_env.stderr


async def test_two_processes_on_one_port(
    test_database: TestDatabase,
    db: Database,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    kyc_queue: str,
) -> None:
    make = token_maker(owner_db)
    rita = await make("rita", Role.REVIEWER, kyc_queue)
    integration = await make("kyc-provider", Role.INTEGRATION)
    env = worker_env(test_database, CASEWORK_LOG_FORMAT="json", CASEWORK_METRICS_PUBLIC="1")
    async with webhook_receiver(SECRET) as receiver:
        await configure_effect(db, kyc_queue, webhook(receiver.url))
        async with two_processes(env) as (served, caller):
            pids = set(serving_pids(lines_of(served)))
            assert len(pids) == 2, pids
            assert served.pid not in pids
            assert await listeners(owner_conn, test_database.name) == 2
            items = {f"item-{n}": {"n": n} for n in range(ATTEMPTS)}
            enqueued, _ = await caller.call(
                integration,
                ENQUEUE,
                queue=kyc_queue,
                items=[{"externalKey": key, "payload": p} for key, p in items.items()],
            )
            assert enqueued["enqueueItems"]["__typename"] == "EnqueuedItems", enqueued

            async with graphql_socket(served.url, rita) as live:
                # The socket's own process: the access line of an operation on it.
                whoami = await live.subscribe(ME)
                assert (await live.next(whoami))["me"] == {"user": "rita"}
                socket_pid: int = await until(
                    served,
                    lambda lines: next(
                        (
                            line["pid"]
                            for line in lines
                            if line.get("transport") == "websocket"
                            and str(line.get("request_id", "")).endswith(f":{whoami}")
                        ),
                        None,
                    ),
                )
                assert socket_pid in pids
                leases = await live.subscribe(LEASE_EVENTS, queue=kyc_queue)
                await subscriptions_started(live, kyc_queue)

                decisions: dict[int, set[str]] = {pid: set() for pid in pids}
                heard_across = False
                for _ in range(ATTEMPTS):
                    claimed, claim_pid = await caller.call(rita, CLAIM, queue=kyc_queue)
                    claim = claimed["claimNext"]
                    assert claim["__typename"] == "Claim", claim
                    if claim_pid != socket_pid and not heard_across:
                        # Claimed through the other process: its NOTIFY reaches this
                        # socket's process by that process's own LISTEN.
                        await next_where(
                            live,
                            leases,
                            claimed_event(claim["item"]["id"]),
                        )
                        heard_across = True
                    decided, decide_pid = await caller.call(
                        rita, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
                    )
                    recorded = decided["submitDecision"]
                    assert recorded["__typename"] == "DecisionRecorded", recorded
                    decisions[decide_pid].add(recorded["decision"]["id"])
                    if heard_across and all(decisions.values()):
                        break
                assert heard_across, "every claim landed on the socket's process"
                assert all(decisions.values()), f"decisions by process: {decisions}"

            decided_ids = {int(i) for by_process in decisions.values() for i in by_process}

            async def all_applied() -> bool:
                applied: int = await owner_conn.fetchval(
                    "SELECT count(*) FROM decision_applications "
                    "WHERE decision_id = ANY ($1) AND state = 'applied'",
                    list(decided_ids),
                )
                return applied == len(decided_ids)

            await wait_until(all_applied, within=WITHIN_SECONDS, what="all applied")

            # Any process's scrape counts the decisions of both, and the figures once.
            for _ in range(4):
                response = await caller.client.get("/metrics")
                assert response.status_code == 200, response.text
                samples = scraped(response.text)
                made = sum(
                    value
                    for (name, labels), value in samples.items()
                    if name == "casework_decisions_total" and ("queue", kyc_queue) in labels
                )
                assert made == len(decided_ids), samples
                pending = samples[("casework_queue_pending", frozenset({("queue", kyc_queue)}))]
                assert pending == len(items) - len(decided_ids)
                assert not any(name.startswith("process_") for name, _ in samples)

            served.process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(served.process.wait(), WITHIN_SECONDS)

    assert code == 0, "".join(served.log)
    assert all(gone(pid) for pid in pids), pids
    lines = lines_of(served)
    finished = [line["pid"] for line in lines if line["message"] == SHUTDOWN_COMPLETE]
    assert sorted(finished) == sorted(pids)
    assert not any("Traceback" in line for line in served.log), "".join(served.log)
    assert await listeners(owner_conn, test_database.name) == 0

    # Exactly once across the two workers: one attempt, one webhook per decision.
    workers = {f"{socket.gethostname()}:{pid}" for pid in pids}
    for decision_id in decided_ids:
        (attempt,) = await attempt_rows(owner_conn, decision_id)
        assert attempt["outcome"] == "applied", dict(attempt)
        assert attempt["worker"] in workers, dict(attempt)
        assert len(receiver.requests_for(decision_id)) == 1
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []


async def test_a_killed_process_is_replaced(test_database: TestDatabase) -> None:
    env = worker_env(test_database, CASEWORK_LOG_FORMAT="json", CASEWORK_METRICS_PUBLIC="1")
    async with two_processes(env) as (served, caller):
        first, second = serving_pids(lines_of(served))
        os.kill(first, signal.SIGKILL)
        replacement: int = await until(
            served,
            lambda lines: next(
                (pid for pid in serving_pids(lines) if pid not in (first, second)), None
            ),
        )
        await until(
            served,
            lambda lines: any(
                line["pid"] == replacement and line["message"] == "Application startup complete."
                for line in lines
            ),
        )
        assert any(f"Child process [{first}] died" in line["message"] for line in lines_of(served))
        # The dead process's gauges left the merge (they would count its sockets still);
        # its counters stay, so that sums never go down.
        files = metric_files(environment_of(second)["PROMETHEUS_MULTIPROC_DIR"])
        assert f"counter_{first}.db" in files
        assert not live_gauges(files, first)
        assert live_gauges(files, second)
        response = await caller.client.get("/metrics")
        assert scraped(response.text)[("casework_listener_connected", frozenset())] == 1
        served.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(served.process.wait(), WITHIN_SECONDS) == 0
    assert gone(second)
    assert gone(replacement)
