"""A busy day on one machine: how many reviewers at a human pace one PostgreSQL and
`casework serve --workers 2` (with its apply worker) hold, with everyone else on at once.

Real processes: a local PostgreSQL (a scratch database), `casework serve --no-migrate
--workers 2` (both serving processes also carry decisions out, as a plain `serve` does), a
no-op webhook receiver (bench/apply_bench.py's, its own process) that the queue's effect
posts every decision to, and a process of idle consoles (bench/busy_day_idle.py). In this
process, on one event loop (bench/busy_day_load.py):

- R reviewers, each with a keep-alive HTTP connection and the console's socket
  (queueBacklog, and itemUpdates of the open item): claim, read for 20-60 s (a note now
  and then, a renewal now and then), decide, or now and then release; the console's own
  documents, read from server/console/static/js/operations.js;
- --managers managers reading the queue's manager page (QUEUE_STATS and QUEUE_MEASURES)
  every --manager-interval seconds;
- an integration enqueueing once a second what the reviewers decide meanwhile, and
  following the decisionEvents stream;
- --idle-consoles sockets, each following queueBacklog and leaseEvents of the queue.

Human pace is slow: --time-scale divides the reviewers' think times (a scale of 10 makes
a reviewer's 20-60 s 2-6 s), so R reviewers at scale s send the requests of s x R reviewers
at a human pace (but hold R sockets, not s x R: the idle consoles dwarf them). The managers,
the idle consoles and the integration's pace (what the reviewers decide) are not scaled.
The scale, and R x scale, are printed with the figures.

R starts at --start and grows by --step (reviewers already working go on working). Each
step warms up for --warmup seconds, then measures for long enough that an average reviewer
decides --decisions-per-step times; it prints a markdown table row: decisions per second,
each operation's p50 / p99, the decision stream's lag, the delivery lag (review_decisions.
decided_at to applied_decisions.applied_at, the database's clock, decisions of the window),
and the CPU of each process (cores: CPU seconds over the window's seconds). It stops after
the first step whose claim or decide p99 passes --latency-limit-ms or whose slowest
delivery passes --lag-limit seconds, or at --max; it prints the largest R that held and
writes --png (latency against R). Nothing here asserts on time.

    .venv/bin/python bench/busy_day.py [--time-scale 10] [--start 10] [--step 10]
        [--idle-consoles 5000] [--managers 50] [--png docs/busy-day.png]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import benchlib
from apply_bench import SIGNING_SECRET, receiver_process
from busy_day_load import (
    DOCUMENTS,
    LEASE_EVENTS,
    Integration,
    Manager,
    Pace,
    Recorder,
    Reviewer,
)

from server.domain.identity.tokens import create_token
from server.domain.model import EffectKind, Role
from server.domain.review.queues import Effect, QueueSettings, configure_queue
from server.store.database import Database, create_pool

IDLE_SCRIPT = Path(__file__).resolve().parent / "busy_day_idle.py"
OPERATIONS = ["claim", "decide", "renew", "note", "release", "dashboard", "enqueue"]
DELIVERY_SQL = """
SELECT extract(epoch FROM coalesce(p.applied_at, clock_timestamp()) - d.decided_at)::float8
         AS lag,
       p.applied_at IS NOT NULL AS applied
FROM review_decisions AS d
LEFT JOIN applied_decisions AS p ON p.decision_id = d.id
WHERE d.decided_at >= $1 AND d.decided_at < $2
"""


@dataclass(frozen=True)
class Config:
    server: str
    start: int
    step: int
    most: int
    idle: int
    idle_tokens: int
    managers: int
    pace: Pace
    decisions_per_step: float
    warmup: float
    backlog: int
    workers: int
    latency_limit_ms: float
    lag_limit: float
    png: str | None
    seed: int
    keep_going: bool = False

    @property
    def measure_seconds(self) -> float:
        return self.decisions_per_step * self.pace.mean_think

    def decisions_per_second(self, reviewers: int) -> float:
        return reviewers * (1 - self.pace.release_share) / self.pace.mean_think


@dataclass
class Step:
    reviewers: int
    seconds: float = 0.0
    decisions: int = 0
    samples: dict[str, list[float]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    delivery: list[float] = field(default_factory=list)
    cores: dict[str, float] = field(default_factory=dict)
    load: float = 0.0
    replaced: int = 0
    why_not: str = ""

    def ms(self, operation: str, fraction: float) -> float:
        values = sorted(self.samples.get(operation, []))
        return 1000 * benchlib.percentile(values, fraction)

    def cell(self, operation: str) -> str:
        if not self.samples.get(operation):
            return "-"
        return f"{self.ms(operation, 0.5):.0f} / {self.ms(operation, 0.99):.0f}"


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


# --- set-up --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tokens:
    reviewers: list[str]
    managers: list[str]
    idle: list[str]
    integration: str


async def prepare(config: Config, database: str, hook_url: str) -> Tokens:
    """Queue `bench` with a signed webhook to the receiver, --backlog items, the tokens."""
    await benchlib.create_migrated(config.server, database)
    queries = benchlib.load_queries()
    app_pool = await create_pool(benchlib.app_dsn(config.server, database), min_size=1, max_size=2)
    owner_pool = await create_pool(
        benchlib.owner_dsn(config.server, database), min_size=1, max_size=1
    )
    try:
        db = Database(app_pool, queries)
        await benchlib.seed_queue(db)
        settings = QueueSettings(
            benchlib.QUEUE,
            lease_ttl_seconds=600,
            effect=Effect(EffectKind.WEBHOOK, hook_url, SIGNING_SECRET),
            effect_timeout_seconds=10,
        )
        benchlib.check(await configure_queue(db, benchlib.ADMIN, settings), "effect")
        rng = random.Random(config.seed)
        await benchlib.enqueue(db, [f"item-{n:07d}" for n in range(config.backlog)], rng)
        owner = Database(owner_pool, queries)

        async def mint(user: str, role: Role) -> str:
            return await create_token(owner, user=user, role=role, queues=[benchlib.QUEUE])

        tokens = Tokens(
            reviewers=[await mint(f"reviewer-{n:04d}", Role.REVIEWER) for n in range(config.most)],
            managers=[await mint(f"manager-{n:03d}", Role.MANAGER) for n in range(config.managers)],
            idle=[await mint(f"idle-{n:03d}", Role.REVIEWER) for n in range(config.idle_tokens)],
            integration=await mint("integration", Role.INTEGRATION),
        )
        async with owner_pool.acquire() as conn:
            await conn.execute("VACUUM ANALYZE")
        return tokens
    finally:
        await app_pool.close()
        await owner_pool.close()


class IdleConsoles:
    """The process of bench/busy_day_idle.py, driven over its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def call(self, body: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write((json.dumps(body) + "\n").encode())
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError("the idle consoles' process ended early")
        answer: dict[str, Any] = json.loads(line)
        return answer


@contextlib.asynccontextmanager
async def idle_consoles(config: Config, url: str, tokens: list[str]) -> AsyncIterator[IdleConsoles]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(IDLE_SCRIPT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=16 * 1024 * 1024,
    )
    idle = IdleConsoles(process)
    try:
        ready = await idle.call(
            {
                "url": url,
                "tokens": tokens,
                "queue": benchlib.QUEUE,
                "count": config.idle,
                "batch": 100,
                "backlog": DOCUMENTS["QUEUE_BACKLOG"],
                "leases": LEASE_EVENTS,
            }
        )
        print(f"  {ready['ready']} idle consoles subscribed in {ready['seconds']:.1f} s")
        yield idle
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


def serve_processes(pid: int) -> dict[str, int]:
    """`casework serve`'s processes by role: the parent (uvicorn's supervisor), the
    serving processes it spawned, and multiprocessing's resource tracker."""
    named = {"supervisor": pid}
    for child in benchlib.process_tree(pid)[1:]:
        command = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"resource_tracker" in command:
            named["tracker"] = child
        else:
            named[f"serving {sum(name.startswith('serving') for name in named) + 1}"] = child
    return named


# --- CPU per process -----------------------------------------------------------------------


def run_queue_wait(pid: int) -> float:
    """Seconds the process's main thread (a serving process's event loop) has waited,
    runnable, for a core (schedstat(5)'s second field): what it wanted and did not get."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class Cores:
    """CPU seconds of each process over a window, as cores (seconds over the window)."""

    def __init__(self, owner: asyncpg.Connection, database: str, named: dict[str, int]) -> None:
        self._owner = owner
        self._database = database
        self._named = named
        self._start: dict[str, float] = {}
        self._backends: dict[int, float] = {}
        self._machine = (0.0, 0.0)
        self._at = 0.0

    def _own(self) -> dict[str, float]:
        values = {name: benchlib.process_cpu(pid) for name, pid in self._named.items()}
        waits = {f"wait {name}": run_queue_wait(pid) for name, pid in self._named.items()}
        return values | waits | {"bench": benchlib.self_cpu()}

    async def start(self) -> None:
        pids = await benchlib.backend_pids(self._owner, self._database)
        self._backends = {pid: benchlib.process_cpu(pid) for pid in pids}
        self._start, self._machine, self._at = self._own(), benchlib.machine_cpu(), time.time()

    async def stop(self) -> dict[str, float]:
        own, (busy, steal), seconds = self._own(), benchlib.machine_cpu(), time.time() - self._at
        pids = await benchlib.backend_pids(self._owner, self._database)
        postgres = sum(benchlib.process_cpu(pid) - self._backends.get(pid, 0.0) for pid in pids)
        cores = {name: (own[name] - self._start[name]) / seconds for name in own}
        cores["postgres"] = postgres / seconds
        cores["machine"] = (busy - self._machine[0]) / seconds
        cores["steal"] = (steal - self._machine[1]) / seconds
        return cores


# --- the steps -----------------------------------------------------------------------------


HEADERS = [
    "R",
    "R x scale",
    "decisions/s",
    *(f"{operation} p50 / p99 ms" for operation in OPERATIONS),
    "decision stream p50 / p99 ms",
    "delivery lag p50 / p99 / max ms",
    "serving processes' cores",
    "supervisor cores",
    "serving processes' run-queue wait s/s",
    "postgres cores",
    "bench cores",
    "idle consoles cores",
    "receiver cores",
    "machine",
    "load",
    "held",
]


def row(step: Step, serving: list[str], scale: float) -> list[str]:
    delivery = sorted(step.delivery)
    lag = (
        " / ".join(
            f"{1000 * value:.0f}"
            for value in (
                benchlib.percentile(delivery, 0.5),
                benchlib.percentile(delivery, 0.99),
                delivery[-1],
            )
        )
        if delivery
        else "-"
    )
    return [
        str(step.reviewers),
        f"{step.reviewers * scale:g}",
        f"{step.decisions / step.seconds:.1f}",
        *(step.cell(operation) for operation in OPERATIONS),
        step.cell("decision stream"),
        lag,
        " + ".join(f"{step.cores[name]:.2f}" for name in serving if name.startswith("serving")),
        f"{sum(step.cores[name] for name in serving if not name.startswith('serving')):.2f}",
        " + ".join(
            f"{step.cores[f'wait {name}']:.2f}" for name in serving if name.startswith("serving")
        ),
        f"{step.cores['postgres']:.2f}",
        f"{step.cores['bench']:.2f}",
        f"{step.cores['idle']:.2f}",
        f"{step.cores['receiver']:.2f}",
        f"{step.cores['machine']:.2f}",
        f"{step.load:.1f}",
        "yes" if not step.why_not else f"no: {step.why_not}",
    ]


async def delivery_lags(
    owner: asyncpg.Connection, since: datetime, until: datetime, limit: float
) -> list[float]:
    """Each window decision's delivery lag, waiting (bounded) for the last ones: an
    undelivered decision counts with its age so far once that passes the limit."""
    while True:
        rows = await owner.fetch(DELIVERY_SQL, since, until)
        waiting = [r["lag"] for r in rows if not r["applied"]]
        if not waiting or max(waiting) > limit:
            return [r["lag"] for r in rows]
        await asyncio.sleep(0.2)


def replaced_processes(server: benchlib.Server) -> int:
    """Serving processes uvicorn's supervisor found dead (or not answering its health check
    within 5 s) and replaced, so far: their connections and sockets were dropped."""
    return server.log_tail(10**8).count("Child process [")


def judge(config: Config, step: Step) -> str:
    reasons = [
        f"{operation} p99 {step.ms(operation, 0.99):.0f} ms"
        for operation in ("claim", "decide")
        if step.ms(operation, 0.99) > config.latency_limit_ms
    ]
    if step.delivery and max(step.delivery) > config.lag_limit:
        reasons.append(f"a delivery lagged {max(step.delivery):.1f} s")
    if step.replaced:
        reasons.append(f"{step.replaced} serving process(es) replaced")
    if not step.samples.get("claim") or not step.samples.get("decide"):
        reasons.append("no claims or decisions measured")
    return "; ".join(reasons)


async def run_steps(
    config: Config,
    server: benchlib.Server,
    tokens: Tokens,
    owner: asyncpg.Connection,
    cores: Cores,
    serving: list[str],
) -> list[Step]:
    recorder = Recorder()
    rng = random.Random(config.seed)
    host, port = server.base_url.removeprefix("http://").split(":")
    address = (host, int(port))
    tasks: list[asyncio.Task[None]] = []
    steps: list[Step] = []

    def stopped(task: asyncio.Task[None]) -> None:
        # A person whose task ended by an error is counted and named, not lost.
        if not task.cancelled() and task.exception() is not None:
            recorder.count("people stopped", repr(task.exception()))

    def spawn(work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        task.add_done_callback(stopped)
        tasks.append(task)

    integration = Integration(tokens.integration, address, recorder, rng)
    managers = [
        Manager(token, address, recorder, random.Random(rng.random())) for token in tokens.managers
    ]
    reviewers: list[Reviewer] = []
    try:
        await integration.follow(server.ws_url)
        spawn(integration.run(server.ws_url))
        for manager in managers:
            spawn(manager.run(config.pace))
        replaced = replaced_processes(server)
        for size in range(config.start, config.most + 1, config.step):
            while len(reviewers) < size:
                reviewer = Reviewer(
                    tokens.reviewers[len(reviewers)], address, recorder, random.Random(rng.random())
                )
                reviewers.append(reviewer)
                spawn(reviewer.run(server.ws_url, config.pace))
            integration.rate = config.decisions_per_second(size)
            await asyncio.sleep(config.warmup)
            step = Step(size)
            recorder.reset()
            decided = sum(r.decided for r in reviewers)
            since = await owner.fetchval("SELECT clock_timestamp()")
            await cores.start()
            started = time.perf_counter()
            await asyncio.sleep(config.measure_seconds)
            step.cores = await cores.stop()
            step.seconds = time.perf_counter() - started
            until = await owner.fetchval("SELECT clock_timestamp()")
            step.decisions = sum(r.decided for r in reviewers) - decided
            # Copies: the lists go on growing until the next window's reset.
            step.samples = {name: list(values) for name, values in recorder.samples.items()}
            step.counts = dict(recorder.counts)
            step.load = load_average()
            step.delivery = await delivery_lags(owner, since, until, config.lag_limit)
            # Since the last step's end: a process replaced during a warm-up counts too.
            step.replaced, replaced = (
                replaced_processes(server) - replaced,
                replaced_processes(server),
            )
            step.why_not = judge(config, step)
            steps.append(step)
            print("| " + " | ".join(row(step, serving, config.pace.scale)) + " |", flush=True)
            if step.counts:
                print(f"  counts: {step.counts}", flush=True)
            if step.why_not and not config.keep_going:
                break
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for person in [integration, *managers, *reviewers]:
            await person.hang_up()
        for socket in [r.socket for r in reviewers] + [integration.socket]:
            if socket is not None:
                await socket.close()
    return steps


# --- the report ----------------------------------------------------------------------------


def report(config: Config, steps: list[Step], serving: list[str]) -> None:
    failed = next((n for n, step in enumerate(steps) if step.why_not), len(steps))
    held = steps[:failed]
    print()
    benchlib.print_table(
        HEADERS,
        [row(step, serving, config.pace.scale) for step in steps],
        title=f"time scale {config.pace.scale:g} (think times {config.pace.think_low:g}-"
        f"{config.pace.think_high:g} s / {config.pace.scale:g}; managers every "
        f"{config.pace.manager_interval:g} s); {config.idle} idle "
        f"consoles, {config.managers} managers; cores: CPU seconds over the window's seconds "
        "(supervisor: serve's parent and its resource tracker)",
    )
    largest = held[-1].reviewers if held else 0
    print(
        f"\nlargest R that held: {largest} reviewers at time scale {config.pace.scale:g}, "
        f"R x scale = {largest * config.pace.scale:g} reviewers' requests at a human pace ("
        f"{held[-1].decisions / held[-1].seconds if held else 0:.1f} decisions/s)"
    )
    last = steps[min(failed, len(steps) - 1)] if steps else None
    if last is not None:
        busiest = sorted(
            (
                (name, value)
                for name, value in last.cores.items()
                if name not in ("machine", "steal") and not name.startswith("wait")
            ),
            key=lambda pair: -pair[1],
        )
        print(
            f"at R = {last.reviewers}: {last.why_not or 'held'}; busiest: "
            + ", ".join(f"{name} {value:.2f}" for name, value in busiest[:4])
            + "; serving processes waited "
            + " + ".join(
                f"{value:.2f}"
                for name, value in last.cores.items()
                if name.startswith("wait serving")
            )
            + " s/s for a core"
            + f"; machine {last.cores['machine']:.2f} of {os.cpu_count()} cores busy, "
            f"steal {last.cores['steal']:.2f}"
        )


def write_png(config: Config, steps: list[Step], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 4.5))
    sizes = [step.reviewers for step in steps]
    for operation, colour in (("claim", "tab:blue"), ("decide", "tab:green")):
        for fraction, style in ((0.99, "o-"), (0.5, "o--")):
            axes.plot(
                sizes,
                [step.ms(operation, fraction) for step in steps],
                style,
                color=colour,
                label=f"{operation} p{round(100 * fraction)}",
            )
    for fraction, style in ((0.99, "s-"), (0.5, "s--")):
        axes.plot(
            sizes,
            [1000 * benchlib.percentile(sorted(s.delivery), fraction) for s in steps],
            style,
            color="tab:red",
            label=f"delivery lag p{round(100 * fraction)}",
        )
    axes.axhline(config.latency_limit_ms, color="grey", linestyle=":", label="claim/decide limit")
    axes.axhline(1000 * config.lag_limit, color="tab:red", linestyle=":", label="lag limit")
    axes.set_yscale("log")
    axes.set_xlabel(
        f"reviewers R at time scale {config.pace.scale:g} (x {config.pace.scale:g}: "
        "reviewers at a human pace)"
    )
    axes.set_ylabel("ms")
    loads = [step.load for step in steps]
    axes.set_title(
        f"A busy day: serve --workers 2, {config.idle} idle consoles, {config.managers} "
        f"managers\n2 shared cores, load average {min(loads):.1f} to {max(loads):.1f}",
        fontsize=10,
    )
    axes.legend(fontsize=7, ncol=2)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


async def main(config: Config) -> None:
    started = time.perf_counter()
    print(
        f"busy_day: time scale {config.pace.scale:g}, R from {config.start} by {config.step} "
        f"to {config.most}, {config.idle} idle consoles, {config.managers} managers every "
        f"{config.pace.manager_interval:g} s, warm-up {config.warmup:.1f} s and "
        f"{config.measure_seconds:.1f} s measured per step; {os.cpu_count()} CPUs, load "
        f"average {load_average():.2f}",
        flush=True,
    )
    database = benchlib.new_name("busyday")
    steps: list[Step] = []
    serving: list[str] = []
    try:
        async with receiver_process() as receiver:
            tokens = await prepare(config, database, receiver.url)
            owner = await asyncpg.connect(benchlib.owner_dsn(config.server, database))
            try:
                async with (
                    benchlib.casework_serve_server(
                        benchlib.app_dsn(config.server, database),
                        workers=config.workers,
                        pool_min=2,
                        pool_max=20,
                        env={},
                        apply_worker=True,
                    ) as server,
                    idle_consoles(config, server.ws_url, tokens.idle) as idle,
                ):
                    named = serve_processes(server.pid)
                    serving = list(named)
                    named |= {"idle": idle.process.pid, "receiver": receiver.pid}
                    print("| " + " | ".join(HEADERS) + " |")
                    print("|" + "---|" * len(HEADERS), flush=True)
                    steps = await run_steps(
                        config, server, tokens, owner, Cores(owner, database, named), serving
                    )
                    print(f"  idle consoles: {await idle.call({})}")
                failed = await owner.fetchval(
                    "SELECT count(*) FROM decision_applications WHERE state = 'failed'"
                )
                print(f"  failed applications: {failed}")
            finally:
                await owner.close()
    finally:
        await benchlib.drop_database(config.server, database)
    if steps:
        report(config, steps, serving)
        if config.png:
            write_png(config, steps, Path(config.png))
            print(f"\nwrote {config.png}")
    print(f"total time {time.perf_counter() - started:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server (default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--time-scale", type=float, default=10.0, help="think times divided by it")
    parser.add_argument("--start", type=int, default=10, help="reviewers in the first step")
    parser.add_argument("--step", type=int, default=10, help="reviewers added per step")
    parser.add_argument("--max", type=int, default=300, help="reviewers at most")
    parser.add_argument("--idle-consoles", type=int, default=5000)
    parser.add_argument("--idle-tokens", type=int, default=50, help="shared by the idle consoles")
    parser.add_argument("--managers", type=int, default=50)
    parser.add_argument("--manager-interval", type=float, default=10.0, help="seconds, human pace")
    parser.add_argument(
        "--think",
        type=float,
        nargs=2,
        default=[20.0, 60.0],
        metavar=("LOW", "HIGH"),
        help="seconds per item at a human pace",
    )
    parser.add_argument(
        "--decisions-per-step",
        type=float,
        default=4.0,
        help="the measured window: this many think times of an average reviewer",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="seconds before each window (default: the longest think time)",
    )
    parser.add_argument("--backlog", type=int, default=3000, help="items waiting at the start")
    parser.add_argument("--workers", type=int, default=2, help="casework serve --workers")
    parser.add_argument("--latency-limit-ms", type=float, default=250.0)
    parser.add_argument("--lag-limit", type=float, default=5.0, help="seconds")
    parser.add_argument("--png", default=None, help="write the plot here (docs/busy-day.png)")
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="measure every step up to --max, past the first that failed (the largest R "
        "that held is still the one before it)",
    )
    args = parser.parse_args(argv)
    if min(args.start, args.step, args.max, args.workers) < 1 or args.time_scale <= 0:
        parser.error("--start, --step, --max, --workers and --time-scale must be positive")
    pace = Pace(args.think[0], args.think[1], args.time_scale, args.manager_interval)
    return Config(
        server=benchlib.require_local(args.database_url),
        start=args.start,
        step=args.step,
        most=args.max,
        idle=args.idle_consoles,
        idle_tokens=max(1, args.idle_tokens),
        managers=args.managers,
        pace=pace,
        decisions_per_step=args.decisions_per_step,
        warmup=args.think[1] / args.time_scale if args.warmup is None else args.warmup,
        backlog=args.backlog,
        workers=args.workers,
        latency_limit_ms=args.latency_limit_ms,
        lag_limit=args.lag_limit,
        png=args.png,
        seed=args.seed,
        keep_going=args.keep_going,
    )


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
