"""Repeats commit once: the same decision applied twice at the same moment, by two
connections or by two workers, leaves one proof and one "applied" answer. A queue with no
effect still records its decisions applied, and an overturn is carried out with what the
receiver needs to reverse the outcome it supersedes."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from server.domain.model import Decision
from server.domain.review.apply import (
    DueApplication,
    Liveness,
    claim_due,
    record_applied,
    utcnow,
)
from server.domain.review.decisions import OverturnInput, overturn_decision
from server.effects.http import Session
from server.store import sql
from server.store.database import Database, Row, connect, create_pool
from server.store.queries import P, Queries, Query
from server.worker import ApplyWorker
from tests.apply.helpers import (
    FAST,
    SECRET,
    application_row,
    attempt_rows,
    configure_effect,
    inconsistencies,
    make_decision,
    make_decisions,
    reaches,
    running,
    wait_until,
    webhook,
    worker_env,
    worker_processes,
)
from tests.apply.receiver import Request, webhook_receiver
from tests.conftest import APPROVER, TestDatabase
from tests.integration.helpers import CLAIMER

Effect = Callable[[Session, DueApplication], Awaitable[str]]


async def proofs(conn: asyncpg.Connection, decision_id: int) -> int:
    count: int = await conn.fetchval(
        "SELECT count(*) FROM applied_decisions WHERE decision_id = $1", decision_id
    )
    return count


async def waiting_on_locks(owner: asyncpg.Connection, pids: list[int]) -> bool:
    waiting = await owner.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY ($1) AND wait_event_type = 'Lock'",
        pids,
    )
    return bool(waiting == len(pids))


async def test_recording_one_application_twice_at_once_commits_it_once(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    test_database: TestDatabase,
    queries: Queries,
) -> None:
    decision_id = await make_decision(db, kyc_queue, "twice")
    (due,) = await claim_due(db, 1, CLAIMER)
    first = await connect(test_database.app_dsn)
    second = await connect(test_database.app_dsn)
    try:
        pids = [first.get_server_pid(), second.get_server_pid()]
        # The owner holds the work-list row, so both recordings are in flight together
        # before either can finish; then it lets go.
        async with owner_conn.transaction():
            await owner_conn.execute(
                "SELECT 1 FROM decision_applications WHERE decision_id = $1 FOR UPDATE",
                decision_id,
            )
            recordings = [
                asyncio.create_task(
                    record_applied(
                        Database(conn, queries),
                        due,
                        note=f"by {name}",
                        worker=name,
                        started_at=utcnow(),
                    )
                )
                for conn, name in ((first, "first"), (second, "second"))
            ]

            async def both_waiting() -> bool:
                return await waiting_on_locks(owner_conn, pids)

            await wait_until(both_waiting, within=10, what="both recordings blocked")
        results = await asyncio.gather(*recordings)
    finally:
        await first.close()
        await second.close()

    assert sorted(results) == [False, True]
    assert await proofs(owner_conn, decision_id) == 1
    winner = "first" if results[0] else "second"
    note = await owner_conn.fetchval(
        "SELECT note FROM applied_decisions WHERE decision_id = $1", decision_id
    )
    assert note == f"by {winner}"
    attempts = await attempt_rows(owner_conn, decision_id)
    assert sorted((a["worker"], a["outcome"], a["error"]) for a in attempts) == sorted(
        [
            (winner, "applied", None),
            ("second" if winner == "first" else "first", "applied", "already applied"),
        ]
    )
    row = await application_row(owner_conn, decision_id)
    assert (row["state"], row["locked_until"]) == ("applied", None)


class CountingClaims(Database):
    """A worker's own pool, counting the claims it has made."""

    claims = 0

    async def fetch(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> list[Row]:
        rows = await super().fetch(query, *args, **kwargs)
        if query is sql.applications.APPLICATIONS_CLAIM:
            self.claims += 1
        return rows


async def test_two_workers_on_one_due_decision_attempt_it_once(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    """Both workers start on a due decision at once; while one carries it out, the other
    keeps claiming and does not get it."""
    calls: list[str] = []
    started, release = asyncio.Event(), asyncio.Event()

    def effect(name: str) -> Effect:
        async def perform(client: Session, due: DueApplication) -> str:
            calls.append(name)
            started.set()
            await release.wait()
            return f"done by {name}"

        return perform

    decision_id = await make_decision(db, kyc_queue, "raced")
    pools = [await create_pool(test_database.app_dsn, min_size=1, max_size=4) for _ in "ab"]
    try:
        dbs = [CountingClaims(pool, db.queries) for pool in pools]
        workers = [
            ApplyWorker(worker_db, FAST, name=name, perform_effect=effect(name))
            for worker_db, name in zip(dbs, "ab", strict=True)
        ]
        async with running(workers[0]), running(workers[1]):
            await asyncio.wait_for(started.wait(), 10)
            # The worker that did not get it.
            other = dbs[1] if calls[0] == "a" else dbs[0]
            claims_then = other.claims

            async def claimed_twice_more() -> bool:
                return other.claims >= claims_then + 2

            await wait_until(claimed_twice_more, within=10, what="the other worker claiming")
            release.set()

            await reaches(
                owner_conn, decision_id, "applied", within=10, what="the decision applied"
            )
    finally:
        for pool in pools:
            await pool.close()

    assert len(calls) == 1, calls
    assert sum(worker.stats.applied for worker in workers) == 1
    assert sum(worker.stats.already_applied for worker in workers) == 0
    assert await proofs(owner_conn, decision_id) == 1


async def test_a_lapsed_lock_makes_two_workers_apply_at_once_and_one_commits(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    """A worker slower than its lock (a stall, a pause): another takes the decision up, and
    both effects finish together. The proof is written once; the second is told so."""
    started = {"a": asyncio.Event(), "b": asyncio.Event()}
    release = asyncio.Event()

    def effect(name: str) -> Effect:
        async def perform(client: Session, due: DueApplication) -> str:
            started[name].set()
            await release.wait()
            return f"done by {name}"

        return perform

    # One slot for `a`, held by its stalled effect: once the lock lapses, only `b` may take the
    # decision up (with free slots, `a` polling could claim it again before `b` starts).
    a = ApplyWorker(
        db, dataclasses.replace(FAST, concurrency=1), name="a", perform_effect=effect("a")
    )
    b = ApplyWorker(db, FAST, name="b", perform_effect=effect("b"))
    async with running(a):
        decision_id = await make_decision(db, kyc_queue, "slow")
        a.wake()
        await asyncio.wait_for(started["a"].wait(), 10)
        # The lock lapses as if `a` had run past it.
        await owner_conn.execute(
            "UPDATE decision_applications SET locked_until = now() WHERE decision_id = $1",
            decision_id,
        )
        async with running(b):
            await asyncio.wait_for(started["b"].wait(), 10)
            release.set()

            async def both_recorded() -> bool:
                return len(await attempt_rows(owner_conn, decision_id)) == 2

            await wait_until(both_recorded, within=10, what="both attempts recorded")

    assert a.stats.applied + b.stats.applied == 1
    assert a.stats.already_applied + b.stats.already_applied == 1
    assert await proofs(owner_conn, decision_id) == 1
    attempts = await attempt_rows(owner_conn, decision_id)
    assert sorted((t["worker"], t["attempt"]) for t in attempts) == [("a", 1), ("b", 2)]
    assert sorted(t["error"] or "" for t in attempts) == ["", "already applied"]
    row = await application_row(owner_conn, decision_id)
    assert (row["state"], row["attempts"], row["locked_until"]) == ("applied", 2, None)


async def test_a_queue_without_an_effect_records_its_decisions_applied(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    decision_id = await make_decision(db, kyc_queue, "plain")
    async with worker_processes(worker_env(test_database), 1) as (worker,):
        await reaches(owner_conn, decision_id, "applied", within=20, what="the decision applied")
        assert await worker.terminate() == 0, worker.log

    note = await owner_conn.fetchval(
        "SELECT note FROM applied_decisions WHERE decision_id = $1", decision_id
    )
    assert note == "no effect"
    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert (attempt["outcome"], attempt["error"], attempt["worker"]) == (
        "applied",
        None,
        worker.name,
    )


async def test_an_overturn_is_applied_with_the_outcome_it_reverses(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    async def overturn(target: int, reason_code: str) -> int:
        result = await overturn_decision(db, APPROVER, OverturnInput(str(target), reason_code))
        assert isinstance(result, Decision), result
        return result.id

    async with (
        webhook_receiver(SECRET) as receiver,
        worker_processes(worker_env(test_database), 1) as (worker,),
    ):
        await configure_effect(db, kyc_queue, webhook(receiver.url))
        approved = await make_decision(db, kyc_queue, "reversed")
        rejected = await overturn(approved, "name_mismatch")
        approved_again = await overturn(rejected, "documents_ok")

        async def all_applied() -> bool:
            states = await owner_conn.fetchval(
                "SELECT array_agg(DISTINCT state) FROM decision_applications"
            )
            return bool(states == ["applied"])

        await wait_until(all_applied, within=20, what="the decision and its overturns applied")
        assert await worker.terminate() == 0, worker.log

    def body(decision_id: int) -> dict[str, Any]:
        requests: list[Request] = receiver.requests_for(decision_id)
        assert len(requests) == 1, requests
        assert requests[0].signature_ok
        return requests[0].json()

    original, first, second = body(approved), body(rejected), body(approved_again)
    assert (original["isOverturn"], original["verdict"], original["supersedes"]) == (
        False,
        "APPROVE",
        None,
    )
    assert (first["decisionId"], first["isOverturn"], first["verdict"]) == (
        str(rejected),
        True,
        "REJECT",
    )
    assert first["supersedes"] == {"decisionId": str(approved), "verdict": "APPROVE"}
    assert second["supersedes"] == {"decisionId": str(rejected), "verdict": "REJECT"}
    assert second["verdict"] == "APPROVE"
    assert original["itemId"] == first["itemId"] == second["itemId"]
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []


async def test_workers_starting_at_once_never_claim_one_decision_twice(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    """A worker's first claim registers its liveness in the same statement. Another claim
    whose snapshot predates that commit reaches the row after it, and PostgreSQL re-checks
    the row against its new version while reading the liveness table through the older
    snapshot: it must not read a worker it cannot see yet as one that has lapsed. Each round
    is two new worker runs claiming at once, as two workers starting together do; each pass
    hands every decision out once, and the owner then frees them for the next pass."""
    decisions = sorted(await make_decisions(db, kyc_queue, 40, prefix="start"))
    pools = [await create_pool(test_database.app_dsn, min_size=1, max_size=1) for _ in "ab"]
    passes: list[list[int]] = []
    try:
        workers = [Database(pool, db.queries) for pool in pools]
        for _ in range(15):
            claimed: list[int] = []
            while True:
                runs = [Liveness(uuid.uuid4(), name, 10.0) for name in "ab"]
                rounds = await asyncio.gather(
                    *(claim_due(worker, 1, run) for worker, run in zip(workers, runs, strict=True))
                )
                taken = [due.decision_id for batch in rounds for due in batch]
                if not taken:
                    break
                claimed.extend(taken)
            passes.append(sorted(claimed))
            await owner_conn.execute(
                "UPDATE decision_applications SET locked_until = NULL, locked_by = NULL"
            )
    finally:
        for pool in pools:
            await pool.close()

    twice = [
        (number, decision_id)
        for number, claimed in enumerate(passes)
        for decision_id in set(claimed)
        if claimed.count(decision_id) > 1
    ]
    assert twice == []
    assert passes == [decisions] * len(passes)
