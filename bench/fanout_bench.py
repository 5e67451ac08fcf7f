"""1,000 websocket subscribers to queueBacklog on one server process: latency, RSS, connections.

One uvicorn process serves bench/app_factory.py (create_app(dsn, dev=False), the service's
pool defaults, PostgreSQL LISTEN/NOTIFY transport) on a scratch database with queue `bench`.
This process opens --subscribers graphql-transport-ws sockets with the `websockets` library
(in concurrent batches of --batch), each with its own reviewer token in connection_init,
and subscribes each to `queueBacklog(queue: "bench")`; it waits for every first snapshot.

Then --rounds rounds: enqueue one item through the domain (`enqueue_items`, so the real
NOTIFY of the real statement is used) and take the time when the call returns, i.e. after
the commit; every socket timestamps the first figure whose `pending` reaches the new count.
A round's latency is its commit to the last of the subscribers having the figure. The hub
sends a queue's figures at most every 250 ms, so each round starts --gap seconds (plus up
to 0.1 s of random jitter) after the previous round's last arrival: the 250 ms window opened
before the first arrival, so it is closed and the round measures the fan-out, not the
window. Afterwards, optionally, a steady stream of --stream-changes changes every
--stream-interval seconds shows what the coalescing adds when changes arrive mid-window.

Around it the script reads the server's VmRSS from /proc (before the subscribers, once all
have their first snapshot, at the end and after they all left), the CPU of the server and
of this process, and pg_stat_activity for the test database (the bench's own connections
carry application_name fanout_bench* and are left out), to count the listener and pool
connections before and after the subscribers came.

    .venv/bin/python bench/fanout_bench.py [--database-url URL] [--subscribers 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import json
import os
import random
import resource
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import benchlib
import httpx
import websockets
from benchlib import backend_pids, machine_cpu, process_cpu, self_cpu
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.domain.review.items import enqueue_items
from server.events.hub import BACKLOG_INTERVAL_SECONDS
from server.store.database import Database, create_pool

PROTOCOL = Subprotocol("graphql-transport-ws")
BACKLOG = (
    "subscription($q:String!){ queueBacklog(queue:$q){ "
    "queue pending leased oldestPendingAgeSeconds resync } }"
)
BENCH_APPLICATION = "fanout_bench"
OPEN_SECONDS = 30.0
LEAVE_SECONDS = 30.0
POLL_SECONDS = 0.05
SAMPLE_SECONDS = 0.1
JITTER_SECONDS = 0.1
MAX_INCOMPLETE_ROUNDS = 3
RSS_TARGET_MB = 100.0
LATENCY_TARGET_MS = 250.0
# The heartbeat of server/events/listener.py; LISTEN is what it ran before the first beat.
LISTENER_QUERIES = ("SELECT 1",)

T = TypeVar("T")


@dataclass(frozen=True)
class Config:
    server: str
    subscribers: int
    batch: int
    rounds: int
    gap: float
    settle_timeout: float
    stream_changes: int
    stream_interval: float
    tokens: int
    compression: bool
    ws: str
    pool_min: int
    pool_max: int
    seed: int


# --- /proc ---------------------------------------------------------------------------------


def proc_status_kib(pid: int, key: str) -> int:
    """A `kB` field of /proc/<pid>/status (VmRSS, VmHWM), 0 if the process is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        name, _, value = line.partition(":")
        if name == key:
            return int(value.split()[0])
    return 0


def mb(kib: int) -> float:
    return kib / 1024


def raise_open_files(needed: int) -> tuple[int, int]:
    """Lifts the soft limit on open files towards the hard one; the server inherits it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft, hard


# --- subscribers ---------------------------------------------------------------------------


class Tracker:
    """Counts the subscribers whose figure reached the current target; set when all have."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.target: int | None = None
        self.reached = 0
        self.done = asyncio.Event()

    def aim(self, target: int, subscribers: list[Subscriber]) -> None:
        self.target = target
        self.reached = sum(1 for s in subscribers if s.best >= target)
        self.done.clear()
        if self.reached >= self.total:
            self.done.set()

    def progress(self, old: int, new: int) -> None:
        target = self.target
        if target is not None and old < target <= new:
            self.reached += 1
            if self.reached >= self.total:
                self.done.set()


class Subscriber:
    """One socket, one queueBacklog subscription; keeps the arrival time of each new count."""

    def __init__(self, index: int, tracker: Tracker) -> None:
        self.index = index
        self.tracker = tracker
        self.connection: ClientConnection | None = None
        self.reader: asyncio.Task[None] | None = None
        self.best = -1
        # Counts strictly increasing, and when each first arrived (perf_counter).
        self.counts: list[int] = []
        self.times: list[float] = []
        self.messages = 0
        self.resyncs = 0
        self.regressions = 0
        self.problem: str | None = None

    async def open(self, url: str, token: str, *, compression: bool) -> None:
        connection = await connect(
            url,
            subprotocols=[PROTOCOL],
            compression="deflate" if compression else None,
            proxy=None,
            open_timeout=OPEN_SECONDS,
            # A browser sends no protocol pings; uvicorn pings every socket every 20 s.
            ping_interval=None,
        )
        self.connection = connection
        init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
        await connection.send(json.dumps(init))
        ack = json.loads(await asyncio.wait_for(connection.recv(), OPEN_SECONDS))
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"subscriber {self.index}: connection_init answered {ack}")
        payload = {"query": BACKLOG, "variables": {"q": benchlib.QUEUE}}
        await connection.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        # The snapshot: read here, so the socket counts as subscribed only once it has it.
        while self.best < 0:
            raw = await asyncio.wait_for(connection.recv(), OPEN_SECONDS)
            await self._handle(raw, time.perf_counter())
            if self.problem:
                raise RuntimeError(f"subscriber {self.index}: {self.problem}")
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.connection is not None
        try:
            async for raw in self.connection:
                await self._handle(raw, time.perf_counter())
        except websockets.ConnectionClosed:
            pass
        if self.problem is None:
            code, reason = self.connection.close_code, self.connection.close_reason
            self.problem = f"socket closed: {code} {reason}"

    async def _handle(self, raw: str | bytes, arrived: float) -> None:
        message = json.loads(raw)
        kind = message.get("type")
        if kind == "ping":
            assert self.connection is not None
            await self.connection.send('{"type":"pong"}')
            return
        if kind != "next" or message.get("payload", {}).get("errors"):
            self.problem = f"unexpected message {message}"
            return
        figures = message["payload"]["data"]["queueBacklog"]
        self.messages += 1
        self.resyncs += bool(figures["resync"])
        pending: int = figures["pending"]
        if pending > self.best:
            old, self.best = self.best, pending
            self.counts.append(pending)
            self.times.append(arrived)
            self.tracker.progress(old, pending)
        elif pending < self.best:
            self.regressions += 1

    def arrival(self, count: int) -> float | None:
        """When the first figure of at least `count` pending arrived."""
        at = bisect.bisect_left(self.counts, count)
        return self.times[at] if at < len(self.times) else None

    async def close(self) -> None:
        if self.connection is not None:
            await self.connection.close()
        if self.reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader


async def in_batches(items: list[T], size: int, action: Callable[[T], Awaitable[None]]) -> None:
    for start in range(0, len(items), size):
        await asyncio.gather(*(action(item) for item in items[start : start + size]))


# --- the server process --------------------------------------------------------------------


def ws_implementation(choice: str) -> str:
    if choice != "auto":
        return choice
    from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol

    module = getattr(AutoWebSocketsProtocol, "__module__", "") or ""
    return "auto: " + module.rpartition(".")[2].removesuffix("_impl").replace("_", "-")


async def healthz(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/healthz", timeout=5.0)).json()
    return body


async def wait_subscribers(client: httpx.AsyncClient, count: int, seconds: float) -> int:
    """Polls /healthz until it reports `count` subscribers, bounded; returns the last figure."""
    seen = -1
    for _ in range(max(1, int(seconds / POLL_SECONDS))):
        seen = (await healthz(client))["subscribers"]
        if seen == count:
            break
        await asyncio.sleep(POLL_SECONDS)
    return seen


# --- database connections ------------------------------------------------------------------

ACTIVITY = """
SELECT usename, coalesce(application_name, '') AS application, coalesce(state, '') AS state,
       CASE WHEN query LIKE 'LISTEN %' OR query = ANY ($2::text[]) THEN 'listener'
            ELSE 'pool' END AS kind,
       count(*) AS backends
FROM pg_stat_activity
WHERE datname = $1 AND pid <> pg_backend_pid()
  AND coalesce(application_name, '') NOT LIKE $3
GROUP BY 1, 2, 3, 4
ORDER BY 4, 1, 3
"""


LISTENERS = """
SELECT pid, backend_start, query
FROM pg_stat_activity
WHERE datname = $1 AND (query LIKE 'LISTEN %' OR query = ANY ($2::text[]))
  AND coalesce(application_name, '') NOT LIKE $3
ORDER BY pid
"""


@dataclass(frozen=True)
class Activity:
    rows: list[tuple[str, str, str, str, int]]
    # pid, start time and last statement of each backend classed as the listener.
    listener_backends: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(row[4] for row in self.rows)

    @property
    def listeners(self) -> int:
        return sum(row[4] for row in self.rows if row[3] == "listener")

    @property
    def pool(self) -> int:
        return sum(row[4] for row in self.rows if row[3] == "pool")


async def activity(owner: asyncpg.Connection, database: str) -> Activity:
    arguments = (database, list(LISTENER_QUERIES), BENCH_APPLICATION + "%")
    rows = await owner.fetch(ACTIVITY, *arguments)
    listeners = await owner.fetch(LISTENERS, *arguments)
    return Activity(
        [(r["usename"], r["application"], r["state"], r["kind"], int(r["backends"])) for r in rows],
        [
            f"pid {r['pid']} since {r['backend_start']:%H:%M:%S.%f}, last statement {r['query']!r}"
            for r in listeners
        ],
    )


class PeakSampler:
    """The most server backends seen at once, sampled every SAMPLE_SECONDS."""

    def __init__(self, owner: asyncpg.Connection, database: str) -> None:
        self._owner = owner
        self._database = database
        self.peak = Activity([])
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            seen = await activity(self._owner, self._database)
            if seen.total > self.peak.total:
                self.peak = seen
            await asyncio.sleep(SAMPLE_SECONDS)

    def __enter__(self) -> PeakSampler:
        self._task = asyncio.create_task(self._run())
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()


def print_activity(title: str, seen: Activity) -> None:
    print(f"  {title}: {seen.total} backends ({seen.listeners} listener, {seen.pool} pool)")
    for user, application, state, kind, backends in seen.rows:
        print(
            f"    {user:<14} app={application or '-':<6} {state or '-':<20} {kind:<9} {backends:>3}"
        )
    for backend in seen.listener_backends:
        print(f"    listener: {backend}")


# --- measurement ---------------------------------------------------------------------------


@dataclass
class Round:
    target: int
    before: float  # just before the enqueue call
    committed: float  # when it returned, after the commit
    complete: bool
    server_cpu: float
    client_cpu: float
    latencies: list[float] = field(default_factory=list)

    @property
    def all_ms(self) -> float:
        return 1000 * max(self.latencies) if self.complete else float("inf")

    @property
    def first_ms(self) -> float:
        return 1000 * min(self.latencies) if self.latencies else float("inf")


def fill_latencies(rounds: list[Round], subscribers: list[Subscriber]) -> None:
    for r in rounds:
        r.latencies = [
            at - r.committed for s in subscribers if (at := s.arrival(r.target)) is not None
        ]


def stats(values: list[float]) -> str:
    ordered = sorted(values)
    p50, p90, p99 = (benchlib.percentile(ordered, f) for f in (0.5, 0.9, 0.99))
    return (
        f"p50 {p50:7.1f}  p90 {p90:7.1f}  p99 {p99:7.1f}  max {ordered[-1]:7.1f}"
        f"  mean {sum(ordered) / len(ordered):7.1f}"
    )


class Changes:
    """Commits one new item per call, through the domain, as an integration."""

    def __init__(self, db: Database, rng: random.Random) -> None:
        self._db = db
        self._rng = rng
        self.made = 0

    async def commit(self) -> tuple[float, float]:
        self.made += 1
        item = benchlib.new_item(f"fanout-{self.made:05d}", self._rng)
        before = time.perf_counter()
        benchlib.check(
            await enqueue_items(self._db, benchlib.INTEGRATION, benchlib.QUEUE, [item]),
            "enqueue",
        )
        return before, time.perf_counter()


async def spaced_rounds(
    config: Config,
    server: benchlib.Server,
    subscribers: list[Subscriber],
    tracker: Tracker,
    changes: Changes,
    base: int,
    rng: random.Random,
    owner: asyncpg.Connection,
    database: str,
    machine: Machine,
) -> list[Round]:
    rounds: list[Round] = []
    busy, steal = machine_cpu()
    server_start, client_start = process_cpu(server.pid), self_cpu()
    backends = {pid: process_cpu(pid) for pid in await backend_pids(owner, database)}
    started = time.perf_counter()
    for number in range(config.rounds):
        target = base + number + 1
        tracker.aim(target, subscribers)
        server_cpu, client_cpu = process_cpu(server.pid), self_cpu()
        before, committed = await changes.commit()
        complete = True
        try:
            await asyncio.wait_for(tracker.done.wait(), config.settle_timeout)
        except TimeoutError:
            complete = False
        rounds.append(
            Round(
                target,
                before,
                committed,
                complete,
                process_cpu(server.pid) - server_cpu,
                self_cpu() - client_cpu,
            )
        )
        if not complete:
            print(
                f"  round {number + 1}: only {tracker.reached} of {len(subscribers)} had "
                f"pending {target} after {config.settle_timeout} s",
                flush=True,
            )
            if sum(not r.complete for r in rounds) >= MAX_INCOMPLETE_ROUNDS:
                print(f"  stopping after {MAX_INCOMPLETE_ROUNDS} incomplete rounds", flush=True)
                break
        # The feed's 250 ms window opened before the first arrival of this round.
        await asyncio.sleep(config.gap + rng.uniform(0, JITTER_SECONDS))
    elapsed = time.perf_counter() - started
    busy_after, steal_after = machine_cpu()
    machine.busy = (busy_after - busy) / elapsed
    machine.steal = (steal_after - steal) / elapsed
    machine.server = (process_cpu(server.pid) - server_start) / elapsed
    machine.client = (self_cpu() - client_start) / elapsed
    after = await backend_pids(owner, database)
    machine.postgres = sum(process_cpu(pid) - backends.get(pid, 0.0) for pid in after) / elapsed
    fill_latencies(rounds, subscribers)
    return rounds


async def steady_stream(
    config: Config,
    subscribers: list[Subscriber],
    tracker: Tracker,
    changes: Changes,
    base: int,
) -> list[Round]:
    """Changes every --stream-interval seconds, whatever phase the 250 ms window is in."""
    rounds: list[Round] = []
    start = time.perf_counter()
    for number in range(config.stream_changes):
        await asyncio.sleep(max(0.0, start + number * config.stream_interval - time.perf_counter()))
        before, committed = await changes.commit()
        rounds.append(Round(base + number + 1, before, committed, True, 0.0, 0.0))
    tracker.aim(base + config.stream_changes, subscribers)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(tracker.done.wait(), config.settle_timeout)
    fill_latencies(rounds, subscribers)
    for r in rounds:
        r.complete = len(r.latencies) == len(subscribers)
    await asyncio.sleep(config.gap)
    return rounds


async def mint_tokens(config: Config, database: str) -> list[str]:
    owner_pool = await create_pool(
        with_application(benchlib.owner_dsn(config.server, database), "tokens"),
        min_size=1,
        max_size=4,
    )
    try:
        owner_db = Database(owner_pool, benchlib.load_queries())

        async def one(index: int) -> str:
            return await create_token(
                owner_db, user=f"console-{index:04d}", role=Role.REVIEWER, queues=[benchlib.QUEUE]
            )

        tokens: list[str] = []
        for start in range(0, config.tokens, 100):
            indexes = range(start, min(config.tokens, start + 100))
            tokens += await asyncio.gather(*(one(index) for index in indexes))
        return tokens
    finally:
        await owner_pool.close()


def with_application(dsn: str, name: str) -> str:
    """Tags the bench's own connections, so pg_stat_activity can leave them out."""
    parts = urlsplit(dsn)
    tag = f"application_name={BENCH_APPLICATION}_{name}"
    return urlunsplit(parts._replace(query=f"{parts.query}&{tag}" if parts.query else tag))


@dataclass
class Machine:
    """Cores busy on average (all processes) and stolen by the hypervisor, over the rounds."""

    busy: float = 0.0
    steal: float = 0.0
    server: float = 0.0
    client: float = 0.0
    postgres: float = 0.0  # the backends connected to the test database


@dataclass
class Report:
    rss_start: int = 0
    rss_before: int = 0
    rss_subscribed: int = 0
    rss_end: int = 0
    rss_left: int = 0
    hwm: int = 0
    connect_seconds: float = 0.0
    extensions: str = ""
    healthz_subscribed: int = 0
    healthz_after: dict[str, Any] = field(default_factory=dict)
    healthz_left: int = 0
    before: Activity = field(default_factory=lambda: Activity([]))
    subscribed: Activity = field(default_factory=lambda: Activity([]))
    end: Activity = field(default_factory=lambda: Activity([]))
    peak: Activity = field(default_factory=lambda: Activity([]))
    rounds: list[Round] = field(default_factory=list)
    machine: Machine = field(default_factory=Machine)
    stream: list[Round] = field(default_factory=list)
    messages: int = 0
    resyncs: int = 0
    regressions: int = 0
    problems: list[str] = field(default_factory=list)
    server_log: str = ""


async def measure(config: Config, database: str, tokens: list[str], report: Report) -> None:
    rng = random.Random(config.seed)
    owner = await asyncpg.connect(
        with_application(benchlib.owner_dsn(config.server, database), "owner")
    )
    sampler_connection = await asyncpg.connect(
        with_application(benchlib.owner_dsn(config.server, database), "sampler")
    )
    pool = await create_pool(
        with_application(benchlib.app_dsn(config.server, database), "changes"),
        min_size=1,
        max_size=1,
    )
    changes = Changes(Database(pool, benchlib.load_queries()), rng)
    tracker = Tracker(config.subscribers)
    subscribers = [Subscriber(index, tracker) for index in range(config.subscribers)]
    try:
        async with (
            benchlib.uvicorn_server(
                benchlib.app_dsn(config.server, database),
                pool_min=config.pool_min,
                pool_max=config.pool_max,
                env={"CASEWORK_EVENTS_TRANSPORT": "postgres"},
                ws=config.ws,
            ) as server,
            httpx.AsyncClient(base_url=server.base_url, trust_env=False) as http,
        ):
            print(f"  server pid {server.pid} at {server.base_url}", flush=True)
            report.rss_start = proc_status_kib(server.pid, "VmRSS")
            # Warm-up: one subscriber comes and goes, so first-use costs (imports, caches)
            # are not charged to the 1,000.
            warm = Subscriber(-1, Tracker(1))
            await warm.open(server.ws_url, tokens[0], compression=config.compression)
            assert warm.connection is not None
            assert warm.connection.response is not None
            report.extensions = warm.connection.response.headers.get(
                "Sec-WebSocket-Extensions", "none"
            )
            await warm.close()
            await wait_subscribers(http, 0, LEAVE_SECONDS)
            await asyncio.sleep(1.0)
            report.rss_before = proc_status_kib(server.pid, "VmRSS")
            report.before = await activity(owner, database)

            with PeakSampler(sampler_connection, database) as sampler:
                started = time.perf_counter()
                await in_batches(
                    subscribers,
                    config.batch,
                    lambda s: s.open(
                        server.ws_url,
                        tokens[s.index % len(tokens)],
                        compression=config.compression,
                    ),
                )
                report.connect_seconds = time.perf_counter() - started
                report.healthz_subscribed = await wait_subscribers(
                    http, config.subscribers, LEAVE_SECONDS
                )
                await asyncio.sleep(1.0)
                report.rss_subscribed = proc_status_kib(server.pid, "VmRSS")
                report.subscribed = await activity(owner, database)
                counts = {s.best for s in subscribers}
                print(
                    f"  {config.subscribers} subscribed in {report.connect_seconds:.1f} s, each "
                    f"with its snapshot (pending {sorted(counts)}); /healthz subscribers "
                    f"{report.healthz_subscribed}",
                    flush=True,
                )
                if len(counts) != 1:
                    raise RuntimeError(f"the snapshots disagree: {sorted(counts)}")
                base = counts.pop()

                report.rounds = await spaced_rounds(
                    config,
                    server,
                    subscribers,
                    tracker,
                    changes,
                    base,
                    rng,
                    owner,
                    database,
                    report.machine,
                )
                print(f"  {len(report.rounds)} spaced rounds done", flush=True)
                base += changes.made
                if config.stream_changes:
                    report.stream = await steady_stream(config, subscribers, tracker, changes, base)
                    print(f"  {len(report.stream)} streamed changes done", flush=True)
                report.rss_end = proc_status_kib(server.pid, "VmRSS")
                report.end = await activity(owner, database)
                report.healthz_after = await healthz(http)
            report.peak = sampler.peak

            report.messages = sum(s.messages for s in subscribers)
            report.resyncs = sum(s.resyncs for s in subscribers)
            report.regressions = sum(s.regressions for s in subscribers)
            report.problems = [f"{s.index}: {s.problem}" for s in subscribers if s.problem]
            await in_batches(subscribers, config.batch, lambda s: s.close())
            report.healthz_left = await wait_subscribers(http, 0, LEAVE_SECONDS)
            await asyncio.sleep(1.0)
            report.rss_left = proc_status_kib(server.pid, "VmRSS")
            report.hwm = proc_status_kib(server.pid, "VmHWM")
            report.server_log = server.log_tail()
    finally:
        for s in subscribers:
            if s.connection is not None:
                s.connection.transport.abort()
        await pool.close()
        await sampler_connection.close()
        await owner.close()


# --- report --------------------------------------------------------------------------------


def met(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def print_report(config: Config, report: Report) -> None:
    n = config.subscribers
    print()
    print(f"Server RSS (VmRSS of the uvicorn process), MB; ws extensions: {report.extensions}")
    growth = mb(report.rss_subscribed - report.rss_before)
    rows = [
        ("just started", report.rss_start),
        ("before the subscribers (one warm-up subscriber came and went)", report.rss_before),
        (f"{n} subscribed, each with its first snapshot", report.rss_subscribed),
        ("end of the rounds, still subscribed", report.rss_end),
        ("all gone again", report.rss_left),
        ("peak (VmHWM)", report.hwm),
    ]
    for label, value in rows:
        print(f"  {label:<64} {mb(value):7.1f}")
    print(
        f"  growth for {n} subscribers: {growth:.1f} MB ({1024 * growth / n:.0f} kB each); "
        f"to the end of the rounds: {mb(report.rss_end - report.rss_before):.1f} MB"
    )
    end_growth = mb(report.rss_end - report.rss_before)
    verdicts = (met(growth <= RSS_TARGET_MB), met(end_growth <= RSS_TARGET_MB))
    print(
        f"  target RSS growth <= {RSS_TARGET_MB:.0f} MB for {n}: once subscribed {verdicts[0]}; "
        f"at the end of the rounds {verdicts[1]}"
    )

    rounds = report.rounds
    complete = [r for r in rounds if r.complete]
    print()
    print(
        f"Latency from commit to all {n} having the new figure, ms ({len(rounds)} rounds, "
        f"{len(complete)} complete; each {config.gap:.2f}-{config.gap + JITTER_SECONDS:.2f} s "
        f"after the previous round's last arrival)"
    )
    p99 = float("inf")
    if rounds:
        all_ms = [r.all_ms for r in rounds]
        p99 = benchlib.percentile(sorted(all_ms), 0.99)
        print(f"  all {n} have it     {stats(all_ms)}")
        print(f"  all {n}, each round in order:")
        for start in range(0, len(all_ms), 10):
            print("    " + " ".join(f"{value:6.0f}" for value in all_ms[start : start + 10]))
        print(f"  first subscriber   {stats([r.first_ms for r in rounds])}")
        pooled = [1000 * v for r in rounds for v in r.latencies]
        print(f"  per subscriber     {stats(pooled)}   ({len(pooled)} arrivals)")
        enqueue = [1000 * (r.committed - r.before) for r in rounds]
        print(f"  enqueue_items call {stats(enqueue)}   (before the commit time; not counted)")
        server_ms = 1000 * sum(r.server_cpu for r in rounds) / len(rounds)
        client_ms = 1000 * sum(r.client_cpu for r in rounds) / len(rounds)
        print(
            f"  CPU per round (commit to all {n}): server {server_ms:.0f} ms "
            f"({1000 * server_ms / n:.0f} us per subscriber), this bench process "
            f"{client_ms:.0f} ms"
        )
        m = report.machine
        print(
            f"  cores busy over the rounds (gaps included): {m.busy:.2f} of {os.cpu_count()} "
            f"(server {m.server:.2f}, bench {m.client:.2f}, PostgreSQL {m.postgres:.2f}, "
            f"anything else {m.busy - m.server - m.client - m.postgres:.2f}); steal "
            f"{m.steal:.2f}"
        )
        print(f"  target p99 <= {LATENCY_TARGET_MS:.0f} ms: {met(p99 <= LATENCY_TARGET_MS)}")
    if report.stream:
        stream = report.stream
        print()
        print(
            f"Not the target's measure: a steady stream of {len(stream)} changes every "
            f"{1000 * config.stream_interval:.0f} ms, so changes land anywhere in the "
            f"{1000 * BACKLOG_INTERVAL_SECONDS:.0f} ms window"
        )
        print(f"  all {n} have it     {stats([r.all_ms for r in stream])}")
        print(f"  first subscriber   {stats([r.first_ms for r in stream])}")

    print()
    print("Database connections of the server (pg_stat_activity; the bench's own left out)")
    print_activity("before the subscribers", report.before)
    print_activity(f"{n} subscribed", report.subscribed)
    print_activity("end of the rounds", report.end)
    print_activity("peak, sampled every 0.1 s while subscribing and during the rounds", report.peak)
    listener = report.healthz_after.get("listener", {})
    print(
        f"  /healthz at the end: listener connected {listener.get('connected')}, "
        f"reconnects {listener.get('reconnects')}, subscribers "
        f"{report.healthz_after.get('subscribers')}; after all left: {report.healthz_left}"
    )
    one = all(a.listeners == 1 for a in (report.before, report.subscribed, report.end))
    print(
        f"  listener connections: {report.before.listeners} before, "
        f"{report.subscribed.listeners} with {n} subscribers, {report.end.listeners} at the "
        f"end; pool connections {report.before.pool} -> {report.subscribed.pool} -> "
        f"{report.end.pool} (max {config.pool_max}, shared with every query)"
    )
    print(f"  target one listener connection per process, however many subscribers: {met(one)}")

    print()
    print(
        f"Messages received {report.messages}, resync figures {report.resyncs}, counts that "
        f"went backwards {report.regressions}, sockets with a problem {len(report.problems)}"
    )
    for problem in report.problems[:5]:
        print(f"  {problem}")
    log = report.server_log.strip()
    if log:
        print("Server log (tail):")
        print("\n".join("  " + line for line in log.splitlines()[-20:]))
    print()
    print_summary(config, report)


def quantiles(values: list[float], fractions: tuple[float, ...]) -> str:
    """p50 / p99 (say) of values in ms, "-" when there are none."""
    if not values:
        return "-"
    ordered = sorted(values)
    return " / ".join(f"{benchlib.percentile(ordered, f):.1f}" for f in fractions)


def print_summary(config: Config, report: Report) -> None:
    """The table of docs/benchmarks.md: the figures the targets are read from."""
    n, rounds, stream = config.subscribers, report.rounds, report.stream
    growth = mb(report.rss_subscribed - report.rss_before)
    end_growth = mb(report.rss_end - report.rss_before)
    all_ms = [r.all_ms for r in rounds]
    p99 = benchlib.percentile(sorted(all_ms), 0.99) if rounds else float("inf")
    server_ms = 1000 * sum(r.server_cpu for r in rounds) / len(rounds) if rounds else float("nan")
    activities = (report.before, report.subscribed, report.end)
    one = all(a.listeners == 1 for a in activities)
    benchlib.print_table(
        ["figure", "value", "target"],
        [
            [
                f"commit -> all {n}, spaced rounds: p50 / p90 / p99 / max, ms",
                f"{quantiles(all_ms, (0.5, 0.9, 0.99))} / {max(all_ms, default=float('nan')):.1f}",
                f"p99 <= {LATENCY_TARGET_MS:.0f} ms: {met(p99 <= LATENCY_TARGET_MS)}",
            ],
            [
                "commit -> first subscriber: p50 / p99, ms",
                quantiles([r.first_ms for r in rounds], (0.5, 0.99)),
                "-",
            ],
            [
                "commit -> each subscriber: p50 / p99, ms",
                quantiles([1000 * v for r in rounds for v in r.latencies], (0.5, 0.99)),
                "-",
            ],
            [
                f"steady stream, a change every {1000 * config.stream_interval:.0f} ms: "
                f"commit -> all {n}, p50 / p99, ms",
                quantiles([r.all_ms for r in stream], (0.5, 0.99)),
                f"none (the {1000 * BACKLOG_INTERVAL_SECONDS:.0f} ms window adds to it)",
            ],
            [
                "server CPU per round, ms (per subscriber, us)",
                f"{server_ms:.0f} ({1000 * server_ms / n:.0f})",
                "-",
            ],
            [
                f"RSS growth for {n} subscribers, MB (per subscriber, kB)",
                f"{growth:.1f} ({1024 * growth / n:.0f})",
                f"<= {RSS_TARGET_MB:.0f} MB: {met(growth <= RSS_TARGET_MB)}",
            ],
            [
                "RSS growth at the end of the rounds, MB",
                f"{end_growth:.1f}",
                f"<= {RSS_TARGET_MB:.0f} MB: {met(end_growth <= RSS_TARGET_MB)}",
            ],
            [
                "listener connections: before / subscribed / end",
                " / ".join(str(a.listeners) for a in activities),
                f"1: {met(one)}",
            ],
            [
                "pool connections: before / subscribed / end",
                " / ".join(str(a.pool) for a in activities),
                f"<= {config.pool_max} (CASEWORK_POOL_MAX)",
            ],
            [
                "messages; resyncs; counts gone backwards; sockets with a problem",
                f"{report.messages}; {report.resyncs}; {report.regressions}; "
                f"{len(report.problems)}",
                "0 problems",
            ],
        ],
    )


async def main(config: Config) -> None:
    soft, hard = raise_open_files(2 * config.subscribers + 256)
    started = time.perf_counter()
    print(
        f"fanout_bench: {config.subscribers} subscribers to queueBacklog on one uvicorn process "
        f"(--ws {ws_implementation(config.ws)}, client permessage-deflate "
        f"{'offered' if config.compression else 'off'}), pool {config.pool_min}-"
        f"{config.pool_max}, {config.tokens} token(s); {config.rounds} rounds; "
        f"{os.cpu_count()} CPUs; open files {soft} (hard {hard})",
        flush=True,
    )
    database = benchlib.new_name("fanout")
    report = Report()
    try:
        await benchlib.create_migrated(config.server, database)
        app_pool = await create_pool(
            with_application(benchlib.app_dsn(config.server, database), "seed"),
            min_size=1,
            max_size=1,
        )
        try:
            await benchlib.seed_queue(Database(app_pool, benchlib.load_queries()))
        finally:
            await app_pool.close()
        tokens = await mint_tokens(config, database)
        await measure(config, database, tokens, report)
    finally:
        await benchlib.drop_database(config.server, database)
    print_report(config, report)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50, help="sockets opened concurrently")
    parser.add_argument("--rounds", type=int, default=50, help="spaced changes, timed")
    parser.add_argument(
        "--gap",
        type=float,
        default=0.35,
        help="seconds from a round's last arrival to the next commit, plus up to 0.1 s of "
        "jitter; more than the 0.25 s coalescing window",
    )
    parser.add_argument(
        "--settle-timeout", type=float, default=10.0, help="seconds a round may take"
    )
    parser.add_argument(
        "--stream-changes", type=int, default=40, help="changes of the steady stream; 0: none"
    )
    parser.add_argument("--stream-interval", type=float, default=0.1)
    parser.add_argument(
        "--tokens",
        type=int,
        default=None,
        help="distinct reviewer tokens, shared round-robin (default: one per subscriber)",
    )
    parser.add_argument(
        "--no-compression",
        action="store_true",
        help="do not offer permessage-deflate (browsers offer it)",
    )
    parser.add_argument(
        "--ws",
        default="auto",
        choices=["auto", "websockets", "websockets-sansio", "wsproto"],
        help="uvicorn's websocket implementation",
    )
    parser.add_argument("--pool-min", type=int, default=2, help="the service's default: 2")
    parser.add_argument("--pool-max", type=int, default=20, help="the service's default: 20")
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args(argv)
    if args.subscribers < 1 or args.batch < 1 or args.rounds < 1:
        parser.error("--subscribers, --batch and --rounds must be positive")
    if args.gap <= BACKLOG_INTERVAL_SECONDS:
        parser.error(f"--gap must exceed the {BACKLOG_INTERVAL_SECONDS} s coalescing window")
    tokens = args.subscribers if args.tokens is None else args.tokens
    if not 1 <= tokens <= args.subscribers:
        parser.error("--tokens must be between 1 and --subscribers")
    return Config(
        server=benchlib.require_local(args.database_url),
        subscribers=args.subscribers,
        batch=args.batch,
        rounds=args.rounds,
        gap=args.gap,
        settle_timeout=args.settle_timeout,
        stream_changes=args.stream_changes,
        stream_interval=args.stream_interval,
        tokens=tokens,
        compression=not args.no_compression,
        ws=args.ws,
        pool_min=args.pool_min,
        pool_max=args.pool_max,
        seed=args.seed,
    )


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
