"""The pgqueuer path: pgqueuer's own queries, one job per cycle.

The schema comes from pgqueuer's installer (`Queries.install`, what `pgq install` runs)
with its defaults (durable tables, its NOTIFY trigger on the queue table). The jobs are
enqueued up front, in the template, with payloads of the review items' size. A cycle is
one `Queries.dequeue` with batch size 1 (pick under FOR UPDATE SKIP LOCKED, status
`picked`) and one `Queries.log_jobs` marking that job `successful` (delete from the queue,
insert into the log): the closest pgqueuer has to claim+decide. Its QueueManager is not
used: it fetches batches and buffers completions, which is not the per-item cycle the
other paths do.
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import timedelta

import asyncpg
import benchlib
from pgqueuer.models import Job
from pgqueuer.queries import EntrypointExecutionParameter, Queries
from pgqueuer.types import QueueEntrypoint, QueueManagerId

ENTRYPOINT = QueueEntrypoint(benchlib.QUEUE)
HEARTBEAT_TIMEOUT = timedelta(seconds=30)
ENQUEUE_BATCH = 1000


async def build_template(server: str, name: str, items: int) -> None:
    await benchlib.create_database(server, name)
    conn = await asyncpg.connect(benchlib.owner_dsn(server, name))
    try:
        queries = Queries.from_asyncpg_connection(conn)
        await queries.install()
        rng = random.Random(20240601)
        for start in range(0, items, ENQUEUE_BATCH):
            batch = [
                benchlib.new_item(f"item-{n:06d}", rng)
                for n in range(start, min(items, start + ENQUEUE_BATCH))
            ]
            await queries.enqueue(
                [ENTRYPOINT] * len(batch),
                [json.dumps(item.payload).encode() for item in batch],
                [item.priority for item in batch],
            )
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


async def count_completed(owner: asyncpg.Connection) -> int:
    count: int = await owner.fetchval(
        "SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'"
    )
    return count


def pgqueuer_worker(queries: Queries) -> benchlib.Worker:
    entrypoints = {ENTRYPOINT: EntrypointExecutionParameter(concurrency_limit=0)}
    managers: dict[int, QueueManagerId] = {}

    async def work(index: int, tickets: benchlib.Tickets | None, count: int) -> int:
        # One queue manager id per worker, as each pgqueuer worker process has its own.
        manager = managers.setdefault(index, QueueManagerId(uuid.uuid4()))
        done = 0
        while tickets.take() if tickets else done < count:
            jobs: list[Job] = await queries.dequeue(
                batch_size=1,
                entrypoints=entrypoints,
                queue_manager_id=manager,
                global_concurrency_limit=None,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
            )
            if len(jobs) != 1:
                raise RuntimeError(f"dequeue returned {len(jobs)} jobs; is --items large enough?")
            await queries.log_jobs([(jobs[0], "successful", None)])
            done += 1
        return done

    return work


async def measure(
    server: str, database: str, concurrency: int, cycles: int, warmup: int
) -> benchlib.Measurement:
    owner = await asyncpg.connect(benchlib.owner_dsn(server, database))
    pool = await asyncpg.create_pool(
        benchlib.owner_dsn(server, database), min_size=concurrency, max_size=concurrency
    )
    try:
        cpu = benchlib.CpuWindow(owner, database, None)
        worker = pgqueuer_worker(Queries.from_asyncpg_pool(pool))
        warmed, done, elapsed, used = await benchlib.drive(worker, concurrency, cycles, warmup, cpu)
        return benchlib.Measurement(done, elapsed, warmed, await count_completed(owner), used)
    finally:
        await pool.close()
        await owner.close()
