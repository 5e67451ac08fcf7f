"""Sizing one primary: claim+decide cycles per second and their p99, against 1, 2 and 4 API
processes, with hints by NOTIFY and by the Redis transport, in one interleaved run.

Each cell is a transport (`notify`: the default, every write NOTIFYs at commit; `redis`:
CASEWORK_EVENTS_TRANSPORT=redis, no NOTIFY, each hint published to Redis after commit) and a
number of serving processes (`casework serve --no-worker --workers N`, one port, the kernel
spreading the clients' connections). A cell runs on a fresh clone of one seeded template
database (queue `bench`, one reviewer token per client). --clients keep-alive HTTP/1.1
clients (bench/http1.py) each do a few untimed warm-up cycles, then share --cycles timed
cycles: claimNext then submitDecision, as bench/claim_bench.py's GraphQL path. Each timed
cycle's wall time (claim sent to decision answered) gives p50 and p99.

The cells run --rounds times; each round starts one cell further along the list, so a drift
of this shared machine touches every cell alike; rounds are pooled (cycles over seconds,
latencies together). Decision rows are counted against cycles after each cell. CPU of the
serving processes and of the database's backends per cycle, and the machine's busy cores,
come from /proc around each timed window (bench/benchlib.py).

    .venv/bin/python bench/sizing_bench.py [--processes 1 2 4] [--transports notify redis]
        [--clients 16] [--cycles 1500] [--rounds 2] [--redis-url redis://127.0.0.1:6379/0]

Redis must be listening at --redis-url (the redis transport's cells need it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from dataclasses import dataclass, field

import asyncpg
import benchlib
import claim_bench
import redis.asyncio as aioredis
from http1 import KeepAliveConnection

CHANNEL = "casework-sizing-bench"


@dataclass(frozen=True)
class Config:
    server: str
    processes: list[int]
    transports: list[str]
    clients: int
    cycles: int
    warmup: int
    rounds: int
    redis_url: str

    @property
    def cells(self) -> list[tuple[str, int]]:
        return [(transport, n) for n in self.processes for transport in self.transports]

    @property
    def items(self) -> int:
        return self.cycles + self.warmup * self.clients + 10


@dataclass
class Cell:
    """One cell's runs, pooled."""

    runs: list[benchlib.Measurement] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    @property
    def total(self) -> benchlib.Measurement:
        return benchlib.sum_runs(self.runs)

    def latency_ms(self, fraction: float) -> float:
        return 1000 * benchlib.percentile(sorted(self.latencies), fraction)


def transport_env(config: Config, transport: str) -> dict[str, str]:
    if transport == "notify":
        return {}
    return {
        "CASEWORK_EVENTS_TRANSPORT": "redis",
        "CASEWORK_REDIS_URL": config.redis_url,
        "CASEWORK_REDIS_CHANNEL": CHANNEL,
    }


def timed_worker(
    connections: list[KeepAliveConnection], tokens: list[str], latencies: list[float]
) -> benchlib.Worker:
    """claim_bench's GraphQL cycle, each timed cycle's wall time noted."""
    cycle = claim_bench.graphql_worker(connections, tokens)

    async def work(index: int, tickets: benchlib.Tickets | None, count: int) -> int:
        if tickets is None:
            return await cycle(index, None, count)
        done = 0
        while tickets.take():
            started = time.perf_counter()
            done += await cycle(index, None, 1)
            latencies.append(time.perf_counter() - started)
        return done

    return work


async def run_cell(
    config: Config, template: str, tokens: list[str], transport: str, processes: int, cell: Cell
) -> None:
    name = benchlib.new_name(f"sizing{transport}{processes}")
    await benchlib.create_database(config.server, name, template=template)
    owner = await asyncpg.connect(benchlib.owner_dsn(config.server, name))
    latencies: list[float] = []
    try:
        async with (
            benchlib.casework_serve_server(
                benchlib.app_dsn(config.server, name),
                workers=processes,
                pool_min=-(-config.clients // processes),
                pool_max=config.clients,
                env=transport_env(config, transport),
            ) as server,
            contextlib.AsyncExitStack() as stack,
        ):
            cpu = benchlib.CpuWindow(owner, name, server.pid)
            host, port = server.base_url.removeprefix("http://").split(":")
            connections = [
                await stack.enter_async_context(KeepAliveConnection(host, int(port)))
                for _ in range(config.clients)
            ]
            warmed, done, elapsed, used = await benchlib.drive(
                timed_worker(connections, tokens, latencies),
                config.clients,
                config.cycles,
                config.warmup,
                cpu,
            )
        decisions = await claim_bench.count_decisions(owner)
    finally:
        await owner.close()
        await benchlib.drop_database(config.server, name)
    result = benchlib.Measurement(done, elapsed, warmed, decisions, used)
    cell.runs.append(result)
    cell.latencies += latencies
    expected = warmed + done
    verdict = "ok" if decisions == expected else "MISMATCH"
    print(
        f"  {transport:<6} x{processes}: {done} cycles in {elapsed:.2f} s = {result.rate:.0f}/s, "
        f"p99 {1000 * benchlib.percentile(sorted(latencies), 0.99):.1f} ms; decision rows "
        f"{decisions} (expected {expected}): {verdict}",
        flush=True,
    )


def report(config: Config, cells: dict[tuple[str, int], Cell]) -> None:
    """A row per process count: each transport's rate and p99 side by side, the ratio of
    Redis to NOTIFY, and each rate against the same transport with one process."""
    headers = ["processes"]
    for transport in config.transports:
        headers += [f"{transport} cycles/s", f"{transport} p50 ms", f"{transport} p99 ms"]
        headers.append(f"{transport} /x{config.processes[0]}")
    if len(config.transports) == 2:
        headers.append(f"{config.transports[1]}/{config.transports[0]}")
    for transport in config.transports:
        headers += [f"{transport} server ms", f"{transport} postgres ms", f"{transport} machine"]
    rows = []
    for n in config.processes:
        row = [str(n)]
        for transport in config.transports:
            cell = cells[(transport, n)]
            base = cells[(transport, config.processes[0])].total.rate
            row += [
                f"{cell.total.rate:.0f}",
                f"{cell.latency_ms(0.50):.1f}",
                f"{cell.latency_ms(0.99):.1f}",
                f"{cell.total.rate / base:.2f}",
            ]
        if len(config.transports) == 2:
            first, second = (cells[(t, n)].total.rate for t in config.transports)
            row.append(f"{second / first:.2f}")
        for transport in config.transports:
            total = cells[(transport, n)].total
            cpu = total.cpu_cells(has_server=True)
            row += [cpu[1], cpu[2], cpu[4]]
        rows.append(row)
    print()
    benchlib.print_table(
        headers,
        rows,
        title=f"claim+decide cycles per second and latency, {config.clients} clients, pooled "
        f"over {config.rounds} round(s) per cell; CPU ms per cycle of the serving processes and "
        f"of PostgreSQL's backends; machine: cores busy on average (of {os.cpu_count()})",
    )


async def check_redis(url: str) -> None:
    client = aioredis.from_url(url)
    try:
        await client.ping()
    except Exception as error:
        raise SystemExit(f"sizing_bench: no Redis at {url} ({error}); start one") from error
    finally:
        await client.aclose()


async def main(config: Config) -> None:
    if "redis" in config.transports:
        await check_redis(config.redis_url)
    started = time.perf_counter()
    print(
        f"sizing_bench: cells {config.cells}, {config.clients} clients, {config.cycles} timed "
        f"cycles per cell after {config.warmup} warm-up cycles per client, {config.rounds} "
        f"round(s); {os.cpu_count()} CPUs",
        flush=True,
    )
    template = benchlib.new_name("sizingtemplate")
    seeding = claim_bench.Config(
        server=config.server,
        concurrency=[config.clients],
        items=config.items,
        cycles=config.cycles,
        warmup=config.warmup,
        repeats=1,
        hints="notify",
        redis_url=config.redis_url,
        server_workers=[],
    )
    cells = {key: Cell() for key in config.cells}
    try:
        tokens = await claim_bench.build_template(seeding, template)
        order = config.cells
        for round_ in range(config.rounds):
            print(f"round {round_ + 1}", flush=True)
            shift = round_ % len(order)
            for transport, n in order[shift:] + order[:shift]:
                await run_cell(config, template, tokens, transport, n, cells[(transport, n)])
    finally:
        await benchlib.drop_database(config.server, template)
    report(config, cells)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--transports", nargs="+", choices=["notify", "redis"], default=["notify", "redis"]
    )
    parser.add_argument("--clients", type=int, default=16, help="keep-alive HTTP clients")
    parser.add_argument("--cycles", type=int, default=1500, help="timed cycles per cell")
    parser.add_argument("--warmup", type=int, default=3, help="untimed cycles per client")
    parser.add_argument("--rounds", type=int, default=2, help="runs of every cell, pooled")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args(argv)
    if min(args.processes) < 1 or args.clients < 1 or args.cycles < 1 or args.rounds < 1:
        parser.error("--processes, --clients, --cycles and --rounds must be positive")
    return Config(
        server=benchlib.require_local(args.database_url),
        processes=args.processes,
        transports=list(dict.fromkeys(args.transports)),
        clients=args.clients,
        cycles=args.cycles,
        warmup=args.warmup,
        rounds=args.rounds,
        redis_url=args.redis_url,
    )


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
