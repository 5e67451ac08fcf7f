"""What one claim+decide cycle costs PostgreSQL, statement by statement, in figures that do
not depend on the machine's load: buffers touched and WAL written, from
EXPLAIN (ANALYZE, BUFFERS, WAL), with the execution time beside them.

A fresh database is migrated and seeded with --items pending items of queue `bench`; then
--cycles times, as one reviewer: item_claim_next, then decision_submit approving what was
claimed, each run under EXPLAIN ANALYZE (which executes it) with the arguments the domain
passes. The first --warmup cycles are left out; the medians of the rest are printed.

Run it from two trees to compare them (each with its own PYTHONPATH and migrations):

    PYTHONPATH=$PWD .venv/bin/python bench/cycle_cost.py [--items 1200] [--cycles 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from dataclasses import dataclass
from typing import Any

import asyncpg
import benchlib

from server.domain.model import Role
from server.store import sql
from server.store.database import Database, create_pool

EXPLAIN = "EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) "
REVIEWER = "bench-reviewer-00"


@dataclass(frozen=True)
class Cost:
    buffers: int
    wal_records: int
    wal_bytes: int
    execution_ms: float

    @classmethod
    def from_plan(cls, explained: str) -> Cost:
        [top] = json.loads(explained)
        plan = top["Plan"]
        return cls(
            plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0),
            plan.get("WAL Records", 0),
            plan.get("WAL Bytes", 0),
            top["Execution Time"],
        )


async def measure(server: str, items: int, cycles: int, warmup: int) -> dict[str, list[Cost]]:
    name = benchlib.new_name("cc")
    await benchlib.create_migrated(server, name)
    try:
        pool = await create_pool(benchlib.owner_dsn(server, name), min_size=1, max_size=1)
        try:
            await benchlib.seed_queue(Database(pool, benchlib.load_queries()))
        finally:
            await pool.close()
        owner = await asyncpg.connect(benchlib.owner_dsn(server, name))
        try:
            await owner.execute(
                "INSERT INTO review_items (origin_queue, queue, external_key, payload, "
                "evidence_hash) SELECT $1, $1, 'k' || g, '{}', repeat('0', 64) "
                "FROM generate_series(1, $2::int) AS g",
                benchlib.QUEUE,
                items,
            )
            await owner.execute("VACUUM ANALYZE")
        finally:
            await owner.close()
        app = await asyncpg.connect(benchlib.app_dsn(server, name))
        try:
            return await run_cycles(app, cycles, warmup)
        finally:
            await app.close()
    finally:
        await benchlib.drop_database(server, name)


async def run_cycles(app: asyncpg.Connection, cycles: int, warmup: int) -> dict[str, list[Cost]]:
    queries = benchlib.load_queries()
    claim = queries.statement(sql.items.ITEM_CLAIM_NEXT.name)
    decide = queries.statement(sql.decisions.DECISION_SUBMIT.name)
    costs: dict[str, list[Cost]] = {"claim": [], "decide": []}
    claim_arguments = {"queue": benchlib.QUEUE, "actor": REVIEWER}
    for cycle in range(cycles):
        claim_cost = Cost.from_plan(
            await app.fetchval(
                EXPLAIN + claim.sql,
                *claim.bind({**claim_arguments, "actor_role": Role.REVIEWER.value}),
            )
        )
        # EXPLAIN returns the plan, not the row: read what was claimed.
        held: Any = await app.fetchrow(
            "SELECT id, lease_token, evidence_hash FROM review_items "
            "WHERE lease_owner = $1 AND lease_token IS NOT NULL AND state = 'pending'",
            REVIEWER,
        )
        if held is None:
            raise RuntimeError("the claim took nothing: is --items larger than --cycles?")
        decide_cost = Cost.from_plan(
            await app.fetchval(
                EXPLAIN + decide.sql, *decide.bind(benchlib.approve_arguments(held, REVIEWER))
            )
        )
        if cycle >= warmup:
            costs["claim"].append(claim_cost)
            costs["decide"].append(decide_cost)
    return costs


def report(costs: dict[str, list[Cost]]) -> None:
    print(f"{'statement':>9} | buffers | WAL records | WAL bytes | execution ms (median)")
    print(f"{'-' * 9}-+---------+-------------+-----------+----------------------")
    for name, rows in costs.items():
        print(
            f"{name:>9} | {statistics.median(r.buffers for r in rows):7.0f} | "
            f"{statistics.median(r.wal_records for r in rows):11.0f} | "
            f"{statistics.median(r.wal_bytes for r in rows):9.0f} | "
            f"{statistics.median(r.execution_ms for r in rows):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--items", type=int, default=1200)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    report(asyncio.run(measure(args.database_url, args.items, args.cycles, args.warmup)))


if __name__ == "__main__":
    main()
