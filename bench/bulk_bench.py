"""The time of a 500-item bulkHold and bulkRelease, by ids and by filter.

One database with --backlog pending items in queue `bench` and --history decided ones. Each
round holds the oldest 500 waiting items (by id, then by filter), then releases them, through
the domain (server/domain/controls/bulk.py) as a manager; each call is one statement. Nothing is
asserted: the figures are printed (tests/migrations/test_bulk_plan.py holds the plan).

    .venv/bin/python bench/bulk_bench.py [--database-url URL] [--rounds 20]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta

import benchlib

from server.domain.controls.bulk import (
    MAX_BULK_ITEMS,
    Applied,
    ItemFilter,
    Selection,
    bulk_hold,
    bulk_release,
)
from server.domain.model import Principal, Role
from server.store.database import Database, connect, create_pool

MANAGER = Principal("bench-manager", Role.MANAGER, frozenset({benchlib.QUEUE}))
HOLD_REASON = "INSERT INTO hold_reasons (queue, code, label) VALUES ($1, 'waiting', 'Waiting')"
INSERT_HISTORY = """
INSERT INTO review_items (origin_queue, queue, external_key, priority, payload, evidence_hash,
                          state, decided_at)
SELECT $1, $1, 'old-' || g, 0, '{}', repeat('0', 64), 'decided', now()
FROM generate_series(1, $2::int) AS g
"""


async def timed(figures: list[float], call: Awaitable[object]) -> None:
    """Awaits the call (a coroutine does not start until awaited) and notes how long it took."""
    started = time.perf_counter()
    result = await call
    figures.append(time.perf_counter() - started)
    if not isinstance(result, Applied) or len(result.changed) != MAX_BULK_ITEMS:
        raise RuntimeError(f"a bulk call did not change {MAX_BULK_ITEMS} items: {result}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--backlog", type=int, default=5000)
    parser.add_argument("--history", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    server = benchlib.require_local(args.database_url)
    name = benchlib.new_name("bulk")
    rng = random.Random(14)
    await benchlib.create_migrated(server, name)
    pool = await create_pool(benchlib.app_dsn(server, name), min_size=1, max_size=2)
    try:
        db = Database(pool, benchlib.load_queries())
        await benchlib.seed_queue(db)
        await benchlib.enqueue(db, [f"backlog-{n:07d}" for n in range(args.backlog)], rng)
        owner = await connect(benchlib.owner_dsn(server, name))
        try:
            await owner.execute(HOLD_REASON, benchlib.QUEUE)
            await owner.execute(INSERT_HISTORY, benchlib.QUEUE, args.history)
            await owner.execute("VACUUM ANALYZE review_items")
            oldest = await owner.fetch(
                "SELECT id FROM review_items WHERE queue = $1 AND state = 'pending'"
                " ORDER BY created_at, id LIMIT $2",
                benchlib.QUEUE,
                MAX_BULK_ITEMS,
            )
        finally:
            await owner.close()
        by_ids = Selection(item_ids=[str(row["id"]) for row in oldest])
        by_filter = Selection(filter=ItemFilter(benchlib.QUEUE))
        figures: dict[str, list[float]] = {
            "bulkHold by ids": [],
            "bulkRelease by ids": [],
            "bulkHold by filter": [],
            "bulkRelease by filter": [],
        }
        for _ in range(args.rounds):
            until = datetime.now(UTC) + timedelta(hours=1)
            for form, selection in (("ids", by_ids), ("filter", by_filter)):
                await timed(
                    figures[f"bulkHold by {form}"],
                    bulk_hold(db, MANAGER, selection, until=until, reason="waiting"),
                )
                # By filter, the release matches the items not free already: the 500 held.
                await timed(
                    figures[f"bulkRelease by {form}"],
                    bulk_release(db, MANAGER, selection),
                )
        print(
            f"bulk_bench: {MAX_BULK_ITEMS} items per call; backlog {args.backlog} pending, "
            f"{args.history} decided; {args.rounds} rounds",
            flush=True,
        )
        rows = []
        for label, values in figures.items():
            values.sort()
            p50, p90 = (benchlib.percentile(values, f) * 1000 for f in (0.5, 0.9))
            call, _, form = label.partition(" by ")
            rows.append([call, form, f"{p50:.1f}", f"{p90:.1f}"])
        benchlib.print_table(["call", "items named by", "p50 ms", "p90 ms"], rows)
    finally:
        await pool.close()
        await benchlib.drop_database(server, name)


if __name__ == "__main__":
    benchlib.run(main)
