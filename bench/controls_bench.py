"""Claim latency with and without thousands of held and assigned items, on the same backlog.

Two databases are built side by side, each with --backlog pending items in queue `bench`.
In one, --set-aside held items and as many items assigned to other reviewers sit above the
backlog by priority (inserted as the owner, then VACUUM ANALYZE); the other has none. The
claims run through the domain (leases.claim_next, which runs item_claim_next); only the
claim is timed, and each is followed by a decision and the enqueue of one fresh item, so
the backlog stays the same. The claims alternate between the two databases in rounds, so a
noisy neighbour on this shared machine hits both alike. Nothing is asserted: the figures
are printed (tests/migrations/test_control_plans.py holds the plan and the rows read).

    .venv/bin/python bench/controls_bench.py [--database-url URL] [--claims 2000]
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
from server.store.database import Database, connect, create_pool

HOLD_REASON = "INSERT INTO hold_reasons (queue, code, label) VALUES ($1, 'waiting', 'Waiting')"
INSERT_SET_ASIDE = """
INSERT INTO review_items (origin_queue, queue, external_key, priority, payload, evidence_hash,
                          held_until, hold_reason, assigned_to, assigned_until)
SELECT $1, $1, 'aside-' || g, 100, '{}', repeat('0', 64),
       CASE WHEN g % 2 = 0 THEN now() + interval '1 day' END,
       CASE WHEN g % 2 = 0 THEN 'waiting' END,
       CASE WHEN g % 2 = 1 THEN 'someone-' || (g % 50) END,
       CASE WHEN g % 2 = 1 THEN now() + interval '1 day' END
FROM generate_series(1, $2::int) AS g
"""


@dataclass(frozen=True)
class Config:
    server: str
    backlog: int
    set_aside: int
    claims: int
    rounds: int
    warmup: int


@dataclass
class State:
    label: str
    set_aside: int
    name: str
    db: Database | None = None
    pool: asyncpg.Pool | None = None
    latencies: list[float] = field(default_factory=list)
    refills: int = 0

    def database(self) -> Database:
        assert self.db is not None
        return self.db


async def build(config: Config, state: State, rng: random.Random) -> None:
    await benchlib.create_migrated(config.server, state.name)
    state.pool = await create_pool(
        benchlib.app_dsn(config.server, state.name), min_size=1, max_size=2
    )
    state.db = Database(state.pool, benchlib.load_queries())
    await benchlib.seed_queue(state.db)
    await benchlib.enqueue(state.db, [f"backlog-{n:07d}" for n in range(config.backlog)], rng)
    owner = await connect(benchlib.owner_dsn(config.server, state.name))
    try:
        if state.set_aside:
            await owner.execute(HOLD_REASON, benchlib.QUEUE)
            await owner.execute(INSERT_SET_ASIDE, benchlib.QUEUE, state.set_aside)
        await owner.execute("VACUUM ANALYZE")
    finally:
        await owner.close()


async def cycle(state: State, rng: random.Random, timed: bool) -> None:
    db = state.database()
    started = time.perf_counter()
    claim = await claim_next(db, benchlib.REVIEWER, benchlib.QUEUE)
    elapsed = time.perf_counter() - started
    if not isinstance(claim, Claim):
        raise RuntimeError(f"claim on {state.label} returned {claim}")
    if timed:
        state.latencies.append(elapsed)
    await benchlib.approve(db, claim, state.label)
    state.refills += 1
    await benchlib.enqueue(db, [f"refill-{state.refills:07d}"], rng)


def report(states: list[State]) -> None:
    rows = []
    for state in states:
        values = sorted(state.latencies)
        p50, p90, p99 = (benchlib.percentile(values, f) * 1000 for f in (0.5, 0.9, 0.99))
        rows.append([state.label, f"{p50:.3f}", f"{p90:.3f}", f"{p99:.3f}"])
    print()
    benchlib.print_table(
        ["set aside", "p50 ms", "p90 ms", "p99 ms"],
        rows,
        title=f"Claim latency, ms ({len(states[0].latencies)} timed claims per state)",
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--backlog", type=int, default=1000)
    parser.add_argument("--set-aside", type=int, default=10_000)
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()
    config = Config(
        benchlib.require_local(args.database_url),
        args.backlog,
        args.set_aside,
        args.claims,
        args.rounds,
        args.warmup,
    )
    rng = random.Random(14)
    states = [
        State("none", 0, benchlib.new_name("controls_none")),
        State(f"{config.set_aside} held/assigned", config.set_aside, benchlib.new_name("aside")),
    ]
    try:
        for state in states:
            await build(config, state, rng)
        print(
            f"controls_bench: backlog {config.backlog} pending; {config.claims} timed claims "
            f"per state in {config.rounds} alternating rounds after {config.warmup} warm-up "
            "cycles",
            flush=True,
        )
        for state in states:
            for _ in range(config.warmup):
                await cycle(state, rng, timed=False)
        per_round = config.claims // config.rounds
        for _ in range(config.rounds):
            for state in states:
                for _ in range(per_round):
                    await cycle(state, rng, timed=True)
        report(states)
    finally:
        for state in states:
            if state.pool is not None:
                await state.pool.close()
            await benchlib.drop_database(config.server, state.name)


if __name__ == "__main__":
    benchlib.run(main)
