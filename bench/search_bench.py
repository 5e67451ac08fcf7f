"""Item and decision search latency with 100k and with 1M items of history.

Two databases are built side by side with bench/search_history.py (--small-history and
--large-history items over 50 queues, a year of decisions and timeline: see that module),
then VACUUM ANALYZE. Each search of a fixed set of typical filters runs through the domain
(search_items / search_decisions on the application role's pool, first page of 50, as an
admin who sees every queue); only the call is timed. After --warmup untimed runs of every
search on both databases, --requests timed runs per search and database alternate between
the two in --rounds rounds (the order flipping each round), so a noisy neighbour on this
shared machine hits both sizes alike. Prints p50/p99 per search and size, and the ratio
1M / 100k (the target: 1.5 at most), with the load average before and after.

    .venv/bin/python bench/search_bench.py [--database-url URL] [--requests 60]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg
import benchlib
from search_history import build_history

from server.domain.model import DecisionStatus, ItemState, Verdict
from server.domain.search.decisions import search_decisions
from server.domain.search.filters import (
    DecisionPage,
    DecisionSearch,
    ItemPage,
    ItemSearch,
    SearchTooBroad,
)
from server.domain.search.items import search_items
from server.store.database import Database, connect, create_pool

ADMIN = benchlib.ADMIN
PAGE = 50


def searches(now: datetime) -> dict[str, ItemSearch | DecisionSearch]:
    month, quarter = now - timedelta(days=30), now - timedelta(days=91)
    return {
        "items: one queue": ItemSearch(queues=("search-05",)),
        "items: key prefix": ItemSearch(external_key_prefix="app-731"),
        "items: pending in 2 queues": ItemSearch(
            queues=("search-00", "search-01"), states=(ItemState.PENDING,)
        ),
        "items: reviewer, last month": ItemSearch(decided_by="rev-05", decided_after=month),
        "items: reason in a queue, quarter": ItemSearch(
            queues=("search-03",), reason_code="fraud_signal", decided_after=quarter
        ),
        "items: overdue in a queue": ItemSearch(queues=("search-02",), overdue=True),
        "items: assigned to": ItemSearch(assigned_to="rev-10"),
        "decisions: reviewer": DecisionSearch(reviewer="rev-05"),
        "decisions: reviewer, quarter": DecisionSearch(reviewer="rev-05", decided_after=quarter),
        "decisions: reject in a queue": DecisionSearch(
            queues=("search-00",), verdict=Verdict.REJECT
        ),
        "decisions: reason + verdict": DecisionSearch(
            reason_code="name_mismatch", verdict=Verdict.REJECT
        ),
        "decisions: superseded": DecisionSearch(status=DecisionStatus.SUPERSEDED),
    }


@dataclass(frozen=True)
class Config:
    server: str
    small_history: int
    large_history: int
    requests: int
    rounds: int
    warmup: int


@dataclass
class State:
    label: str
    history: int
    name: str
    db: Database | None = None
    pool: asyncpg.Pool | None = None
    latencies: dict[str, list[float]] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)


async def build(config: Config, state: State) -> None:
    started = time.perf_counter()
    await benchlib.create_migrated(config.server, state.name)
    owner = await connect(benchlib.owner_dsn(config.server, state.name))
    try:
        await build_history(owner, state.history)
    finally:
        await owner.close()
    state.pool = await create_pool(
        benchlib.app_dsn(config.server, state.name), min_size=1, max_size=2
    )
    state.db = Database(state.pool, benchlib.load_queries())
    print(
        f"  built {state.label}: {state.history:,} items in {time.perf_counter() - started:.1f} s",
        flush=True,
    )


def outcome(result: object) -> str:
    if isinstance(result, ItemPage):
        return f"{len(result.items)}{'+' if result.has_next_page else ''}"
    if isinstance(result, DecisionPage):
        return f"{len(result.decisions)}{'+' if result.has_next_page else ''}"
    if isinstance(result, SearchTooBroad):
        return "too broad"
    return f"invalid: {result}"


def runner(db: Database, search: ItemSearch | DecisionSearch) -> Callable[[], Awaitable[object]]:
    if isinstance(search, ItemSearch):
        return lambda: search_items(db, ADMIN, search, PAGE, None)
    return lambda: search_decisions(db, ADMIN, search, PAGE, None)


async def measure(state: State, name: str, search: ItemSearch | DecisionSearch, n: int) -> None:
    assert state.db is not None
    run = runner(state.db, search)
    for _ in range(n):
        started = time.perf_counter()
        result = await run()
        state.latencies.setdefault(name, []).append(time.perf_counter() - started)
        state.outcomes[name] = outcome(result)


def figures(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return benchlib.percentile(ordered, 0.50) * 1000, benchlib.percentile(ordered, 0.99) * 1000


def report(small: State, large: State, names: list[str], per_state: int) -> None:
    rows = []
    for name in names:
        small_p50, small_p99 = figures(small.latencies[name])
        large_p50, large_p99 = figures(large.latencies[name])
        rows.append(
            [
                name,
                f"{small_p50:.1f}",
                f"{small_p99:.1f}",
                f"{large_p50:.1f}",
                f"{large_p99:.1f}",
                f"{large_p50 / small_p50:.2f}",
                f"{large_p99 / small_p99:.2f}",
                f"{small.outcomes[name]} / {large.outcomes[name]}",
            ]
        )
    print()
    benchlib.print_table(
        [
            "search (first page of 50)",
            f"p50 {small.label}",
            f"p99 {small.label}",
            f"p50 {large.label}",
            f"p99 {large.label}",
            "p50 ratio",
            "p99 ratio",
            "rows shown",
        ],
        rows,
        title=f"Search latency, ms ({per_state} timed runs per search and size; "
        f"ratio = {large.label} / {small.label}, target <= 1.5)",
    )


def load_average() -> str:
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


async def main(config: Config) -> None:
    started = time.perf_counter()
    small = State(
        benchlib.history_label(config.small_history), config.small_history, benchlib.new_name("s1")
    )
    large = State(
        benchlib.history_label(config.large_history), config.large_history, benchlib.new_name("s2")
    )
    print(
        f"search_bench: {config.requests} timed runs per search and size in {config.rounds} "
        f"alternating rounds after {config.warmup} warm-up runs; load average "
        f"{load_average()}",
        flush=True,
    )
    try:
        for state in (small, large):
            await build(config, state)
        chosen = searches(datetime.now(UTC))
        names = list(chosen)
        for state in (small, large):
            for name, search in chosen.items():
                await measure(state, name, search, config.warmup)
            state.latencies.clear()
        per_round = config.requests // config.rounds
        for round_index in range(config.rounds):
            order = (small, large) if round_index % 2 == 0 else (large, small)
            for name, search in chosen.items():
                for state in order:
                    await measure(state, name, search, per_round)
        report(small, large, names, per_round * config.rounds)
    finally:
        for state in (small, large):
            if state.pool is not None:
                await state.pool.close()
            await benchlib.drop_database(config.server, state.name)
    elapsed = time.perf_counter() - started
    print(f"\nload average at the end {load_average()}; total time {elapsed:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--small-history", type=int, default=100_000)
    parser.add_argument("--large-history", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=60, help="timed runs per search and size")
    parser.add_argument("--rounds", type=int, default=10, help="alternations between sizes")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs per search and size")
    args = parser.parse_args(argv)
    if args.requests < args.rounds or args.rounds < 1:
        parser.error("--requests must be at least --rounds, and --rounds positive")
    return Config(
        server=benchlib.require_local(args.database_url),
        small_history=args.small_history,
        large_history=args.large_history,
        requests=args.requests // args.rounds * args.rounds,
        rounds=args.rounds,
        warmup=args.warmup,
    )


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
