"""Applying decisions: `casework worker` throughput, and the lag from a decision to its apply.

Everything runs on this machine: a local PostgreSQL, a no-op webhook receiver and real
worker processes (`python -m server.cli worker`, DATABASE_URL = the owner DSN of a scratch
database, so they run as `casework_app` like the service).

The receiver is a separate process started from this file (`--serve-receiver`): a bare
asyncio HTTP/1.1 server on 127.0.0.1 that answers 200 at once and counts requests and
distinct webhook-ids, lean so that it does not measure itself. Queue `bench` is
configured through the domain with a webhook effect to it (signed, as in production).

Throughput: a template database holds --decisions decisions (enqueued, claimed and decided
through the domain, concurrently) that nobody has applied. For each worker count (1 and 2),
a clone of it is taken; the bench holds `LOCK TABLE decision_applications IN EXCLUSIVE MODE`
and starts the workers, whose first claim then waits on the lock. Once every worker waits
there (pg_stat_activity), the bench releases the lock (commit), reading the database clock
just before: the start. Decisions per second = decisions / (last applied_at - start), both
on the database clock; the poll of the applied count is bounded. Each worker count runs
--repeats times, alternating which goes first, pooled.

Release (lag at the target's rate): the load generator below cannot decide 1,000 items a
second on this machine beside the workers, so a clone of the throughput backlog is parked
(next_attempt_at = infinity) and, once the workers wait at the gate, the bench makes
--release-rate decisions per second due, every 10 ms, each with the hint decision_submit
sends; lag is applied_at - the release (the database clock). One run per --workers count.

Lag: on a fresh clone with no decisions, --lag-workers workers are started and held at the
same gate until all are ready, then a load generator in this process claims and decides
items through the domain at --rate decisions per second for --duration seconds, each slot
scheduled by the clock (at most --load-concurrency in flight; a slot that starts late is
reported as schedule slip). When the load ends and every decision is applied (bounded),
each decision's lag is `applied_decisions.applied_at - review_decisions.decided_at`: both
the database clock, so no skew. decided_at is the decision statement's transaction start
(now()), a millisecond or so before its commit, so the lag is overstated by that much.
The lag is split at the attempt's start (`apply_attempts.started_at`, the worker's clock:
the same host): hint + claim, then webhook + record. Target: p99 lag <= 1 s at 200/s.

CPU seconds of the worker processes, the receiver, the database's PostgreSQL backends, this
process and the whole machine are read from /proc around each measured window.

    .venv/bin/python bench/apply_bench.py [--database-url URL] [--decisions 5000]
        [--workers 1 2] [--release-rate 1000] [--rate 200] [--duration 20] [--lag-workers 1 2]
        [--phases throughput release lag]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, cast

import asyncpg
import benchlib
from benchlib import backend_pids, machine_cpu, process_cpu, self_cpu
from http1 import KeepAliveConnection

from server.config import REPO_ROOT
from server.domain.model import Claim, Decision, EffectKind, Verdict
from server.domain.review.decisions import DecisionInput, submit_decision
from server.domain.review.leases import claim_next
from server.domain.review.queues import Effect, QueueSettings, configure_queue
from server.store.database import Database, create_pool

REVIEWER = benchlib.REVIEWER
# A Standard Webhooks secret: `whsec_` and the base64 of 32 bytes.
SIGNING_SECRET = "whsec_YXBwbHktYmVuY2gtc2lnbmluZy1zZWNyZXQtMDEyMzQ1Njc="
LAG_TARGET_SECONDS = 1.0
THIS_FILE = Path(__file__).resolve()

# Bounds of every wait, so the script always stops by itself.
RECEIVER_START_SECONDS = 30.0
RECEIVER_MAX_SECONDS = 3600.0
WORKERS_READY_SECONDS = 60.0
WORKER_STOP_SECONDS = 20.0
POLL_SECONDS = 0.05
PRECREATE_CONCURRENCY = 16
# Environment the worker processes keep from ours; every other CASEWORK_* is dropped, so
# they use PostgreSQL LISTEN/NOTIFY and derive the application role from DATABASE_URL.
PASSED_SETTINGS = ("CASEWORK_WORKER_CONCURRENCY", "CASEWORK_APPLY_BACKOFF_SECONDS")


@dataclass(frozen=True)
class Config:
    server: str
    phases: list[str]
    decisions: int
    workers: list[int]
    repeats: int
    rate: float
    duration: float
    lag_workers: list[int]
    load_concurrency: int
    worker_concurrency: int | None
    release_rate: float
    drain_timeout: float
    seed: int

    @property
    def lag_decisions(self) -> int:
        return round(self.rate * self.duration)


# --- the no-op receiver (its own process) --------------------------------------------------

OK_RESPONSE = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"
MAX_HEAD_BYTES = 65536


class ReceiverStats:
    def __init__(self) -> None:
        self.requests = 0
        self.unkeyed = 0
        self.keys: set[bytes] = set()

    def response(self, *, reset: bool) -> bytes:
        body = json.dumps(
            {"requests": self.requests, "distinct": len(self.keys), "unkeyed": self.unkeyed}
        ).encode()
        if reset:
            self.requests = self.unkeyed = 0
            self.keys = set()
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
        return head.encode() + b"\r\n\r\n" + body


class ReceiverProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive with Content-Length bodies: what the worker sends. 200 to every POST;
    POST /stats answers the counts (and resets them if the body says so)."""

    def __init__(self, stats: ReceiverStats) -> None:
        self._stats = stats
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        assert self._transport is not None
        self._buffer += data
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD_BYTES:
                    self._transport.close()
                return
            lines = bytes(self._buffer[:end]).split(b"\r\n")
            length = 0
            key: bytes | None = None
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name in (b"webhook-id", b"idempotency-key"):
                    # webhook-id (Standard Webhooks); a legacy target also sends
                    # Idempotency-Key, the same value.
                    key = value.strip()
            total = end + 4 + length
            if len(self._buffer) < total:
                return
            body = bytes(self._buffer[end + 4 : total])
            del self._buffer[:total]
            target = lines[0].split(b" ")[1] if b" " in lines[0] else b""
            if target == b"/stats":
                reset = bool(json.loads(body or b"{}").get("reset"))
                self._transport.write(self._stats.response(reset=reset))
                continue
            self._stats.requests += 1
            if key is None:
                self._stats.unkeyed += 1
            else:
                self._stats.keys.add(key)
            self._transport.write(OK_RESPONSE)


async def serve_receiver() -> None:
    """Prints its port, then serves until SIGTERM, the end of stdin (the parent's pipe) or
    RECEIVER_MAX_SECONDS."""
    loop = asyncio.get_running_loop()
    stats = ReceiverStats()
    server = await loop.create_server(lambda: ReceiverProtocol(stats), "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    waits = [asyncio.ensure_future(stdin.read()), asyncio.ensure_future(stop.wait())]
    await asyncio.wait(waits, timeout=RECEIVER_MAX_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    for wait in waits:
        wait.cancel()
    server.close()


@dataclass
class Receiver:
    port: int
    pid: int
    connection: KeepAliveConnection

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def stats(self, *, reset: bool = False) -> dict[str, int]:
        result: dict[str, int] = await self.connection.post_json("/stats", {"reset": reset}, {})
        return result


@contextlib.asynccontextmanager
async def receiver_process() -> AsyncIterator[Receiver]:
    with tempfile.TemporaryFile() as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(THIS_FILE),
            "--serve-receiver",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
        try:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), RECEIVER_START_SECONDS)
            if not line.strip().isdigit():
                log.seek(0)
                raise RuntimeError(f"the receiver did not start: {log.read().decode()[-2000:]}")
            port = int(line)
            async with KeepAliveConnection("127.0.0.1", port) as connection:
                yield Receiver(port, process.pid, connection)
        finally:
            await stop_process(process, close_stdin=True)


async def stop_process(process: asyncio.subprocess.Process, *, close_stdin: bool = False) -> None:
    if close_stdin and process.stdin is not None:
        process.stdin.close()
    if process.returncode is None and not close_stdin:
        process.terminate()
    try:
        await asyncio.wait_for(process.wait(), WORKER_STOP_SECONDS)
    except TimeoutError:
        process.kill()
        await process.wait()


# --- worker processes ----------------------------------------------------------------------


class Workers:
    """Processes of `python -m server.cli worker`, started by `start`; the context that made
    this stops them with SIGTERM (a kill after WORKER_STOP_SECONDS)."""

    def __init__(self, env: dict[str, str], stack: contextlib.ExitStack) -> None:
        self._env = env
        self._stack = stack
        self.processes: list[asyncio.subprocess.Process] = []
        self.logs: list[IO[bytes]] = []

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self.processes]

    async def start(self, count: int) -> None:
        for _ in range(count):
            # Closed by the stack of the worker_processes block.
            log = self._stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
            self.logs.append(log)
            self.processes.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "server.cli",
                    "worker",
                    cwd=REPO_ROOT,
                    env=self._env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                )
            )

    def check_alive(self) -> None:
        for process, log in zip(self.processes, self.logs, strict=True):
            if process.returncode is not None:
                raise RuntimeError(
                    f"worker {process.pid} exited with {process.returncode}:\n{log_tail(log)}"
                )

    async def stop(self) -> None:
        await asyncio.gather(*(stop_process(process) for process in self.processes))
        for process, log in zip(self.processes, self.logs, strict=True):
            tail = log_tail(log)
            if process.returncode != 0 or "Traceback" in tail:
                print(f"  worker {process.pid} exited with {process.returncode}:\n{tail}")


def log_tail(log: IO[bytes], limit: int = 3000) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")[-limit:]


def worker_env(owner_dsn: str, config: Config) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CASEWORK_") or name in PASSED_SETTINGS
    }
    env["DATABASE_URL"] = owner_dsn
    if config.worker_concurrency is not None:
        env["CASEWORK_WORKER_CONCURRENCY"] = str(config.worker_concurrency)
    return env


@contextlib.asynccontextmanager
async def worker_processes(owner_dsn: str, config: Config) -> AsyncIterator[Workers]:
    with contextlib.ExitStack() as stack:
        workers = Workers(worker_env(owner_dsn, config), stack)
        try:
            yield workers
        finally:
            await workers.stop()


Opener = Callable[[], Awaitable[datetime]]


@contextlib.asynccontextmanager
async def start_gate(gate: asyncpg.Connection) -> AsyncIterator[Opener]:
    """Holds decision_applications in EXCLUSIVE mode, so a worker's claim (FOR UPDATE,
    UPDATE) waits, until the opener commits; it returns the database clock just before.
    Leaving the block without opening rolls back, which opens it too."""
    transaction = gate.transaction()
    await transaction.start()

    async def open_gate() -> datetime:
        started: datetime = await gate.fetchval("SELECT clock_timestamp()")
        await transaction.commit()
        return started

    try:
        await gate.execute("LOCK TABLE decision_applications IN EXCLUSIVE MODE")
        yield open_gate
    finally:
        if gate.is_in_transaction():
            await transaction.rollback()


async def wait_at_gate(
    observer: asyncpg.Connection, database: str, workers: Workers, count: int
) -> None:
    """Until `count` application-role backends wait on a lock: every worker's first claim."""
    deadline = time.monotonic() + WORKERS_READY_SECONDS
    while time.monotonic() < deadline:
        workers.check_alive()
        waiting = await observer.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 "
            "AND usename = 'casework_app' AND wait_event_type = 'Lock'",
            database,
        )
        if waiting >= count:
            return
        await asyncio.sleep(POLL_SECONDS)
    raise RuntimeError(
        f"the workers were not all waiting at the gate after {WORKERS_READY_SECONDS} s"
    )


async def wait_applied(
    observer: asyncpg.Connection, expected: int, within: float, workers: Workers
) -> int:
    """Polls the applied count until `expected` (or a failure, or `within` seconds);
    returns it."""
    deadline = time.monotonic() + within
    applied = 0
    while time.monotonic() < deadline:
        row = await observer.fetchrow(
            "SELECT (SELECT count(*) FROM applied_decisions) AS applied, "
            "(SELECT count(*) FROM decision_applications WHERE state = 'failed') AS failed"
        )
        assert row is not None
        applied = row["applied"]
        if applied >= expected:
            return int(applied)
        if row["failed"]:
            raise RuntimeError(f"{row['failed']} application(s) failed; see apply_attempts")
        workers.check_alive()
        await asyncio.sleep(POLL_SECONDS)
    return int(applied)


# --- CPU accounting ------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuSample:
    workers: float
    receiver: float
    bench: float
    backends: dict[int, float]
    machine: tuple[float, float]
    at: float


@dataclass(frozen=True)
class CpuUse:
    workers: float
    receiver: float
    bench: float
    postgres: float
    busy: float  # all processes, every core
    steal: float
    seconds: float

    def __add__(self, other: CpuUse) -> CpuUse:
        return CpuUse(
            self.workers + other.workers,
            self.receiver + other.receiver,
            self.bench + other.bench,
            self.postgres + other.postgres,
            self.busy + other.busy,
            self.steal + other.steal,
            self.seconds + other.seconds,
        )


async def cpu_sample(
    observer: asyncpg.Connection, database: str, workers: Workers, receiver: Receiver
) -> CpuSample:
    pids = await backend_pids(observer, database)
    return CpuSample(
        workers=sum(process_cpu(pid) for pid in workers.pids),
        receiver=process_cpu(receiver.pid),
        bench=self_cpu(),
        backends={pid: process_cpu(pid) for pid in pids},
        machine=machine_cpu(),
        at=time.perf_counter(),
    )


def cpu_used(start: CpuSample, end: CpuSample) -> CpuUse:
    # A backend that appeared meanwhile (a pool growing) counts from zero.
    postgres = sum(cpu - start.backends.get(pid, 0.0) for pid, cpu in end.backends.items())
    return CpuUse(
        workers=end.workers - start.workers,
        receiver=end.receiver - start.receiver,
        bench=end.bench - start.bench,
        postgres=postgres,
        busy=end.machine[0] - start.machine[0],
        steal=end.machine[1] - start.machine[1],
        seconds=end.at - start.at,
    )


# --- databases -----------------------------------------------------------------------------


async def build_items_template(config: Config, name: str, receiver: Receiver) -> None:
    """Queue `bench` with a signed webhook to the receiver, and enough pending items."""
    await benchlib.create_migrated(config.server, name)
    pool = await create_pool(benchlib.app_dsn(config.server, name), min_size=1, max_size=2)
    try:
        db = Database(pool, benchlib.load_queries())
        await benchlib.seed_queue(db)
        effect = Effect(EffectKind.WEBHOOK, receiver.url, SIGNING_SECRET)
        settings = QueueSettings(benchlib.QUEUE, effect=effect, effect_timeout_seconds=10)
        benchlib.check(await configure_queue(db, benchlib.ADMIN, settings), "effect")
        items = max(config.decisions, config.lag_decisions)
        rng = random.Random(config.seed)
        await benchlib.enqueue(db, [f"item-{n:06d}" for n in range(items)], rng)
    finally:
        await pool.close()
    await vacuum(config.server, name)


async def build_decided_template(config: Config, name: str, items_template: str) -> None:
    """A clone of the items template with --decisions decisions nobody has applied yet."""
    await benchlib.create_database(config.server, name, template=items_template)
    pool = await create_pool(
        benchlib.app_dsn(config.server, name),
        min_size=PRECREATE_CONCURRENCY,
        max_size=PRECREATE_CONCURRENCY,
    )
    try:
        db = Database(pool, benchlib.load_queries())
        remaining = config.decisions

        async def decide_some() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await claim_and_decide(db)

        await asyncio.gather(*(decide_some() for _ in range(PRECREATE_CONCURRENCY)))
    finally:
        await pool.close()
    await vacuum(config.server, name)


async def vacuum(server: str, name: str) -> None:
    conn = await asyncpg.connect(benchlib.owner_dsn(server, name))
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def claim_and_decide(db: Database) -> Decision:
    """What a reviewer does, through the domain: claim the next item of `bench`, approve it."""
    claim = await claim_next(db, REVIEWER, benchlib.QUEUE)
    if not isinstance(claim, Claim):
        raise RuntimeError(f"claim returned {claim}")
    return await benchlib.approve(db, claim, f"item {claim.item.id}")


@contextlib.asynccontextmanager
async def scratch_clone(config: Config, template: str, kind: str) -> AsyncIterator[str]:
    name = benchlib.new_name(kind)
    await benchlib.create_database(config.server, name, template=template)
    try:
        yield name
    finally:
        await benchlib.drop_database(config.server, name)


@contextlib.asynccontextmanager
async def owner_connections(config: Config, name: str) -> AsyncIterator[list[asyncpg.Connection]]:
    """Two owner connections: the gate, and an observer that polls (autocommit)."""
    dsn = benchlib.owner_dsn(config.server, name)
    connections: list[asyncpg.Connection] = []
    try:
        for _ in range(2):
            connections.append(await asyncpg.connect(dsn))
        yield connections
    finally:
        for conn in connections:
            await conn.close()


# --- throughput ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Throughput:
    workers: int
    decisions: int
    seconds: float  # database clock: gate opened -> last applied_at
    wall_seconds: float  # this process: gate opened -> the poll saw them all
    attempts: int
    requests: int
    distinct_keys: int
    cpu: CpuUse

    @property
    def rate(self) -> float:
        return self.decisions / self.seconds

    def __add__(self, other: Throughput) -> Throughput:
        return Throughput(
            self.workers,
            self.decisions + other.decisions,
            self.seconds + other.seconds,
            self.wall_seconds + other.wall_seconds,
            self.attempts + other.attempts,
            self.requests + other.requests,
            self.distinct_keys + other.distinct_keys,
            self.cpu + other.cpu,
        )


async def throughput_run(
    config: Config, receiver: Receiver, template: str, count: int
) -> Throughput:
    async with (
        scratch_clone(config, template, f"tput{count}") as name,
        owner_connections(config, name) as (gate, observer),
    ):
        await receiver.stats(reset=True)
        async with worker_processes(benchlib.owner_dsn(config.server, name), config) as workers:
            async with start_gate(gate) as open_gate:
                await workers.start(count)
                await wait_at_gate(observer, name, workers, count)
                start_cpu = await cpu_sample(observer, name, workers, receiver)
                started = await open_gate()
            wall_start = time.perf_counter()
            applied = await wait_applied(observer, config.decisions, config.drain_timeout, workers)
            wall = time.perf_counter() - wall_start
            cpu = cpu_used(start_cpu, await cpu_sample(observer, name, workers, receiver))
        if applied < config.decisions:
            raise RuntimeError(
                f"{count} worker(s): only {applied} of {config.decisions} applied "
                f"after {config.drain_timeout:g} s"
            )
        row = await observer.fetchrow(
            "SELECT count(*) AS applied, max(applied_at) AS last, "
            "(SELECT count(*) FROM apply_attempts) AS attempts FROM applied_decisions"
        )
        assert row is not None
        seen = await receiver.stats()
    result = Throughput(
        workers=count,
        decisions=row["applied"],
        seconds=(row["last"] - started).total_seconds(),
        wall_seconds=wall,
        attempts=row["attempts"],
        requests=seen["requests"],
        distinct_keys=seen["distinct"],
        cpu=cpu,
    )
    check = "ok" if result.distinct_keys == result.decisions == config.decisions else "MISMATCH"
    print(
        f"  {count} worker(s): {result.decisions} applied in {result.seconds:.2f} s "
        f"({result.rate:.0f}/s; poll saw all after {wall:.2f} s); {result.attempts} attempts; "
        f"receiver: {result.requests} requests, {result.distinct_keys} distinct keys: {check}",
        flush=True,
    )
    return result


# --- lag under a steady load ---------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    decisions: list[int]
    seconds: float
    slips: list[float]  # how late each slot started, seconds
    decide_seconds: list[float]  # submit_decision as this process saw it


async def steady_load(db: Database, config: Config) -> Load:
    """Claims and decides one item per slot, slots 1/rate apart by the clock."""
    total = config.lag_decisions
    interval = 1.0 / config.rate
    slots = asyncio.Semaphore(config.load_concurrency)
    decided: list[int] = []
    decide_seconds: list[float] = []
    slips: list[float] = []
    tasks: set[asyncio.Task[None]] = set()
    errors: list[Exception] = []

    async def one() -> None:
        try:
            claim = await claim_next(db, REVIEWER, benchlib.QUEUE)
            if not isinstance(claim, Claim):
                raise RuntimeError(f"claim returned {claim}")
            before = time.perf_counter()
            decision = await submit_decision(
                db,
                REVIEWER,
                DecisionInput(
                    item_id=str(claim.item.id),
                    lease_token=str(claim.lease_token),
                    verdict=Verdict.APPROVE,
                    reason_code=benchlib.REASON_CODE,
                    evidence_hash=claim.evidence_hash,
                ),
            )
            decide_seconds.append(time.perf_counter() - before)
            if not isinstance(decision, Decision):
                raise RuntimeError(f"decision returned {decision}")
            decided.append(decision.id)
        except Exception as error:
            errors.append(error)
        finally:
            slots.release()

    started = time.perf_counter()
    for slot in range(total):
        if errors:
            break
        due = started + slot * interval
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await slots.acquire()
        slips.append(max(0.0, time.perf_counter() - due))
        task = asyncio.create_task(one())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait_for(asyncio.gather(*tasks), config.drain_timeout)
    if errors:
        raise RuntimeError(f"{len(errors)} claim+decide cycle(s) failed") from errors[0]
    return Load(decided, time.perf_counter() - started, slips, decide_seconds)


@dataclass(frozen=True)
class Lag:
    workers: int
    load: Load
    unapplied: int
    attempts: int
    lag: list[float]  # decided_at -> applied_at
    to_start: list[float]  # decided_at -> the applying attempt started
    effect: list[float]  # the attempt started -> applied_at
    cpu: CpuUse

    @property
    def late(self) -> int:
        return sum(1 for value in self.lag if value > LAG_TARGET_SECONDS) + self.unapplied


LAG_SQL = """
SELECT extract(epoch FROM p.applied_at - d.decided_at)::float8 AS lag,
       extract(epoch FROM t.started_at - d.decided_at)::float8 AS to_start,
       extract(epoch FROM p.applied_at - t.started_at)::float8 AS effect
FROM review_decisions AS d
JOIN applied_decisions AS p ON p.decision_id = d.id
JOIN apply_attempts AS t
  ON t.decision_id = d.id AND t.outcome = 'applied' AND t.error IS NULL
ORDER BY d.id
"""


async def lag_run(config: Config, receiver: Receiver, template: str, count: int) -> Lag:
    async with (
        scratch_clone(config, template, f"lag{count}") as name,
        owner_connections(config, name) as (gate, observer),
    ):
        await receiver.stats(reset=True)
        pool = await create_pool(
            benchlib.app_dsn(config.server, name),
            min_size=min(4, config.load_concurrency),
            max_size=config.load_concurrency,
        )
        try:
            db = Database(pool, benchlib.load_queries())
            owner = benchlib.owner_dsn(config.server, name)
            async with worker_processes(owner, config) as workers:
                async with start_gate(gate) as open_gate:
                    await workers.start(count)
                    await wait_at_gate(observer, name, workers, count)
                    await open_gate()
                start_cpu = await cpu_sample(observer, name, workers, receiver)
                load = await steady_load(db, config)
                cpu = cpu_used(start_cpu, await cpu_sample(observer, name, workers, receiver))
                applied = await wait_applied(
                    observer, len(load.decisions), config.drain_timeout, workers
                )
        finally:
            await pool.close()
        rows = await observer.fetch(LAG_SQL)
        attempts = await observer.fetchval("SELECT count(*) FROM apply_attempts")
    result = Lag(
        workers=count,
        load=load,
        unapplied=len(load.decisions) - applied,
        attempts=attempts,
        lag=sorted(row["lag"] for row in rows),
        to_start=sorted(row["to_start"] for row in rows),
        effect=sorted(row["effect"] for row in rows),
        cpu=cpu,
    )
    achieved = len(load.decisions) / load.seconds
    print(
        f"  {count} worker(s): {len(load.decisions)} decisions in {load.seconds:.1f} s "
        f"({achieved:.0f}/s), {applied} applied, {attempts} attempts; lag p50 "
        f"{ms(percentile(result.lag, 0.5))} p99 {ms(percentile(result.lag, 0.99))} ms",
        flush=True,
    )
    return result


# --- release: lag at a rate no load generator here reaches ---------------------------------

# Parks a clone's whole backlog: nothing is due until the bench releases it.
PARK_SQL = "UPDATE decision_applications SET next_attempt_at = 'infinity'"
# Makes the next decisions due now and sends each the hint decision_submit sends.
RELEASE_SQL = """
WITH released AS (
    UPDATE decision_applications AS a
    SET next_attempt_at = clock_timestamp()
    WHERE a.decision_id = ANY ($1::bigint[])
    RETURNING a.decision_id, a.queue
)
SELECT count(casework_hint(kind => 'decided', queue => r.queue, decision_id => r.decision_id))
FROM released AS r
"""
# Lag from the release: next_attempt_at is not touched by a successful attempt.
RELEASE_LAG_SQL = """
SELECT extract(epoch FROM p.applied_at - a.next_attempt_at)::float8 AS lag
FROM decision_applications AS a
JOIN applied_decisions AS p ON p.decision_id = a.decision_id
ORDER BY 1
"""
RELEASE_TICK_SECONDS = 0.01


@dataclass(frozen=True)
class Release:
    workers: int
    rate: float  # released per second, as achieved
    decisions: int
    unapplied: int
    attempts: int
    lag: list[float]
    slip: list[float]
    cpu: CpuUse


async def release_run(config: Config, receiver: Receiver, template: str, count: int) -> Release:
    """The throughput phase's backlog, parked; the workers start at the gate; then every
    RELEASE_TICK_SECONDS the bench makes the next share of --release-rate per second due,
    with a hint each, as if decided at that moment. Lag: applied_at - released."""
    async with (
        scratch_clone(config, template, f"rel{count}") as name,
        owner_connections(config, name) as (gate, observer),
    ):
        await observer.execute(PARK_SQL)
        ids = [
            r[0]
            for r in await observer.fetch(
                "SELECT decision_id FROM decision_applications ORDER BY decision_id"
            )
        ]
        await receiver.stats(reset=True)
        async with worker_processes(benchlib.owner_dsn(config.server, name), config) as workers:
            async with start_gate(gate) as open_gate:
                await workers.start(count)
                await wait_at_gate(observer, name, workers, count)
                await open_gate()
            start_cpu = await cpu_sample(observer, name, workers, receiver)
            per_tick = config.release_rate * RELEASE_TICK_SECONDS
            slips: list[float] = []
            started = time.perf_counter()
            released = 0
            tick = 0
            while released < len(ids):
                due = started + tick * RELEASE_TICK_SECONDS
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                slips.append(max(0.0, time.perf_counter() - due))
                tick += 1
                upto = min(len(ids), round(tick * per_tick))
                if upto > released:
                    await gate.fetchval(RELEASE_SQL, ids[released:upto])
                    released = upto
            seconds = time.perf_counter() - started
            applied = await wait_applied(observer, len(ids), config.drain_timeout, workers)
            cpu = cpu_used(start_cpu, await cpu_sample(observer, name, workers, receiver))
        lags = [row["lag"] for row in await observer.fetch(RELEASE_LAG_SQL)]
        attempts = await observer.fetchval("SELECT count(*) FROM apply_attempts")
    result = Release(
        count, len(ids) / seconds, len(ids), len(ids) - applied, attempts, lags, sorted(slips), cpu
    )
    print(
        f"  {count} worker(s): released {len(ids)} at {result.rate:.0f}/s, {applied} applied, "
        f"{attempts} attempts; lag p50 {ms(percentile(lags, 0.5))} p99 "
        f"{ms(percentile(lags, 0.99))} ms",
        flush=True,
    )
    return result


# --- report --------------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    return benchlib.percentile(values, fraction)


def ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{1000 * seconds:.0f}"


REPORT_HEADERS = [
    "phase",
    "workers",
    "decisions/s",
    "lag p50 ms",
    "lag p99 ms",
    "lag max ms",
    "attempts/decision",
    "CPU ms per decision: workers",
    "receiver",
    "postgres",
    "machine",
    "steal",
]


def cpu_cells(cpu: CpuUse, decisions: int) -> list[str]:
    per = 1000 / max(1, decisions)
    return [
        f"{cpu.workers * per:.2f}",
        f"{cpu.receiver * per:.2f}",
        f"{cpu.postgres * per:.2f}",
        f"{cpu.busy / cpu.seconds:.2f}",
        f"{cpu.steal / cpu.seconds:.2f}",
    ]


def report(
    config: Config,
    throughput: dict[int, Throughput],
    lags: list[Lag],
    releases: list[Release] | None = None,
) -> None:
    """One table, the shape of docs/benchmarks.md's: a row per phase and worker count; then
    what the lag rows do not show, and the target."""
    rows = []
    pooled = f", pooled over {config.repeats} runs" if config.repeats > 1 else ""
    for count, run in throughput.items():
        rows.append(
            [
                f"throughput: {config.decisions} waiting{pooled}",
                str(count),
                f"{run.rate:.0f}",
                "-",
                "-",
                "-",
                f"{run.attempts / run.decisions:.2f}",
                *cpu_cells(run.cpu, run.decisions),
            ]
        )
    for r in lags:
        decided = len(r.load.decisions)
        rows.append(
            [
                f"lag: {config.rate:g}/s for {config.duration:g} s",
                str(r.workers),
                f"{decided / r.load.seconds:.0f}",
                ms(percentile(r.lag, 0.5)),
                ms(percentile(r.lag, 0.99)),
                ms(r.lag[-1] if r.lag else math.nan),
                f"{r.attempts / max(1, decided):.2f}",
                *cpu_cells(r.cpu, decided),
            ]
        )
    for rel in releases or []:
        rows.append(
            [
                f"release: {config.decisions} at {config.release_rate:g}/s",
                str(rel.workers),
                f"{rel.rate:.0f}",
                ms(percentile(rel.lag, 0.5)),
                ms(percentile(rel.lag, 0.99)),
                ms(rel.lag[-1] if rel.lag else math.nan),
                f"{rel.attempts / max(1, rel.decisions):.2f}",
                *cpu_cells(rel.cpu, rel.decisions),
            ]
        )
    print()
    benchlib.print_table(
        REPORT_HEADERS,
        rows,
        title="decisions/s: applied (throughput), decided (lag); lag: applied_at - decided_at, "
        "database clock; CPU ms per decision (in the lag rows postgres includes the load "
        f"generator's claims and decisions); machine, steal: cores busy on average, of "
        f"{os.cpu_count()}, all processes",
    )
    for rel in releases or []:
        p99 = percentile(rel.lag, 0.99)
        met = rel.unapplied == 0 and p99 <= LAG_TARGET_SECONDS
        print(
            f"Target p99 lag <= {LAG_TARGET_SECONDS * 1000:.0f} ms at {config.release_rate:g}/s "
            f"released, {rel.workers} worker(s): {'met' if met else 'NOT met'} (p99 {ms(p99)} "
            f"ms, release slip p99 {ms(percentile(rel.slip, 0.99))} ms)"
        )
    if not lags:
        return
    print()
    for r in lags:
        decide = sorted(r.load.decide_seconds)
        per = 1000 / max(1, len(r.load.decisions))
        slip = percentile(sorted(r.load.slips), 0.99)
        print(
            f"  {r.workers} worker(s): lag p90 {ms(percentile(r.lag, 0.9))} ms, over 1 s "
            f"{r.late}; to start p50/p99 {ms(percentile(r.to_start, 0.5))}/"
            f"{ms(percentile(r.to_start, 0.99))} ms, webhook+record p50/p99 "
            f"{ms(percentile(r.effect, 0.5))}/{ms(percentile(r.effect, 0.99))} ms; slip p99 "
            f"{ms(slip)} ms"
        )
        print(
            f"  {r.workers} worker(s): submitDecision p50/p99 {ms(percentile(decide, 0.5))}/"
            f"{ms(percentile(decide, 0.99))} ms as the load generator saw it; CPU ms per "
            f"decision: workers {r.cpu.workers * per:.2f}, receiver {r.cpu.receiver * per:.2f}, "
            f"postgres {r.cpu.postgres * per:.2f}, load generator {r.cpu.bench * per:.2f}; "
            f"attempts {r.attempts}, unapplied {r.unapplied}"
        )
    print()
    for r in lags:
        p99 = percentile(r.lag, 0.99)
        met = r.unapplied == 0 and p99 <= LAG_TARGET_SECONDS
        print(
            f"Target p99 lag <= {LAG_TARGET_SECONDS * 1000:.0f} ms at {config.rate:g}/s, "
            f"{r.workers} worker(s): {'met' if met else 'NOT met'} (p99 {ms(p99)} ms)"
        )


# --- main ----------------------------------------------------------------------------------

# The worker's pool is its concurrency + 2 connections, plus its LISTEN connection.
DEFAULT_WORKER_CONCURRENCY = 16


async def check_connection_slots(config: Config) -> None:
    """Refuses to start when the server cannot take the connections the runs need: a worker
    that cannot connect loses its attempt to a 30 s lock, which would be measured."""
    concurrency = config.worker_concurrency or int(
        os.environ.get("CASEWORK_WORKER_CONCURRENCY") or DEFAULT_WORKER_CONCURRENCY
    )
    per_worker = concurrency + 3
    counts: list[float] = (
        [*config.workers] if {"throughput", "release"} & set(config.phases) else []
    )
    if "lag" in config.phases:
        counts += [count + config.load_concurrency / per_worker for count in config.lag_workers]
    needed = math.ceil(max(counts) * per_worker) + 4
    conn = await asyncpg.connect(config.server)
    try:
        row = await conn.fetchrow(
            "SELECT current_setting('max_connections')::int "
            "- current_setting('superuser_reserved_connections')::int "
            "- (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend') "
            "AS free"
        )
    finally:
        await conn.close()
    assert row is not None
    if row["free"] < needed:
        raise SystemExit(
            f"apply_bench: the runs need up to {needed} connections and the server has "
            f"{row['free']} free; wait for other users of it, or pass fewer --workers or a "
            "smaller --worker-concurrency"
        )


async def main(config: Config) -> None:
    started = time.perf_counter()
    print(
        f"apply_bench: phases {config.phases}; throughput: {config.decisions} decisions, "
        f"workers {config.workers}, {config.repeats} run(s) each; lag: {config.rate:g}/s for "
        f"{config.duration:g} s, workers {config.lag_workers}; worker concurrency "
        f"{config.worker_concurrency or 'default'}; {os.cpu_count()} CPUs",
        flush=True,
    )
    await check_connection_slots(config)
    items = benchlib.new_name("items")
    decided = benchlib.new_name("decided")
    throughput: dict[int, Throughput] = {}
    lags: list[Lag] = []
    releases: list[Release] = []
    try:
        async with receiver_process() as receiver:
            await build_items_template(config, items, receiver)
            if "throughput" in config.phases or "release" in config.phases:
                build = time.perf_counter()
                await build_decided_template(config, decided, items)
                print(
                    f"  pre-created {config.decisions} decisions through the domain in "
                    f"{time.perf_counter() - build:.1f} s",
                    flush=True,
                )
            if "throughput" in config.phases:
                runs: dict[int, list[Throughput]] = {count: [] for count in config.workers}
                for repeat in range(config.repeats):
                    order = config.workers if repeat % 2 == 0 else config.workers[::-1]
                    for count in order:
                        runs[count].append(await throughput_run(config, receiver, decided, count))
                throughput = {count: sum_runs(found) for count, found in runs.items()}
            if "release" in config.phases:
                for count in config.workers:
                    releases.append(await release_run(config, receiver, decided, count))
            if "lag" in config.phases:
                for count in config.lag_workers:
                    lags.append(await lag_run(config, receiver, items, count))
    finally:
        await benchlib.drop_database(config.server, decided)
        await benchlib.drop_database(config.server, items)
    if throughput or lags or releases:
        report(config, throughput, lags, releases)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


def sum_runs(runs: list[Throughput]) -> Throughput:
    total = runs[0]
    for run in runs[1:]:
        total = total + run
    return total


def parse_args(argv: list[str] | None = None) -> Config | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument(
        "--phases",
        nargs="+",
        choices=["throughput", "release", "lag"],
        default=["throughput", "release", "lag"],
    )
    parser.add_argument("--decisions", type=int, default=5000, help="backlog per throughput run")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--release-rate",
        type=float,
        default=1000.0,
        help="release phase: the backlog made due at this many decisions per second",
    )
    parser.add_argument("--repeats", type=int, default=2, help="throughput runs per worker count")
    parser.add_argument("--rate", type=float, default=200.0, help="decisions per second")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of steady load")
    parser.add_argument("--lag-workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--load-concurrency", type=int, default=32, help="claim+decide cycles in flight at most"
    )
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        default=None,
        help="CASEWORK_WORKER_CONCURRENCY of the workers (default: the service's, 16)",
    )
    parser.add_argument(
        "--drain-timeout", type=float, default=120.0, help="longest wait for all to be applied"
    )
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--serve-receiver", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_receiver:
        return None
    if min(args.workers + args.lag_workers) < 1 or args.repeats < 1 or args.decisions < 1:
        parser.error("--workers, --lag-workers, --repeats and --decisions must be positive")
    if args.rate <= 0 or args.duration <= 0 or args.load_concurrency < 1:
        parser.error("--rate, --duration and --load-concurrency must be positive")
    return Config(
        server=benchlib.require_local(args.database_url),
        phases=args.phases,
        decisions=args.decisions,
        workers=args.workers,
        repeats=args.repeats,
        rate=args.rate,
        duration=args.duration,
        lag_workers=args.lag_workers,
        load_concurrency=args.load_concurrency,
        worker_concurrency=args.worker_concurrency,
        release_rate=args.release_rate,
        drain_timeout=args.drain_timeout,
        seed=args.seed,
    )


def entry(argv: list[str] | None = None) -> None:
    config = parse_args(argv)
    if config is None:
        benchlib.run(serve_receiver)
    else:
        benchlib.run(lambda: main(config))


if __name__ == "__main__":
    entry()
