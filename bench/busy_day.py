"""A busy day on one machine: how many reviewers at a human pace one PostgreSQL and
`casework serve --workers 2` (with its apply worker) hold, with everyone else on at once.

Real processes: a local PostgreSQL (a scratch database), `casework serve --no-migrate
--workers 2` (both serving processes also carry decisions out, as a plain `serve` does), a
no-op webhook receiver (bench/apply_bench.py's, its own process) that the queue's effect
posts every decision to, and a process of idle consoles (bench/busy_day_idle.py; the set-up
and the CPU readings are in bench/busy_day_setup.py, the table and the plot in
bench/busy_day_figures.py). In this process, on one event loop (bench/busy_day_load.py):

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
import os
import random
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import benchlib
from apply_bench import receiver_process
from busy_day_figures import HEADERS, Config, Step, judge, load_average, report, row, write_png
from busy_day_load import Integration, Manager, Pace, Recorder, Reviewer
from busy_day_setup import Cores, Tokens, idle_consoles, prepare, serve_processes

DELIVERY_SQL = """
SELECT extract(epoch FROM coalesce(p.applied_at, clock_timestamp()) - d.decided_at)::float8
         AS lag,
       p.applied_at IS NOT NULL AS applied
FROM review_decisions AS d
LEFT JOIN applied_decisions AS p ON p.decision_id = d.id
WHERE d.decided_at >= $1 AND d.decided_at < $2
"""


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
