"""The raw paths: the minimal review queue of review_queue.sql, driven over asyncpg.

`raw` sets `peer.hints = 'off'` on its connections, so no NOTIFY is sent; `raw+notify`
sends the two NOTIFYs per cycle Casework sends (one per write transaction, on the same
channel, with payloads of the same keys), and, as Casework's service does, one connection
LISTENs to them: the bench counts that every one of them arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Callable
from pathlib import Path

import asyncpg
import benchlib

SCHEMA_SQL = Path(__file__).with_name("review_queue.sql")
CHANNEL = "casework_events"
VERDICT = "approve"
HINTS_PER_CYCLE = 2
# How long the listener may take to receive the last hints after the last commit.
HINT_DRAIN_SECONDS = 10.0


async def build_template(server: str, name: str, items: int) -> None:
    """Creates the schema and `items` pending items of queue `bench`, payloads shaped as
    the Casework bench's (benchlib.new_item), then VACUUM ANALYZE."""
    await benchlib.create_database(server, name)
    conn = await asyncpg.connect(benchlib.owner_dsn(server, name))
    try:
        await conn.execute(SCHEMA_SQL.read_text())
        rng = random.Random(20240601)
        rows = []
        for n in range(items):
            item = benchlib.new_item(f"item-{n:06d}", rng)
            rows.append((benchlib.QUEUE, item.priority, json.dumps(item.payload)))
        await conn.executemany(
            "INSERT INTO peer.items (queue, priority, payload) VALUES ($1, $2, $3::jsonb)", rows
        )
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def count_decisions(owner: asyncpg.Connection) -> int:
    count: int = await owner.fetchval("SELECT count(*) FROM peer.decisions")
    return count


def reviewer_name(index: int) -> str:
    return f"bench-reviewer-{index:02d}"


def raw_worker(pool: asyncpg.Pool) -> benchlib.Worker:
    async def work(index: int, tickets: benchlib.Tickets | None, count: int) -> int:
        actor = reviewer_name(index)
        done = 0
        while tickets.take() if tickets else done < count:
            claim = await pool.fetchrow(
                "SELECT id, lease_token FROM peer.claim_next($1, $2)", benchlib.QUEUE, actor
            )
            if claim is None or claim["id"] is None:
                raise RuntimeError("claim found nothing; is --items large enough?")
            decided = await pool.fetchrow(
                "SELECT id FROM peer.submit_decision($1, $2, $3, $4)",
                claim["id"],
                claim["lease_token"],
                VERDICT,
                actor,
            )
            if decided is None or decided["id"] is None:
                raise RuntimeError(f"decision on item {claim['id']} was refused")
            done += 1
        return done

    return work


class HintCounter:
    """Counts the hints that reach one LISTENing connection."""

    def __init__(self) -> None:
        self.received = 0
        self._changed = asyncio.Event()

    def __call__(self, *_args: object) -> None:
        self.received += 1
        self._changed.set()

    async def wait_for(self, expected: int) -> None:
        async with asyncio.timeout(HINT_DRAIN_SECONDS):
            while self.received < expected:
                self._changed.clear()
                await self._changed.wait()


async def measure(
    server: str,
    database: str,
    concurrency: int,
    cycles: int,
    warmup: int,
    *,
    notify: bool,
    worker_for: Callable[[asyncpg.Pool], benchlib.Worker] = raw_worker,
) -> tuple[benchlib.Measurement, int | None]:
    """One cell of `worker_for`'s cycle (review_queue.sql's functions unless told); with
    `notify`, also the number of hints the listener received."""
    owner = await asyncpg.connect(benchlib.owner_dsn(server, database))
    pool = await asyncpg.create_pool(
        benchlib.owner_dsn(server, database),
        min_size=concurrency,
        max_size=concurrency,
        server_settings={} if notify else {"peer.hints": "off"},
    )
    listener = await asyncpg.connect(benchlib.owner_dsn(server, database)) if notify else None
    hints = HintCounter()
    try:
        if listener is not None:
            await listener.add_listener(CHANNEL, hints)
        cpu = benchlib.CpuWindow(owner, database, None)
        warmed, done, elapsed, used = await benchlib.drive(
            worker_for(pool), concurrency, cycles, warmup, cpu
        )
        if listener is not None:
            # A shortfall shows in the ok line; the wait is bounded.
            with contextlib.suppress(TimeoutError):
                await hints.wait_for(HINTS_PER_CYCLE * (warmed + done))
        decisions = await count_decisions(owner)
        measurement = benchlib.Measurement(done, elapsed, warmed, decisions, used)
        return measurement, hints.received if notify else None
    finally:
        if listener is not None:
            await listener.close()
        await pool.close()
        await owner.close()
