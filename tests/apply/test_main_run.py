"""The main run: 2,000 decisions carried out by two `casework worker` processes against a
receiver that fails a third of the time, while one worker is SIGKILLed and restarted five
times. Every decision is applied exactly once in the proof table, and the receiver has seen
every decision's idempotency key and no other."""

from __future__ import annotations

import random
import time

import asyncpg
import pytest

from server.store.database import Database
from tests.apply.helpers import (
    WorkerProcess,
    effect_receiver,
    inconsistencies,
    make_decisions,
    start_worker,
    wait_until,
    worker_env,
    worker_processes,
)
from tests.apply.receiver import OK, Action, Reply, Request, Stall
from tests.conftest import TestDatabase

DECISIONS = 2000
KILLS = 5
EFFECT_TIMEOUT_SECONDS = 0.5
UNAVAILABLE_SHARE = 0.30
STALL_SHARE = 0.05
# A worker killed mid-attempt leaves its claims locked for effect timeout * 2 + 10 s
# (applications_claim), so the run cannot drain sooner than that after the last kill.
DRAIN_WITHIN_SECONDS = 90.0


async def count(conn: asyncpg.Connection, sql: str, *args: object) -> int:
    value = await conn.fetchval(sql, *args)
    return int(value)


@pytest.mark.slow
async def test_2000_decisions_two_workers_five_kills_each_applied_exactly_once(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    context = f"(random seed {seed})"

    def flaky(request: Request) -> Action:
        draw = rng.random()
        if draw < UNAVAILABLE_SHARE:
            return Reply(503, body=b"busy")
        if draw < UNAVAILABLE_SHARE + STALL_SHARE:
            return Stall()
        return OK

    async with effect_receiver(
        db, kyc_queue, flaky, timeout_seconds=EFFECT_TIMEOUT_SECONDS, max_attempts=50
    ) as receiver:
        decision_ids = await make_decisions(db, kyc_queue, DECISIONS)
        waiting = "SELECT count(*) FROM decision_applications WHERE state = 'pending'"
        assert await count(owner_conn, waiting) == DECISIONS

        applied = "SELECT count(*) FROM applied_decisions"
        # Kill points: random moments, as progress through the run.
        thresholds = sorted(rng.sample(range(DECISIONS // 20, DECISIONS * 4 // 5), KILLS))
        # Backoff doubles from this; attempts cut short by a kill count too, so a decision
        # unlucky eight times over waits ~2.5 s here, not the ~13 s a base of 0.05 s gives.
        env = worker_env(test_database, CASEWORK_APPLY_BACKOFF_SECONDS="0.01")
        started = time.monotonic()
        kills: list[str] = []
        killed: list[WorkerProcess] = []
        async with worker_processes(env, 2) as workers:
            for threshold in thresholds:

                async def progressed(threshold: int = threshold) -> bool:
                    return await count(owner_conn, applied) >= threshold

                await wait_until(progressed, within=60, what=f"{threshold} applied {context}")
                index = rng.randrange(len(workers))
                victim = workers[index]

                async def working(name: str = victim.name) -> bool:
                    # A worker that has started carrying decisions out, not one still starting.
                    return bool(
                        await owner_conn.fetchval(
                            "SELECT EXISTS (SELECT 1 FROM apply_attempts WHERE worker = $1)", name
                        )
                    )

                await wait_until(working, within=30, what=f"worker {victim.name} at work")
                pending = await count(owner_conn, waiting)
                assert pending > 0, f"the run drained before kill {len(kills) + 1} {context}"
                await victim.kill()
                killed.append(victim)
                kills.append(
                    f"{victim.name} at {time.monotonic() - started:.1f} s, "
                    f"{await count(owner_conn, applied)} applied"
                )
                workers[index] = await start_worker(env)

            async def drained() -> bool:
                return await count(owner_conn, waiting) == 0

            await wait_until(drained, within=DRAIN_WITHIN_SECONDS, what=f"drained {context}")
            elapsed = time.monotonic() - started
            codes = [await worker.terminate() for worker in workers]
            logs = "\n".join(worker.log for worker in [*killed, *workers])
            assert codes == [0, 0], logs
            assert "Traceback" not in logs, logs

    ids = {str(decision_id) for decision_id in decision_ids}
    proofs = await owner_conn.fetch("SELECT decision_id FROM applied_decisions")
    assert len(proofs) == DECISIONS, context
    assert {str(row["decision_id"]) for row in proofs} == ids, context
    # The receiver saw every decision's key, and nothing else.
    assert receiver.keys == ids, context
    assert {request.key for request, status in receiver.replies if status == 200} == ids
    assert receiver.bad_signatures == []
    states = dict(
        await owner_conn.fetch("SELECT state, count(*) FROM decision_applications GROUP BY 1")
    )
    assert states == {"applied": DECISIONS}, context
    assert await inconsistencies(owner_conn, every_attempt_recorded=False) == [], context

    # The faults happened: refusals, timeouts, and kills that interrupted attempts.
    outcomes = dict(
        await owner_conn.fetch(
            "SELECT CASE WHEN error LIKE 'timed out%' THEN 'timeout' ELSE outcome END, count(*) "
            "FROM apply_attempts GROUP BY 1"
        )
    )
    interrupted = await count(
        owner_conn,
        "SELECT count(*) FROM decision_applications AS a "
        "WHERE a.attempts > (SELECT count(*) FROM apply_attempts AS t "
        "                    WHERE t.decision_id = a.decision_id)",
    )
    statuses = [status for _, status in receiver.replies]
    assert statuses.count(503) > 0, context
    assert outcomes.get("timeout", 0) > 0, (outcomes, context)
    assert len(kills) == KILLS
    assert interrupted > 0, f"no kill interrupted an attempt: {kills} {context}"
    print(
        f"\nmain run: {DECISIONS} decisions drained in {elapsed:.1f} s; "
        f"{len(receiver.requests)} requests ({statuses.count(503)} answered 503, "
        f"{len(receiver.requests) - len(statuses)} stalled), attempts {outcomes}, "
        f"{interrupted} attempts cut short by {KILLS} kills: {kills} {context}"
    )
