"""What a change to the decision statement costs PostgreSQL, statement against statement, on
one database: `decision_submit` as one queries directory has it (--base, say an export of
main's db/queries) against this tree's (and any --variant directories), in alternating
rounds on the same connection, over the same kind of item and the same schema (this tree's
migrations). Only the decide statement is timed: the backend's CPU from
/proc/<pid>/schedstat around each call (the server must be local and readable), per
decision, median of the rounds, and each variant's ratio to the base round by round.

The cycle of bench/cycle_cost.py compares two trees, schema and statements together; this
isolates the statement, which is what a step added to it (such as QA sampling's copy in a
queue without QA, issue 16) costs every decision. Round 0 warms every path and is left out.

    PYTHONPATH=$PWD .venv/bin/python bench/decide_variants.py --base /tmp/main-queries \
        [--variant DIR ...] [--rounds 10] [--per-round 250]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import asyncpg
import benchlib
from cycle_cost import REVIEWER, SEED_HISTORY, SEED_ITEMS, backend_cpu_ns, seed_history

from server.domain.model import Role
from server.store import sql
from server.store.database import Database, create_pool
from server.store.queries import Queries, Statement


async def decide_cpu_us(
    app: asyncpg.Connection, pid: int, claim: Statement, decide: Statement, count: int
) -> float:
    """Claims and approves `count` items; the backend CPU spent deciding, per decision."""
    spent = 0
    for _ in range(count):
        held = await app.fetchrow(
            claim.sql,
            *claim.bind(
                {"queue": benchlib.QUEUE, "actor": REVIEWER, "actor_role": Role.REVIEWER.value}
            ),
        )
        if held is None or held["id"] is None:
            raise RuntimeError("the claim took nothing: too few items seeded")
        before = backend_cpu_ns(pid)
        await app.fetchrow(decide.sql, *decide.bind(benchlib.approve_arguments(held, REVIEWER)))
        spent += backend_cpu_ns(pid) - before
    return spent / count / 1000


async def main(args: argparse.Namespace) -> None:
    server = benchlib.require_local(args.database_url)
    name = benchlib.new_name("dv")
    await benchlib.create_migrated(server, name)
    paths = {"base": Path(args.base), "tree": None, **{str(v): Path(v) for v in args.variant}}
    try:
        pool = await create_pool(benchlib.owner_dsn(server, name), min_size=1, max_size=1)
        try:
            await benchlib.seed_queue(Database(pool, benchlib.load_queries()))
        finally:
            await pool.close()
        owner = await asyncpg.connect(benchlib.owner_dsn(server, name))
        try:
            await seed_history(owner, SEED_HISTORY, args.history)
            needed = (args.rounds + 1) * args.per_round * len(paths) + 100
            await owner.execute(SEED_ITEMS, benchlib.QUEUE, needed)
            await owner.execute("VACUUM ANALYZE")
        finally:
            await owner.close()
        tree = benchlib.load_queries()
        claim = tree.statement(sql.items.ITEM_CLAIM_NEXT.name)
        decides = {
            label: (tree if path is None else Queries(path)).statement(
                sql.decisions.DECISION_SUBMIT.name
            )
            for label, path in paths.items()
        }
        app = await asyncpg.connect(benchlib.app_dsn(server, name))
        try:
            pid = await app.fetchval("SELECT pg_backend_pid()")
            rounds: dict[str, list[float]] = {label: [] for label in decides}
            for n in range(args.rounds + 1):
                order = list(decides) if n % 2 == 0 else list(reversed(decides))
                for label in order:
                    cost = await decide_cpu_us(app, pid, claim, decides[label], args.per_round)
                    if n > 0:
                        rounds[label].append(cost)
        finally:
            await app.close()
    finally:
        await benchlib.drop_database(server, name)
    rows = []
    for label, values in rounds.items():
        ratios = [v / b for v, b in zip(values, rounds["base"], strict=True)]
        rows.append(
            [
                label,
                f"{statistics.median(values):.1f}",
                f"{statistics.median(ratios):.3f}",
                ", ".join(str(round(v)) for v in values),
            ]
        )
    benchlib.print_table(
        ["statement", "us per decision (median)", "/base (median of rounds)", "rounds, us"],
        rows,
        title=f"decision_submit, backend CPU per decision (us), {args.rounds} rounds",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--base", required=True, help="a queries directory (the statement before)")
    parser.add_argument("--variant", action="append", default=[], help="more directories")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=250)
    parser.add_argument("--history", type=int, default=20000)
    benchlib.run(lambda: main(parser.parse_args()))
