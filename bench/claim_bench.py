"""Claim+decide cycles per second: GraphQL over HTTP against raw SQL, side by side.

For each concurrency N and each path, a fresh clone of one seeded template database is
used (queue `bench`, --items pending items, one reviewer token per worker), so both paths
start from the same rows:

  graphql  N workers, each on its own HTTP/1.1 keep-alive connection (bench/http1.py, a
           client lean enough not to measure itself), drive a real uvicorn process
           (bench/app_factory.py, create_app(dsn, dev=False)) whose pool has N connections:
           claimNext, then submitDecision, per cycle.
  raw      N workers on an asyncpg pool of N connections as the application role (the
           service's create_pool, so the same JSON codecs) run the same named queries as the
           domain, with the same arguments: item_claim_next (and exceptions_escalate_overdue
           when it says overdue exceptions wait, as the domain does), then decision_submit.

Each worker first does a few untimed warm-up cycles; then the workers share a fixed budget
of timed cycles. Each cell is run --repeats times, alternating which path goes first, and
pooled (total cycles over total seconds). After each run the decision rows are counted
against the cycles done. CPU seconds of this process, the uvicorn process and the
database's PostgreSQL backends are read from /proc around the timed window, with the
machine's busy and stolen CPU, to show where the time goes: everything shares 2 cores.

    .venv/bin/python bench/claim_bench.py [--database-url URL] [--concurrency 1 8 32]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

import asyncpg
import benchlib
import redis.asyncio as aioredis
from http1 import KeepAliveConnection

from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.store import sql
from server.store.database import Database, create_pool
from server.store.queries import Queries

CLAIM = (
    "mutation($q:String!){ claimNext(queue:$q){ __typename "
    "... on Claim { leaseToken evidenceHash item { id } } } }"
)
DECIDE = "mutation($i:SubmitDecisionInput!){ submitDecision(input:$i){ __typename } }"

REDIS_CHANNEL = "casework-claim-bench"


@dataclass(frozen=True)
class Config:
    server: str
    concurrency: list[int]
    items: int
    cycles: int
    warmup: int
    repeats: int
    # "notify": hints by NOTIFY (the default service). "redis": the service's Redis
    # transport, and the raw path publishes each hint to Redis after its commit too.
    hints: str
    redis_url: str
    # --server-workers: the GraphQL path through `casework serve --workers N`, once per N,
    # instead of one uvicorn process.
    server_workers: list[int]

    @property
    def modes(self) -> list[str]:
        served = [serve_mode(n) for n in self.server_workers] or ["graphql"]
        return [*served, "raw"]


def serve_mode(workers: int) -> str:
    return f"serve-{workers}"


def workers_of(mode: str) -> int | None:
    return int(mode.removeprefix("serve-")) if mode.startswith("serve-") else None


# --- the two paths -------------------------------------------------------------------------


def graphql_worker(
    connections: list[KeepAliveConnection], tokens: list[str], *, by_id: bool = False
) -> benchlib.Worker:
    """claimNext then submitDecision per cycle; with `by_id`, each sent as its trusted
    document's id rather than its text."""

    async def work(index: int, tickets: benchlib.Tickets | None, count: int) -> int:
        token = tokens[index]
        client = connections[index]
        done = 0
        while tickets.take() if tickets else done < count:
            variables = {"q": benchlib.QUEUE}
            claim = (await benchlib.graphql_post(client, token, CLAIM, variables, by_id=by_id))[
                "claimNext"
            ]
            if claim["__typename"] != "Claim":
                raise RuntimeError(f"claim returned {claim}; is --items large enough?")
            decision = {
                "itemId": claim["item"]["id"],
                "leaseToken": claim["leaseToken"],
                "verdict": "APPROVE",
                "reasonCode": benchlib.REASON_CODE,
                "evidenceHash": claim["evidenceHash"],
            }
            answer = await benchlib.graphql_post(
                client, token, DECIDE, {"i": decision}, by_id=by_id
            )
            result = answer["submitDecision"]
            if result["__typename"] != "DecisionRecorded":
                raise RuntimeError(f"decision returned {result}")
            done += 1
        return done

    return work


def raw_worker(
    pool: asyncpg.Pool, queries: Queries, redis: aioredis.Redis | None
) -> benchlib.Worker:
    # The statements and names the domain uses; bound here as Database binds them.
    escalate = queries.statement(sql.exceptions.EXCEPTIONS_ESCALATE_OVERDUE.name)
    claim = queries.statement(sql.items.ITEM_CLAIM_NEXT.name)
    decide = queries.statement(sql.decisions.DECISION_SUBMIT.name)

    async def publish(row: asyncpg.Record) -> None:
        # What the service does with the Redis transport: publish the hint after commit.
        if redis is not None:
            await redis.publish(REDIS_CHANNEL, row["notification"])

    async def work(index: int, tickets: benchlib.Tickets | None, count: int) -> int:
        user = reviewer_name(index)
        done = 0
        while tickets.take() if tickets else done < count:
            row = await pool.fetchrow(
                claim.sql,
                *claim.bind(
                    {"queue": benchlib.QUEUE, "actor": user, "actor_role": Role.REVIEWER.value}
                ),
            )
            if row is None or row["id"] is None or row["escalated"]:
                raise RuntimeError(f"claim returned {row}; is --items large enough?")
            if row["overdue_exceptions"]:
                await pool.fetchrow(escalate.sql, *escalate.bind({"queue": benchlib.QUEUE}))
            await publish(row)
            decided = await pool.fetchrow(
                decide.sql,
                *decide.bind(benchlib.approve_arguments(row, user)),
            )
            if decided is None:
                raise RuntimeError(f"decision on item {row['id']} was refused")
            await publish(decided)
            done += 1
        return done

    return work


def reviewer_name(index: int) -> str:
    return f"bench-reviewer-{index:02d}"


# --- the server process --------------------------------------------------------------------


def server_env(config: Config) -> dict[str, str]:
    if config.hints != "redis":
        return {}
    return {
        "CASEWORK_EVENTS_TRANSPORT": "redis",
        "CASEWORK_REDIS_URL": config.redis_url,
        "CASEWORK_REDIS_CHANNEL": REDIS_CHANNEL,
    }


# --- one measurement -----------------------------------------------------------------------


async def count_decisions(owner: asyncpg.Connection) -> int:
    count: int = await owner.fetchval("SELECT count(*) FROM review_decisions")
    return count


def graphql_server(
    config: Config,
    app_dsn: str,
    concurrency: int,
    workers: int | None,
    env: Mapping[str, str] | None = None,
) -> contextlib.AbstractAsyncContextManager[benchlib.Server]:
    """One uvicorn process, or `casework serve --workers N`. The kernel decides how many of
    the client's connections each process gets, so each pool may grow to the concurrency;
    it opens its share to begin with, so that N pools together start near the concurrency
    (N full pools at 32 would take most of PostgreSQL's 100 slots)."""
    environment = {**server_env(config), **(env or {})}
    if workers is None:
        return benchlib.uvicorn_server(
            app_dsn, pool_min=concurrency, pool_max=concurrency, env=environment
        )
    return benchlib.casework_serve_server(
        app_dsn,
        workers=workers,
        pool_min=-(-concurrency // workers),
        pool_max=concurrency,
        env=environment,
    )


async def measure_graphql(
    config: Config,
    database: str,
    concurrency: int,
    tokens: list[str],
    workers: int | None,
    *,
    env: Mapping[str, str] | None = None,
    by_id: bool = False,
) -> benchlib.Measurement:
    """One cell of the GraphQL path; `env` is added to the server's environment (the
    peers bench's trusted documents and lean-path switch), `by_id` sends document ids."""
    owner = await asyncpg.connect(benchlib.owner_dsn(config.server, database))
    try:
        app_dsn = benchlib.app_dsn(config.server, database)
        async with (
            graphql_server(config, app_dsn, concurrency, workers, env) as server,
            contextlib.AsyncExitStack() as stack,
        ):
            cpu = benchlib.CpuWindow(owner, database, server.pid)
            host, port = server.base_url.removeprefix("http://").split(":")
            connections = [
                await stack.enter_async_context(KeepAliveConnection(host, int(port)))
                for _ in range(concurrency)
            ]
            worker = graphql_worker(connections, tokens, by_id=by_id)
            warmed, done, elapsed, used = await benchlib.drive(
                worker, concurrency, config.cycles, config.warmup, cpu
            )
        if workers is not None:
            # How the kernel spread the connections shows in each process's share of the CPU.
            split = ", ".join(f"{seconds:.2f}" for seconds in cpu.server_split if seconds > 0.005)
            print(f"  c={concurrency:<3} serve-{workers}: CPU s per server process: {split}")
        return benchlib.Measurement(done, elapsed, warmed, await count_decisions(owner), used)
    finally:
        await owner.close()


async def measure_raw(config: Config, database: str, concurrency: int) -> benchlib.Measurement:
    owner = await asyncpg.connect(benchlib.owner_dsn(config.server, database))
    queries = benchlib.load_queries()
    # The service's own pool factory (same JSON codecs), used without the Database wrapper.
    via_redis = config.hints == "redis"
    pool = await create_pool(
        benchlib.app_dsn(config.server, database),
        min_size=concurrency,
        max_size=concurrency,
        server_settings={"casework.events": "app"} if via_redis else None,
    )
    redis = aioredis.from_url(config.redis_url) if via_redis else None
    try:
        cpu = benchlib.CpuWindow(owner, database, None)
        worker = raw_worker(pool, queries, redis)
        warmed, done, elapsed, used = await benchlib.drive(
            worker, concurrency, config.cycles, config.warmup, cpu
        )
        await pool.close()
        return benchlib.Measurement(done, elapsed, warmed, await count_decisions(owner), used)
    finally:
        pool.terminate()
        await owner.close()
        if redis is not None:
            await redis.aclose()


# --- setup and report ----------------------------------------------------------------------


async def build_template(config: Config, name: str) -> list[str]:
    """Migrates, seeds the queue and --items items, and mints one token per worker."""
    await benchlib.create_migrated(config.server, name)
    queries = benchlib.load_queries()
    app_pool = await create_pool(benchlib.app_dsn(config.server, name), min_size=1, max_size=2)
    owner_pool = await create_pool(benchlib.owner_dsn(config.server, name), min_size=1, max_size=1)
    try:
        db = Database(app_pool, queries)
        await benchlib.seed_queue(db)
        rng = random.Random(20240601)
        await benchlib.enqueue(db, [f"item-{n:06d}" for n in range(config.items)], rng)
        owner_db = Database(owner_pool, queries)
        tokens = [
            await create_token(
                owner_db, user=reviewer_name(index), role=Role.REVIEWER, queues=[benchlib.QUEUE]
            )
            for index in range(max(config.concurrency))
        ]
        async with owner_pool.acquire() as conn:
            await conn.execute("VACUUM ANALYZE")
        return tokens
    finally:
        await app_pool.close()
        await owner_pool.close()


async def one_run(
    config: Config, template: str, mode: str, concurrency: int, tokens: list[str]
) -> benchlib.Measurement:
    name = benchlib.new_name(f"{mode}{concurrency}")
    await benchlib.create_database(config.server, name, template=template)
    try:
        if mode == "raw":
            result = await measure_raw(config, name, concurrency)
        else:
            result = await measure_graphql(config, name, concurrency, tokens, workers_of(mode))
    finally:
        await benchlib.drop_database(config.server, name)
    expected = result.warmup_cycles + result.cycles
    verdict = "ok" if result.decisions == expected else "MISMATCH"
    print(
        f"  c={concurrency:<3} {mode:<8} {result.cycles} timed + {result.warmup_cycles} warm-up "
        f"cycles in {result.seconds:.2f} s; decision rows {result.decisions} "
        f"(expected {expected}): {verdict}",
        flush=True,
    )
    return result


def report(results: dict[int, dict[str, benchlib.Measurement]], repeats: int) -> None:
    """One table, the shape of docs/benchmarks.md's: a row per concurrency and path, its
    rate, its ratio to raw SQL (with --server-workers, also to the first `serve-N`), and
    where its CPU went."""
    modes = list(next(iter(results.values())))
    served = [mode for mode in modes if mode.startswith("serve-")]
    pooled = f", pooled over {repeats} runs per cell" if repeats > 1 else ""
    headers = ["concurrency", "path", "cycles/s", "/raw"]
    if len(served) > 1:
        headers.append(f"/{served[0]}")
    rows = []
    for concurrency, cells in results.items():
        for mode, m in cells.items():
            row = [str(concurrency), mode, f"{m.rate:.0f}", f"{m.rate / cells['raw'].rate:.2f}"]
            if len(served) > 1:
                first = cells[served[0]].rate
                row.append(f"{m.rate / first:.2f}" if mode in served else "-")
            rows.append(row + m.cpu_cells(has_server=mode != "raw"))
    print()
    benchlib.print_table(
        headers + benchlib.CPU_HEADERS,
        rows,
        title=f"claim+decide cycles per second{pooled}; CPU ms per cycle in the timed window "
        "(server: all its processes); machine, steal: cores busy on average (all processes, "
        f"of {os.cpu_count()})",
    )


async def main(config: Config) -> None:
    template = benchlib.new_name("template")
    started = time.perf_counter()
    print(
        f"claim_bench: {config.items} items per database, {config.cycles} timed cycles per run "
        f"after {config.warmup} warm-up cycles per worker; concurrency {config.concurrency}; "
        f"{config.repeats} run(s) per path and concurrency; hints via {config.hints}; "
        f"paths {config.modes}; {os.cpu_count()} CPUs",
        flush=True,
    )
    results: dict[int, dict[str, benchlib.Measurement]] = {}
    try:
        tokens = await build_template(config, template)
        position = 0
        for concurrency in config.concurrency:
            runs: dict[str, list[benchlib.Measurement]] = {mode: [] for mode in config.modes}
            for _ in range(config.repeats):
                # Rotate which path goes first, so a drift of the machine hits them all.
                shift = position % len(config.modes)
                modes = config.modes[shift:] + config.modes[:shift]
                position += 1
                for mode in modes:
                    runs[mode].append(await one_run(config, template, mode, concurrency, tokens))
            results[concurrency] = {mode: benchlib.sum_runs(found) for mode, found in runs.items()}
    finally:
        await benchlib.drop_database(config.server, template)
    report(results, config.repeats)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--items", type=int, default=3000, help="items per database")
    parser.add_argument("--cycles", type=int, default=2000, help="timed cycles per run")
    parser.add_argument("--warmup", type=int, default=3, help="untimed cycles per worker")
    parser.add_argument(
        "--repeats", type=int, default=2, help="runs per path and concurrency, pooled"
    )
    parser.add_argument(
        "--hints",
        choices=["notify", "redis"],
        default="notify",
        help="how writes send their live-update hint: NOTIFY (default service) or the Redis "
        "transport (no NOTIFY; published after commit, by the raw path too)",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--server-workers",
        type=int,
        nargs="+",
        default=[],
        metavar="N",
        help="run the GraphQL path through `casework serve --workers N` for each N, side by "
        "side (CPU summed over the serving processes), instead of one uvicorn process",
    )
    args = parser.parse_args(argv)
    config = Config(
        server=benchlib.require_local(args.database_url),
        concurrency=args.concurrency,
        items=args.items,
        cycles=args.cycles,
        warmup=args.warmup,
        repeats=args.repeats,
        hints=args.hints,
        redis_url=args.redis_url,
        server_workers=args.server_workers,
    )
    needed = config.cycles + config.warmup * max(config.concurrency)
    if min(config.concurrency) < 1 or config.repeats < 1 or min(args.server_workers, default=1) < 1:
        parser.error("--concurrency, --repeats and --server-workers must be positive")
    if config.items < needed:
        parser.error(f"--items must be at least --cycles + --warmup * concurrency = {needed}")
    return config


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
