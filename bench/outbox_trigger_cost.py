"""What the event producers (migration 0033) cost a decision when no endpoint subscribes:
decision_submit timed by PostgreSQL itself, with the trigger on decision_applications
enabled and disabled in alternating blocks on one database and one connection.

EXPLAIN (ANALYZE) reports the time spent in each AFTER trigger beside the statement's
execution time, so the trigger's own cost is read directly rather than as the difference
of two noisy figures. --endpoint adds an enabled endpoint subscribed to another queue, so
the trigger's probe meets a row that does not match (the case of a deployment whose
endpoints watch other queues). The first --settle decisions of each block are left out.

    PYTHONPATH=$PWD .venv/bin/python bench/outbox_trigger_cost.py [--blocks 24] [--per-block 100]
        [--endpoint]
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import asyncpg
import benchlib
from cycle_cost import EXPLAIN, REVIEWER, SEED_HISTORY, SEED_ITEMS, seed_history

from server.domain.model import Role
from server.store import sql
from server.store.database import Database, create_pool

TRIGGER = "decision_applications_emit_events"


async def decide_once(app: asyncpg.Connection, claim: Any, decide: Any) -> tuple[float, float]:
    """Claims and approves one item: (execution ms, trigger ms) of the decide statement."""
    await app.fetchrow(
        claim.sql,
        *claim.bind(
            {"queue": benchlib.QUEUE, "actor": REVIEWER, "actor_role": Role.REVIEWER.value}
        ),
    )
    held = await app.fetchrow(
        "SELECT id, lease_token, evidence_hash FROM review_items "
        "WHERE lease_owner = $1 AND lease_token IS NOT NULL AND state = 'pending'",
        REVIEWER,
    )
    if held is None:
        raise RuntimeError("the claim took nothing")
    [top] = json.loads(
        await app.fetchval(
            EXPLAIN + decide.sql, *decide.bind(benchlib.approve_arguments(held, REVIEWER))
        )
    )
    spent = sum(t["Time"] for t in top.get("Triggers", []) if t["Trigger Name"] == TRIGGER)
    return top["Execution Time"], spent


async def main(arguments: argparse.Namespace) -> None:
    server = benchlib.require_local(arguments.database_url)
    name = benchlib.new_name("outboxtrigger")
    blocks, per_block, settle = arguments.blocks, arguments.per_block, arguments.settle
    await benchlib.create_migrated(server, name)
    try:
        pool = await create_pool(benchlib.owner_dsn(server, name), min_size=1, max_size=1)
        try:
            await benchlib.seed_queue(Database(pool, benchlib.load_queries()))
        finally:
            await pool.close()
        owner = await asyncpg.connect(benchlib.owner_dsn(server, name))
        app = await asyncpg.connect(benchlib.app_dsn(server, name))
        try:
            await seed_history(owner, SEED_HISTORY, 2000)
            await owner.execute(SEED_ITEMS, benchlib.QUEUE, blocks * per_block + 10)
            if arguments.endpoint:
                await owner.execute(
                    "INSERT INTO webhook_endpoints (id, url, event_types, queues, created_by)"
                    " VALUES (gen_random_uuid(), 'https://receiver.example/', "
                    " '{decision.effective}', '{elsewhere}', 'bench')"
                )
            await owner.execute("VACUUM ANALYZE")
            queries = benchlib.load_queries()
            claim = queries.statement(sql.items.ITEM_CLAIM_NEXT.name)
            decide = queries.statement(sql.decisions.DECISION_SUBMIT.name)
            figures: dict[str, tuple[list[float], list[float]]] = {"on": ([], []), "off": ([], [])}
            for block in range(blocks):
                mode = "on" if block % 2 == 0 else "off"
                verb = "ENABLE" if mode == "on" else "DISABLE"
                await owner.execute(f"ALTER TABLE decision_applications {verb} TRIGGER {TRIGGER}")
                for n in range(per_block):
                    execution, trigger = await decide_once(app, claim, decide)
                    if n >= settle:
                        figures[mode][0].append(execution)
                        figures[mode][1].append(trigger)
        finally:
            await app.close()
            await owner.close()
    finally:
        await benchlib.drop_database(server, name)
    benchlib.print_table(
        ["trigger", "decisions", "decide execution us (median)", "trigger us (median)"],
        [
            [
                mode,
                str(len(executions)),
                f"{statistics.median(executions) * 1000:.0f}",
                f"{statistics.median(triggers) * 1000:.1f}",
            ]
            for mode, (executions, triggers) in figures.items()
        ],
        title="EXPLAIN ANALYZE of decision_submit, alternating blocks, one connection",
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--per-block", type=int, default=100)
    parser.add_argument("--settle", type=int, default=20)
    parser.add_argument("--endpoint", action="store_true", help="an endpoint on another queue")
    return parser.parse_args()


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
