"""A dead worker's claims are taken over within its liveness lease, not after their lock.

Two real `casework worker` processes. The first claims four decisions and posts them to a
receiver that holds every request (an attempt in flight, slow but alive). While it is alive
the second worker, polling beside it, takes none of them over, however long the attempts
take. Then the first is SIGKILLed mid-attempt: the second takes all four over within the
lease (plus a poll), long before their locks (twice the 30 s effect timeout plus ten seconds)
would have lapsed. Each decision is applied once at the receiver (keyed by its id) and its
proof is recorded once, by the second worker.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from server.domain.review import apply
from server.domain.review.apply import DueApplication
from server.effects.http import Session
from server.store.database import Database
from server.worker import ApplyWorker, WorkerSettings
from tests.apply.helpers import (
    attempt_rows,
    effect_receiver,
    inconsistencies,
    make_decisions,
    running,
    wait_until,
    worker_env,
    worker_processes,
)
from tests.apply.receiver import OK, Action, Hold, Request
from tests.conftest import TestDatabase

LEASE_SECONDS = 3.0
EFFECT_TIMEOUT_SECONDS = 30.0
OLD_BOUND_SECONDS = 2 * EFFECT_TIMEOUT_SECONDS + 10
# The worker's poll backstop (server.worker.POLL_SECONDS) and room for a loaded machine.
TAKEOVER_BOUND_SECONDS = LEASE_SECONDS + 1.0 + 2.0
DECISIONS = 4


async def claims(conn: asyncpg.Connection, decision_ids: list[int]) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await conn.fetch(
        "SELECT a.decision_id, a.attempts, a.state, w.name AS claimer "
        "FROM decision_applications AS a LEFT JOIN apply_workers AS w ON w.id = a.locked_by "
        "WHERE a.decision_id = ANY($1::bigint[]) ORDER BY a.decision_id",
        decision_ids,
    )
    return rows


async def test_a_killed_workers_claims_are_taken_over_within_its_lease_and_applied_once(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    loop = asyncio.get_running_loop()
    never = asyncio.Event()
    first_worker_alive = True

    def policy(request: Request) -> Action:
        # Slow but alive: the first worker's attempts are held for as long as it lives.
        return Hold(never) if first_worker_alive else OK

    env = worker_env(test_database, CASEWORK_WORKER_LEASE_SECONDS=f"{LEASE_SECONDS:g}")
    async with (
        effect_receiver(db, kyc_queue, policy, timeout_seconds=EFFECT_TIMEOUT_SECONDS) as receiver,
        worker_processes(env, 1, "--concurrency", "8") as workers,
    ):
        (first,) = workers
        decision_ids = await make_decisions(db, kyc_queue, DECISIONS)
        held = {(await receiver.next_arrival()).key for _ in range(DECISIONS)}
        assert held == {str(n) for n in decision_ids}
        assert {row["claimer"] for row in await claims(owner_conn, decision_ids)} == {first.name}

        # A second worker beside it, polling; it renews its own liveness.
        async with worker_processes(env, 1) as (second,):

            async def second_alive() -> bool:
                return bool(
                    await owner_conn.fetchval(
                        "SELECT count(*) FROM apply_workers "
                        "WHERE name = $1 AND alive_until > now()",
                        second.name,
                    )
                )

            await wait_until(second_alive, within=20, what="the second worker running")
            # Longer than the lease: an alive worker keeps its claims, slow as it is.
            quiet_until = loop.time() + LEASE_SECONDS + 2.0
            while loop.time() < quiet_until:
                rows = await claims(owner_conn, decision_ids)
                assert [(row["attempts"], row["claimer"]) for row in rows] == [
                    (1, first.name)
                ] * DECISIONS, [dict(row) for row in rows]
                assert len(receiver.requests) == DECISIONS
                await asyncio.sleep(0.1)

            first_worker_alive = False
            await first.kill()
            killed = loop.time()
            taken = {(await receiver.next_arrival(within=30)).key for _ in range(DECISIONS)}
            taken_within = loop.time() - killed
            assert taken == held

            async def all_applied() -> bool:
                rows = await claims(owner_conn, decision_ids)
                return all(row["state"] == "applied" for row in rows)

            await wait_until(all_applied, within=15, what="all four applied")
            assert await second.terminate() == 0, second.log

    assert taken_within <= TAKEOVER_BOUND_SECONDS < OLD_BOUND_SECONDS, taken_within
    # Applied once at the receiver: one answered request per decision id.
    answered = sorted(request.key for request, status in receiver.replies if status == 200)
    assert answered == sorted(str(n) for n in decision_ids)
    for decision_id in decision_ids:
        (attempt,) = await attempt_rows(owner_conn, decision_id)
        assert (attempt["attempt"], attempt["outcome"], attempt["worker"]) == (
            2,
            "applied",
            second.name,
        )
    proofs = await owner_conn.fetchval(
        "SELECT count(*) FROM applied_decisions WHERE decision_id = ANY($1::bigint[])",
        decision_ids,
    )
    assert proofs == DECISIONS
    assert await inconsistencies(owner_conn, every_attempt_recorded=False) == []
    assert "Traceback" not in second.log, second.log


async def test_a_worker_that_cannot_renew_its_liveness_abandons_its_attempts_in_time(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Alive, but its renewals fail (its database away for it alone, its loop stalled): it
    cancels its attempt before its lease could have lapsed for anyone else, and goes on
    under a new id; its old claim is then another worker's to take."""
    started = asyncio.Event()
    cancelled_at: list[float] = []
    loop = asyncio.get_running_loop()

    async def slow(client: Session, due: DueApplication) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled_at.append(loop.time())
            raise
        raise AssertionError("unreachable")

    async def unreachable(db: Database, liveness: apply.Liveness) -> None:
        raise ConnectionResetError("the database is away for this worker")

    settings = WorkerSettings(
        concurrency=1, poll_seconds=0.05, grace_seconds=0.5, lease_seconds=LEASE_SECONDS
    )
    worker = ApplyWorker(db, settings, name="isolated", perform_effect=slow)
    first_run = worker.liveness.current
    monkeypatch.setattr(apply, "renew_liveness", unreachable)
    async with running(worker):
        decision_id = (await make_decisions(db, kyc_queue, 1))[0]
        worker.wake()
        await asyncio.wait_for(started.wait(), 10)
        claimed_by = await owner_conn.fetchval(
            "SELECT locked_by FROM decision_applications WHERE decision_id = $1", decision_id
        )
        claimed_at = loop.time()

        async def fenced() -> bool:
            return bool(cancelled_at)

        await wait_until(fenced, within=LEASE_SECONDS * 2, what="the attempt abandoned")
        lapses_at = await owner_conn.fetchval(
            "SELECT extract(epoch FROM alive_until - now()) FROM apply_workers WHERE id = $1",
            first_run.worker_id,
        )

    assert claimed_by == first_run.worker_id
    # Cancelled within its lease as this worker counts it (it aims at worker_liveness.FENCE_AT
    # of it; the rest is the margin for a loop that runs late on a busy machine), and before
    # the row lapsed.
    assert cancelled_at[0] - claimed_at < LEASE_SECONDS
    assert lapses_at > 0, "the lease lapsed before the worker let its attempt go"
    assert worker.liveness.current.worker_id != first_run.worker_id
    assert worker.liveness.fenced >= 1
    assert await attempt_rows(owner_conn, decision_id) == []
    assert any("abandoned 1 attempt(s)" in record.getMessage() for record in caplog.records)
