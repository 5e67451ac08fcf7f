"""Batched claims and batched recordings keep the worker's guarantees.

Two real `casework worker` processes share a backlog: every decision reaches the receiver,
each is recorded as applied exactly once, and every attempt is recorded. Then, on the
database itself, a stale worker (one whose claim was taken over) records its outcomes after
the worker that took over: its failure changes nothing and its success is refused as a
repeat; and two batches that overlap, recorded at the same moment, prove each decision once.
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from server.domain.review import apply
from server.domain.review.apply import AppliedAttempt, Liveness, claim_due, utcnow
from server.store.database import Database, connect
from server.store.queries import Queries
from tests.apply.helpers import (
    effect_receiver,
    inconsistencies,
    make_decisions,
    wait_until,
    worker_env,
    worker_processes,
)
from tests.conftest import TestDatabase

DECISIONS = 60
# Small enough that each worker claims and records several batches.
CONCURRENCY = "8"


async def applied_count(conn: asyncpg.Connection) -> int:
    count: int = await conn.fetchval("SELECT count(*) FROM applied_decisions")
    return count


async def test_two_workers_apply_every_decision_once_and_record_every_attempt(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    async with effect_receiver(db, kyc_queue) as receiver:
        env = worker_env(test_database, CASEWORK_WORKER_CONCURRENCY=CONCURRENCY)
        async with worker_processes(env, 2) as workers:

            async def both_running() -> bool:
                running: int = await owner_conn.fetchval("SELECT count(*) FROM apply_workers")
                return running == 2

            # Each has renewed its liveness: both run, and the decisions come while they do.
            await wait_until(both_running, within=60, what="both workers running")
            decision_ids = await make_decisions(db, kyc_queue, DECISIONS)

            async def all_applied() -> bool:
                return await applied_count(owner_conn) == DECISIONS

            await wait_until(all_applied, within=60, what="every decision applied")
            for worker in workers:
                assert await worker.terminate() == 0, worker.log

    # Delivered: every decision at least once (no lock lapsed here, so exactly once).
    assert receiver.keys == {str(decision_id) for decision_id in decision_ids}
    assert sorted(r.key for r in receiver.requests) == sorted(map(str, decision_ids))
    # Recorded as done once each: one proof, one applied attempt, no "already applied".
    rows = await owner_conn.fetch(
        "SELECT t.decision_id, count(*) AS attempts, "
        "count(*) FILTER (WHERE t.outcome = 'applied' AND t.error IS NULL) AS done "
        "FROM apply_attempts AS t GROUP BY t.decision_id"
    )
    assert {row["decision_id"] for row in rows} == set(decision_ids)
    assert all(row["attempts"] == 1 and row["done"] == 1 for row in rows), rows
    states = await owner_conn.fetch("SELECT DISTINCT state FROM decision_applications")
    assert [row["state"] for row in states] == ["applied"]
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []


async def test_a_stale_workers_outcomes_are_refused_after_a_takeover(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    (decision_id,) = await make_decisions(db, kyc_queue, 1)
    stale = Liveness(uuid.uuid4(), "stale", 3600.0)
    current = Liveness(uuid.uuid4(), "current", 3600.0)
    (first,) = await claim_due(db, 10, stale)
    # The stale worker stops renewing: its claim is taken over at once.
    await apply.leave(db, stale.worker_id)
    (second,) = await claim_due(db, 10, current)
    assert (first.decision_id, second.decision_id) == (decision_id, decision_id)
    assert (first.attempt, second.attempt) == (1, 2)

    took_over = await apply.record_applied_batch(
        db, [AppliedAttempt(second, "by current", utcnow())], worker=current.worker
    )
    assert took_over == {decision_id: True}
    # The stale attempt's failure: fenced off the work list (it names attempt 1).
    state = await apply.record_failure(
        db,
        first,
        error="timed out",
        permanent=False,
        retry_at=utcnow(),
        worker=stale.worker,
        started_at=utcnow(),
    )
    assert state is None
    # Its late success: a repeat, not a second proof.
    late = await apply.record_applied_batch(
        db, [AppliedAttempt(first, "by stale", utcnow())], worker=stale.worker
    )
    assert late == {decision_id: False}

    row = await owner_conn.fetchrow(
        "SELECT a.state, p.note, (SELECT count(*) FROM applied_decisions "
        " WHERE decision_id = $1) AS proofs "
        "FROM decision_applications AS a JOIN applied_decisions AS p USING (decision_id) "
        "WHERE a.decision_id = $1",
        decision_id,
    )
    assert row is not None
    assert (row["state"], row["note"], row["proofs"]) == ("applied", "by current", 1)
    outcomes = await owner_conn.fetch(
        "SELECT worker, attempt, outcome, error FROM apply_attempts "
        "WHERE decision_id = $1 ORDER BY id",
        decision_id,
    )
    assert [tuple(r) for r in outcomes] == [
        ("current", 2, "applied", None),
        ("stale", 1, "transient", "timed out"),
        ("stale", 1, "applied", "already applied"),
    ]


async def test_two_overlapping_batches_recorded_at_once_prove_each_decision_once(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    test_database: TestDatabase,
    queries: Queries,
) -> None:
    decision_ids = await make_decisions(db, kyc_queue, 3)
    claimed = await claim_due(db, 10, Liveness(uuid.uuid4(), "claimer", 3600.0))
    assert sorted(due.decision_id for due in claimed) == sorted(decision_ids)
    ordered = sorted(claimed, key=lambda due: due.decision_id)
    batches = {"left": ordered[:2], "right": ordered[::-1]}
    first = await connect(test_database.app_dsn)
    second = await connect(test_database.app_dsn)
    try:
        pids = [first.get_server_pid(), second.get_server_pid()]
        # The owner holds every work-list row, so both batches are in flight before either
        # can finish; then it lets go.
        async with owner_conn.transaction():
            await owner_conn.execute(
                "SELECT 1 FROM decision_applications WHERE decision_id = ANY($1) FOR UPDATE",
                decision_ids,
            )
            recordings = [
                asyncio.create_task(
                    apply.record_applied_batch(
                        Database(conn, queries),
                        [AppliedAttempt(due, f"by {name}", utcnow()) for due in batch],
                        worker=name,
                    )
                )
                for conn, (name, batch) in zip((first, second), batches.items(), strict=True)
            ]

            async def both_waiting() -> bool:
                waiting = await owner_conn.fetchval(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE pid = ANY($1::int[]) AND wait_event_type = 'Lock'",
                    pids,
                )
                return bool(waiting == 2)

            await wait_until(both_waiting, within=10, what="both batches blocked")
        left, right = await asyncio.gather(*recordings)
    finally:
        await first.close()
        await second.close()

    for decision_id in decision_ids:
        said = [found[decision_id] for found in (left, right) if decision_id in found]
        assert said.count(True) == 1, (decision_id, left, right)
    proofs = await owner_conn.fetchval(
        "SELECT count(*) FROM applied_decisions WHERE decision_id = ANY($1)", decision_ids
    )
    assert proofs == len(decision_ids)
    # Both recorded their attempts: one as done, the other (if it overlapped) as a repeat.
    rows = await owner_conn.fetch(
        "SELECT decision_id, count(*) FILTER (WHERE error IS NULL) AS done, "
        "count(*) FILTER (WHERE error = 'already applied') AS repeats "
        "FROM apply_attempts WHERE decision_id = ANY($1) GROUP BY decision_id",
        decision_ids,
    )
    overlapping = {due.decision_id for due in batches["left"]}
    assert {r["decision_id"]: (r["done"], r["repeats"]) for r in rows} == {
        decision_id: (1, 1 if decision_id in overlapping else 0) for decision_id in decision_ids
    }
