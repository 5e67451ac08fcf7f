"""Consoles on one server process, multiplexed or not: latency, RSS per socket, connections.

For each --sizes N and each mode (subscriptions shared, CASEWORK_MULTIPLEX_SUBSCRIPTIONS=1;
and each on its own, =0) one uvicorn process serves bench/app_factory.py on a scratch
database with --queues queues (`q00` ...). N consoles connect: N graphql-transport-ws
sockets, spread evenly over the queues, each with a reviewer token of its queue
(--tokens-per-queue of them, shared round-robin) and two subscriptions, as the console
has: `queueBacklog(queue)` and `leaseEvents(queue)`. The sockets are opened by --clients
client processes (this file with --client), so that the client's own work is spread
over processes as the server's is not; their clock (CLOCK_MONOTONIC) is the same.

Then --rounds rounds, --gap seconds apart, each in the next queue in turn: one item is
claimed through the domain (`claim_next`, the real statement and its NOTIFY), and the
commit time is taken when the call returns. A socket has the change once it has the
CLAIMED lease event of that item and a backlog figure with the new `leased` count; a
round's latency is the commit to the last socket of that queue having it.

Around it: the server's VmRSS (before the consoles, once all have their first snapshot),
growth per socket, and pg_stat_activity (the listener connection: one, whatever N).
Prints both modes side by side per N and writes --png: delivery latency p50/p99 against N.

    .venv/bin/python bench/multiplex_bench.py [--sizes 100 1000 3000 10000] [--png PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import benchlib
import httpx
import websockets
from fanout_bench import (
    Activity,
    activity,
    proc_status_kib,
    raise_open_files,
    wait_subscribers,
    with_application,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from server.domain.identity.tokens import create_token
from server.domain.model import Claim, Principal, Role
from server.domain.review.items import enqueue_items
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings, configure_queue
from server.lean_websocket import IMPORT_STRING as LEAN_WS
from server.store.database import Database, create_pool

PROTOCOL = Subprotocol("graphql-transport-ws")
# The console's documents (server/console sends these two per queue).
BACKLOG = (
    "subscription($q:String!){ queueBacklog(queue:$q){ "
    "queue pending leased oldestPendingAgeSeconds resync } }"
)
LEASES = "subscription($q:String!){ leaseEvents(queue:$q){ kind queue itemId owner } }"
OPEN_SECONDS = 60.0
LATENCY_TARGET_MS = 250.0
RSS_TARGET_KB = 40.0
ADMIN = Principal("bench-admin", Role.ADMIN, frozenset())
INTEGRATION = Principal("bench-integration", Role.INTEGRATION, frozenset())


def queue_name(index: int) -> str:
    return f"q{index:02d}"


# --- the client processes ------------------------------------------------------------------


class Console:
    """One socket with the two subscriptions; notes when each change first reached it."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.connection: ClientConnection | None = None
        self.leased: list[tuple[int, float]] = []
        self.claimed: dict[str, float] = {}
        self.snapshot = asyncio.Event()
        self.problem: str | None = None

    async def open(self, url: str, token: str) -> None:
        connection = await connect(
            url,
            subprotocols=[PROTOCOL],
            compression=None,
            proxy=None,
            open_timeout=OPEN_SECONDS,
            ping_interval=None,
        )
        self.connection = connection
        init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
        await connection.send(json.dumps(init))
        ack = json.loads(await asyncio.wait_for(connection.recv(), OPEN_SECONDS))
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"connection_init answered {ack}")
        for operation, query in (("l", LEASES), ("b", BACKLOG)):
            payload = {"query": query, "variables": {"q": self.queue}}
            await connection.send(
                json.dumps({"id": operation, "type": "subscribe", "payload": payload})
            )
        asyncio.get_running_loop().create_task(self._read())
        await asyncio.wait_for(self.snapshot.wait(), OPEN_SECONDS)

    async def _read(self) -> None:
        assert self.connection is not None
        try:
            async for raw in self.connection:
                arrived = time.perf_counter()
                message = json.loads(raw)
                if message.get("type") != "next" or message["payload"].get("errors"):
                    if message.get("type") == "ping":
                        await self.connection.send('{"type":"pong"}')
                        continue
                    self.problem = self.problem or f"unexpected {message}"
                    continue
                data = message["payload"]["data"]
                if message["id"] == "b":
                    leased = data["queueBacklog"]["leased"]
                    if not self.leased or leased > self.leased[-1][0]:
                        self.leased.append((leased, arrived))
                    self.snapshot.set()
                else:
                    event = data["leaseEvents"]
                    if event["kind"] == "CLAIMED":
                        self.claimed.setdefault(event["itemId"], arrived)
        except websockets.ConnectionClosed:
            pass

    def arrival(self, item_id: str, leased: int) -> float | None:
        claimed = self.claimed.get(item_id)
        figure = next((at for count, at in self.leased if count >= leased), None)
        if claimed is None or figure is None:
            return None
        return max(claimed, figure)


async def client_main() -> None:
    """--client: reads its orders as JSON lines on stdin, answers on stdout."""
    raise_open_files(65536)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def order() -> dict[str, Any]:
        line = await reader.readline()
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def answer(body: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(body) + "\n")
        sys.stdout.flush()

    start = await order()
    consoles = [Console(queue) for _, queue in start["consoles"]]
    batch = start["batch"]
    for first in range(0, len(consoles), batch):
        await asyncio.gather(
            *(
                c.open(start["url"], token)
                for c, (token, _) in zip(
                    consoles[first : first + batch],
                    start["consoles"][first : first + batch],
                    strict=True,
                )
            )
        )
    # The client's own collections would otherwise land in the rounds: with thousands of
    # connections a full one takes long enough to be mistaken for the server's latency.
    gc.collect()
    gc.freeze()
    gc.disable()
    answer({"ready": len(consoles)})
    report = await order()
    rounds = []
    for queue, item_id, leased in report["rounds"]:
        mine = [c for c in consoles if c.queue == queue]
        arrivals = [c.arrival(item_id, leased) for c in mine]
        rounds.append({"expected": len(mine), "arrivals": [a for a in arrivals if a is not None]})
    problems = [c.problem for c in consoles if c.problem]
    answer({"rounds": rounds, "problems": problems[:3], "problem_count": len(problems)})
    await order()
    for c in consoles:
        if c.connection is not None:
            c.connection.transport.abort()
    answer({"closed": True})


class Client:
    """A client process, driven through its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls) -> Client:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--client",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        return cls(process)

    async def send(self, body: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(body) + "\n").encode())
        await self.process.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError("a client process ended early")
        body: dict[str, Any] = json.loads(line)
        return body

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()


# --- one run: one size, one mode -----------------------------------------------------------


@dataclass
class Run:
    size: int
    shared: bool
    rss_before_kib: int = 0
    rss_subscribed_kib: int = 0
    connect_seconds: float = 0.0
    subscribers_seen: int = 0
    activity: Activity = field(default_factory=lambda: Activity([]))
    # Per round: milliseconds from commit to the last socket of its queue, inf if some
    # never had it.
    all_ms: list[float] = field(default_factory=list)
    per_socket_ms: list[float] = field(default_factory=list)
    problems: int = 0
    server_cpu_per_round_ms: float = 0.0

    @property
    def kb_per_socket(self) -> float:
        return (self.rss_subscribed_kib - self.rss_before_kib) / self.size


@dataclass
class Setup:
    server: str
    database: str
    queues: list[str]
    tokens: dict[str, list[str]]
    claims: dict[str, int] = field(default_factory=dict)


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_run(config: argparse.Namespace, setup: Setup, size: int, shared: bool) -> Run:
    run = Run(size, shared)
    consoles = [
        (setup.tokens[q][i // len(setup.queues) % len(setup.tokens[q])], q)
        for i in range(size)
        for q in [setup.queues[i % len(setup.queues)]]
    ]
    per_client = -(-size // config.clients)
    owner = await asyncpg.connect(
        with_application(benchlib.owner_dsn(setup.server, setup.database), "owner")
    )
    pool = await create_pool(
        with_application(benchlib.app_dsn(setup.server, setup.database), "changes"),
        min_size=1,
        max_size=1,
    )
    db = Database(pool, benchlib.load_queries())
    clients: list[Client] = []
    try:
        async with (
            benchlib.uvicorn_server(
                benchlib.app_dsn(setup.server, setup.database),
                pool_min=2,
                pool_max=20,
                env={
                    "CASEWORK_EVENTS_TRANSPORT": "postgres",
                    "CASEWORK_MULTIPLEX_SUBSCRIPTIONS": "1" if shared else "0",
                },
                ws=config.ws,
            ) as server,
            httpx.AsyncClient(base_url=server.base_url, trust_env=False) as http,
        ):
            # Warm-up: a few consoles come and go, so first-use costs are not charged.
            warm = await Client.start()
            await warm.send(
                {"url": server.ws_url, "batch": 10, "consoles": consoles[: len(setup.queues)]}
            )
            await warm.receive()
            await warm.send({"rounds": []})
            await warm.receive()
            await warm.send({})
            await warm.receive()
            await warm.stop()
            await wait_subscribers(http, 0, 30.0)
            await asyncio.sleep(1.0)
            run.rss_before_kib = proc_status_kib(server.pid, "VmRSS")

            clients = [await Client.start() for _ in range(config.clients)]
            started = time.perf_counter()
            for n, client in enumerate(clients):
                await client.send(
                    {
                        "url": server.ws_url,
                        "batch": config.batch,
                        "consoles": consoles[n * per_client : (n + 1) * per_client],
                    }
                )
            for client in clients:
                await client.receive()
            run.connect_seconds = time.perf_counter() - started
            run.subscribers_seen = await wait_subscribers(http, 2 * size, 30.0)
            await asyncio.sleep(1.0)
            run.rss_subscribed_kib = proc_status_kib(server.pid, "VmRSS")
            run.activity = await activity(owner, setup.database)

            rounds: list[tuple[str, str, int, float]] = []
            cpu_before = process_cpu(server.pid)
            for number in range(config.rounds):
                queue = setup.queues[number % len(setup.queues)]
                reviewer = Principal(f"bench-{queue}", Role.REVIEWER, frozenset({queue}))
                claim = await claim_next(db, reviewer, queue)
                committed = time.perf_counter()
                if not isinstance(claim, Claim):
                    raise RuntimeError(f"claim in {queue}: {claim}")
                setup.claims[queue] = setup.claims.get(queue, 0) + 1
                rounds.append((queue, str(claim.item.id), setup.claims[queue], committed))
                await asyncio.sleep(config.gap + random.uniform(0, 0.05))
            run.server_cpu_per_round_ms = (
                1000 * (process_cpu(server.pid) - cpu_before) / config.rounds
            )
            await asyncio.sleep(1.0)
            for client in clients:
                await client.send({"rounds": [r[:3] for r in rounds]})
            answers = [await client.receive() for client in clients]
            for number, (_, _, _, committed) in enumerate(rounds):
                expected = sum(a["rounds"][number]["expected"] for a in answers)
                arrivals = [t for a in answers for t in a["rounds"][number]["arrivals"]]
                latencies = [1000 * (t - committed) for t in arrivals]
                run.per_socket_ms += latencies
                complete = len(arrivals) == expected and latencies
                run.all_ms.append(max(latencies) if complete else float("inf"))
            slow = [
                line for line in server.log_tail(200_000).splitlines() if "gc generation" in line
            ]
            if slow:
                print(f"    server: {len(slow)} slow collections, e.g. {slow[-1][-60:]}")
            run.problems = sum(a["problem_count"] for a in answers)
            for a in answers:
                for problem in a["problems"]:
                    print(f"    client problem: {problem[:200]}", flush=True)
            for client in clients:
                await client.send({})
                await client.receive()
    finally:
        for client in clients:
            await client.stop()
        await pool.close()
        await owner.close()
    return run


async def prepare(config: argparse.Namespace, database: str) -> Setup:
    queues = [queue_name(i) for i in range(config.queues)]
    owner_pool = await create_pool(
        with_application(benchlib.owner_dsn(config.server, database), "seed"),
        min_size=1,
        max_size=4,
    )
    try:
        db = Database(owner_pool, benchlib.load_queries())
        rng = random.Random(config.seed)
        items = 2 * len(config.sizes) * (-(-config.rounds // config.queues)) + 2
        tokens: dict[str, list[str]] = {}
        for queue in queues:
            benchlib.check(
                await configure_queue(db, ADMIN, QueueSettings(queue, lease_ttl_seconds=3600)),
                "queue",
            )
            batch = [benchlib.new_item(f"{queue}-{n:03d}", rng) for n in range(items)]
            benchlib.check(await enqueue_items(db, INTEGRATION, queue, batch), "enqueue")
            tokens[queue] = list(
                await asyncio.gather(
                    *(
                        create_token(
                            db, user=f"{queue}-rev{n:02d}", role=Role.REVIEWER, queues=[queue]
                        )
                        for n in range(config.tokens_per_queue)
                    )
                )
            )
        return Setup(config.server, database, queues, tokens)
    finally:
        await owner_pool.close()


# --- report --------------------------------------------------------------------------------


def pct(values: list[float], fraction: float) -> float:
    return benchlib.percentile(sorted(values), fraction) if values else float("nan")


def print_pair(config: argparse.Namespace, unshared: Run, shared: Run) -> None:
    n = shared.size
    per_queue = n // config.queues
    print(f"\n{n} consoles ({per_queue} per queue, 2 subscriptions each), {config.rounds} rounds")
    print(f"  {'':<44} {'on its own':>12} {'multiplexed':>12}")
    pair = (unshared, shared)
    rows: list[tuple[str, list[str]]] = [
        ("connect, all with their snapshot (s)", [f"{r.connect_seconds:.1f}" for r in pair]),
        ("/healthz subscribers", [str(r.subscribers_seen) for r in pair]),
        ("commit -> all of the queue, p50 (ms)", [f"{pct(r.all_ms, 0.5):.1f}" for r in pair]),
        ("commit -> all of the queue, p99 (ms)", [f"{pct(r.all_ms, 0.99):.1f}" for r in pair]),
        ("per socket, p50 (ms)", [f"{pct(r.per_socket_ms, 0.5):.1f}" for r in pair]),
        ("server CPU per round (ms)", [f"{r.server_cpu_per_round_ms:.1f}" for r in pair]),
        ("server RSS before (MB)", [f"{r.rss_before_kib / 1024:.1f}" for r in pair]),
        ("server RSS subscribed (MB)", [f"{r.rss_subscribed_kib / 1024:.1f}" for r in pair]),
        ("RSS growth per socket (kB)", [f"{r.kb_per_socket:.1f}" for r in pair]),
        ("listener connections (pg_stat_activity)", [str(r.activity.listeners) for r in pair]),
        ("pool connections", [str(r.activity.pool) for r in pair]),
        ("sockets with a problem", [str(r.problems) for r in pair]),
    ]
    for label, (a, b) in rows:
        print(f"  {label:<44} {a:>12} {b:>12}")
    p99 = pct(shared.all_ms, 0.99)
    print(
        f"  multiplexed: p99 <= {LATENCY_TARGET_MS:.0f} ms "
        f"{'met' if p99 <= LATENCY_TARGET_MS else 'NOT MET'}; "
        f"RSS <= {RSS_TARGET_KB:.0f} kB per socket "
        f"{'met' if shared.kb_per_socket <= RSS_TARGET_KB else 'NOT MET'}; one listener "
        f"{'met' if shared.activity.listeners == 1 else 'NOT MET'}",
        flush=True,
    )


def print_summary(config: argparse.Namespace, runs: list[Run]) -> None:
    """The table of docs/benchmarks.md: a row per size and mode."""
    benchlib.print_table(
        [
            "consoles",
            "per queue",
            "mode",
            "commit -> all p50 ms",
            "p99 ms",
            "server CPU per round ms",
            "RSS per socket kB",
            "connect s",
            "listener / pool",
        ],
        [
            [
                f"{r.size:,}",
                str(r.size // config.queues),
                "multiplexed" if r.shared else "on its own",
                f"{pct(r.all_ms, 0.5):.1f}",
                f"{pct(r.all_ms, 0.99):.1f}",
                f"{r.server_cpu_per_round_ms:.1f}",
                f"{r.kb_per_socket:.1f}",
                f"{r.connect_seconds:.1f}",
                f"{r.activity.listeners} / {r.activity.pool}",
            ]
            for r in sorted(runs, key=lambda r: (r.size, r.shared))
        ],
        title=f"{config.rounds} rounds per run; commit -> all: the last console of the queue "
        "has the change",
    )


def write_png(path: Path, runs: list[Run]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for shared, colour in ((False, "tab:red"), (True, "tab:blue")):
        mine = sorted((r for r in runs if r.shared is shared), key=lambda r: r.size)
        sizes = [r.size for r in mine]
        label = "multiplexed" if shared else "each on its own"
        axes.plot(
            sizes, [pct(r.all_ms, 0.99) for r in mine], "o-", color=colour, label=f"{label}, p99"
        )
        axes.plot(
            sizes, [pct(r.all_ms, 0.5) for r in mine], "o--", color=colour, label=f"{label}, p50"
        )
    axes.axhline(LATENCY_TARGET_MS, color="grey", linestyle=":", label="target p99")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("consoles on one process (2 subscriptions each, over 50 queues)")
    axes.set_ylabel("commit -> all of the queue's consoles (ms)")
    axes.set_title("Fan-out latency against subscriber count", fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


async def main(config: argparse.Namespace) -> None:
    soft, hard = raise_open_files(max(config.sizes) + 1024)
    print(
        f"multiplex_bench: sizes {config.sizes}, --ws {config.ws}, {config.queues} queues, "
        f"{config.clients} "
        f"client processes, {config.rounds} rounds {config.gap} s apart; {os.cpu_count()} "
        f"CPUs; open files {soft} (hard {hard})",
        flush=True,
    )
    database = benchlib.new_name("multiplex")
    runs: list[Run] = []
    try:
        await benchlib.create_migrated(config.server, database)
        setup = await prepare(config, database)
        for size in config.sizes:
            pair = []
            for shared in (mode == "shared" for mode in config.modes):
                run = await one_run(config, setup, size, shared)
                print(
                    f"  {size} {'multiplexed' if shared else 'on its own'}: p99 "
                    f"{pct(run.all_ms, 0.99):.1f} ms, {run.kb_per_socket:.1f} kB/socket; "
                    f"rounds in order (ms):",
                    flush=True,
                )
                for start in range(0, len(run.all_ms), 20):
                    print("   " + "".join(f"{v:6.0f}" for v in run.all_ms[start : start + 20]))
                pair.append(run)
                runs.append(run)
            if len(pair) == 2:
                print_pair(config, pair[0], pair[1])
    finally:
        await benchlib.drop_database(config.server, database)
    if runs:
        print()
        print_summary(config, runs)
    if config.png and runs:
        write_png(Path(config.png), runs)
        print(f"\nwrote {config.png}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000, 10000])
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--tokens-per-queue", type=int, default=20)
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument("--batch", type=int, default=50, help="sockets opened at once, each")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.3, help="seconds between rounds")
    parser.add_argument("--png", default="docs/fanout-latency.png")
    parser.add_argument(
        "--ws",
        default=LEAN_WS,
        help=f"uvicorn's websocket implementation: auto (websockets-sansio), websockets, "
        f"wsproto, or {LEAN_WS} (what `casework serve` uses; the default)",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["alone", "shared"],
        choices=["alone", "shared"],
        help="alone: CASEWORK_MULTIPLEX_SUBSCRIPTIONS=0; shared: =1",
    )
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()
    args.server = benchlib.require_local(args.database_url)
    return args


if __name__ == "__main__":
    if sys.argv[1:] == ["--client"]:
        asyncio.run(client_main())
    else:
        benchlib.run(lambda: main(parse_args()))
