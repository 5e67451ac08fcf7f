"""Claim latency with a small and a large decided history, on the same backlog.

Two databases are built side by side, each with --backlog pending items in queue `bench`:
one with --small-history decided items (default 10,000), one with --large-history
(default 1,000,000). The history is inserted with one INSERT ... SELECT generate_series
as the owner (with matching review_decisions rows unless --no-history-decisions), then
VACUUM ANALYZE. The claims run through the domain (leases.claim_next on the application
role's pool, which runs the named query item_claim_next); only the claim is timed. Each
claim is followed by a decision and by the enqueue of one fresh item, so the backlog stays
at --backlog pending items. The claims alternate between the two databases in rounds, so
a noisy neighbour on this shared machine hits both states alike.

    .venv/bin/python bench/history_bench.py [--database-url URL] [--claims 2000]
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass, field

import asyncpg
import benchlib

from server.domain.model import Claim
from server.domain.review.leases import claim_next
from server.store import sql
from server.store.database import Database, connect, create_pool

REVIEWER = benchlib.REVIEWER

INSERT_HISTORY = """
INSERT INTO review_items
    (origin_queue, queue, external_key, priority, payload, evidence_hash, state,
     lease_count, created_at, updated_at, decided_at)
SELECT $1, $1, 'history-' || g, g % 10, jsonb_build_object('n', g), repeat('0', 64),
       'decided', 1, now() - interval '1 day', now(), now()
FROM generate_series(1, $2::bigint) AS g
"""

INSERT_HISTORY_DECISIONS = """
INSERT INTO review_decisions
    (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role, evidence_hash,
     lease_token)
SELECT i.id, i.queue, 'approve', 'approve', $2, 'history', 'reviewer', i.evidence_hash,
       gen_random_uuid()
FROM review_items AS i
WHERE i.queue = $1 AND i.state = 'decided'
"""

SIZES = """
SELECT count(*) FILTER (WHERE state = 'pending') AS pending,
       count(*) FILTER (WHERE state = 'decided') AS decided,
       pg_size_pretty(pg_relation_size('review_items')) AS table_size,
       pg_size_pretty(pg_relation_size('review_items_claimable')) AS claimable_index_size,
       (SELECT count(*) FROM review_decisions) AS decision_rows
FROM review_items
"""

AUTOVACUUM = """
SELECT autovacuum_count, autoanalyze_count
FROM pg_stat_user_tables WHERE relname = 'review_items'
"""


@dataclass(frozen=True)
class Config:
    server: str
    backlog: int
    small_history: int
    large_history: int
    claims: int
    rounds: int
    warmup: int
    history_decisions: bool


@dataclass
class State:
    """One database and what was measured on it."""

    label: str
    history: int
    name: str
    db: Database | None = None
    pool: asyncpg.Pool | None = None
    latencies: list[float] = field(default_factory=list)
    refills: int = 0

    def database(self) -> Database:
        assert self.db is not None
        return self.db


async def build(config: Config, state: State, rng: random.Random) -> None:
    started = time.perf_counter()
    await benchlib.create_migrated(config.server, state.name)
    state.pool = await create_pool(
        benchlib.app_dsn(config.server, state.name), min_size=1, max_size=2
    )
    state.db = Database(state.pool, benchlib.load_queries())
    await benchlib.seed_queue(state.db)
    await benchlib.enqueue(state.db, [f"backlog-{n:07d}" for n in range(config.backlog)], rng)
    owner = await connect(benchlib.owner_dsn(config.server, state.name))
    try:
        await owner.execute(INSERT_HISTORY, benchlib.QUEUE, state.history)
        if config.history_decisions:
            await owner.execute(INSERT_HISTORY_DECISIONS, benchlib.QUEUE, benchlib.REASON_CODE)
        await owner.execute("VACUUM ANALYZE")
    finally:
        await owner.close()
    print(
        f"  built {state.label}: {state.history} decided items in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )


async def cycle(state: State, rng: random.Random, timed: bool) -> None:
    """One timed claim, then an untimed decision and refill of the backlog."""
    db = state.database()
    started = time.perf_counter()
    claim = await claim_next(db, REVIEWER, benchlib.QUEUE)
    elapsed = time.perf_counter() - started
    if not isinstance(claim, Claim):
        raise RuntimeError(f"claim on {state.label} returned {claim}")
    if timed:
        state.latencies.append(elapsed)
    await benchlib.approve(db, claim, state.label)
    state.refills += 1
    await benchlib.enqueue(db, [f"refill-{state.refills:07d}"], rng)


async def explain(config: Config, state: State) -> None:
    """The claim's plan, executed in a transaction that is rolled back, as the app role."""
    claim = benchlib.load_queries().statement(sql.items.ITEM_CLAIM_NEXT.name)
    # EXECUTE takes the parameters in $n order: name them, and let the statement order them.
    arguments = ", ".join(
        f"'{value}'"
        for value in claim.bind(
            {"queue": benchlib.QUEUE, "actor": "bench-explain", "actor_role": "reviewer"}
        )
    )
    conn = await connect(benchlib.app_dsn(config.server, state.name))
    try:
        await conn.execute(f"PREPARE bench_claim(text, text, text) AS {claim.sql}")
        for mode in ("force_custom_plan", "force_generic_plan"):
            await conn.execute("BEGIN")
            try:
                await conn.execute(f"SET LOCAL plan_cache_mode = {mode}")
                rows = await conn.fetch(
                    "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                    f"EXECUTE bench_claim({arguments})"
                )
            finally:
                await conn.execute("ROLLBACK")
            print(f"\nEXPLAIN item_claim_next, {state.label}, plan_cache_mode={mode}:")
            for row in rows:
                print(f"    {row[0]}")
    finally:
        await conn.close()


async def describe(config: Config, state: State) -> None:
    conn = await connect(benchlib.owner_dsn(config.server, state.name))
    try:
        sizes = await conn.fetchrow(SIZES)
        vacuum = await conn.fetchrow(AUTOVACUUM)
    finally:
        await conn.close()
    assert sizes is not None
    assert vacuum is not None
    print(
        f"  {state.label}: pending {sizes['pending']}, decided {sizes['decided']}, "
        f"decision rows {sizes['decision_rows']}, review_items {sizes['table_size']}, "
        f"review_items_claimable {sizes['claimable_index_size']}; review_items "
        f"autovacuums {vacuum['autovacuum_count']}, autoanalyzes "
        f"{vacuum['autoanalyze_count']}"
    )


def summary(state: State) -> tuple[float, float, float, float]:
    values = sorted(state.latencies)
    ms = 1000.0
    return (
        benchlib.percentile(values, 0.50) * ms,
        benchlib.percentile(values, 0.90) * ms,
        benchlib.percentile(values, 0.99) * ms,
        sum(values) / len(values) * ms,
    )


def report(small: State, large: State) -> None:
    print()
    rows = []
    for state in (small, large):
        p50, p90, p99, mean = summary(state)
        rows.append([f"{state.history:,}", *(f"{v:.3f}" for v in (p50, p90, p99, mean))])
    benchlib.print_table(
        ["history (decided items)", "p50 ms", "p90 ms", "p99 ms", "mean ms"],
        rows,
        title=f"Claim latency, ms ({len(small.latencies)} timed claims per state)",
    )
    small_p50, _, small_p99, _ = summary(small)
    large_p50, _, large_p99, _ = summary(large)
    print()
    print(f"p50({large.label}) / p50({small.label}) = {large_p50 / small_p50:.2f}  (target <= 1.2)")
    print(f"p99({large.label}) / p99({small.label}) = {large_p99 / small_p99:.2f}")


async def main(config: Config) -> None:
    started = time.perf_counter()
    small = State(
        benchlib.history_label(config.small_history), config.small_history, benchlib.new_name("h1")
    )
    large = State(
        benchlib.history_label(config.large_history), config.large_history, benchlib.new_name("h2")
    )
    print(
        f"history_bench: backlog {config.backlog} pending; {config.claims} timed claims per "
        f"state in {config.rounds} alternating rounds after {config.warmup} warm-up cycles; "
        f"history decision rows: {'yes' if config.history_decisions else 'no'}",
        flush=True,
    )
    rng = random.Random(20240601)
    try:
        for state in (small, large):
            await build(config, state, rng)
        for state in (small, large):
            await explain(config, state)
        print()
        for state in (small, large):
            for _ in range(config.warmup):
                await cycle(state, rng, timed=False)
        per_round = config.claims // config.rounds
        for round_index in range(config.rounds):
            order = (small, large) if round_index % 2 == 0 else (large, small)
            for state in order:
                for _ in range(per_round):
                    await cycle(state, rng, timed=True)
        print("After the timed claims:")
        for state in (small, large):
            await describe(config, state)
        report(small, large)
    finally:
        for state in (small, large):
            if state.pool is not None:
                await state.pool.close()
            await benchlib.drop_database(config.server, state.name)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--backlog", type=int, default=1000, help="pending items in each state")
    parser.add_argument("--small-history", type=int, default=10_000)
    parser.add_argument("--large-history", type=int, default=1_000_000)
    parser.add_argument("--claims", type=int, default=2000, help="timed claims per state")
    parser.add_argument("--rounds", type=int, default=10, help="alternations between states")
    parser.add_argument("--warmup", type=int, default=100, help="untimed cycles per state")
    parser.add_argument(
        "--no-history-decisions",
        dest="history_decisions",
        action="store_false",
        help="insert the decided items without their review_decisions rows",
    )
    args = parser.parse_args(argv)
    if args.claims < args.rounds or args.rounds < 1 or args.backlog < 1:
        parser.error("--claims must be at least --rounds, and both and --backlog positive")
    return Config(
        server=benchlib.require_local(args.database_url),
        backlog=args.backlog,
        small_history=args.small_history,
        large_history=args.large_history,
        claims=args.claims // args.rounds * args.rounds,
        rounds=args.rounds,
        warmup=args.warmup,
        history_decisions=args.history_decisions,
    )


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
