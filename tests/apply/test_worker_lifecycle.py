"""Running the worker: `casework serve` carries decisions out unless told `--no-worker`;
`casework worker` stops on SIGTERM promptly, finishing what it has in flight and claiming
nothing more, and a shutdown that abandons an attempt leaves it consistent and retried."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import asyncpg
import httpx

from server.domain.review.apply import DueApplication
from server.effects.http import Session
from server.store.database import Database
from server.worker import ApplyWorker, WorkerSettings
from tests.api.live_server import casework_serve_process
from tests.apply.helpers import (
    application_row,
    attempt_rows,
    configure_effect,
    effect_receiver,
    inconsistencies,
    make_decision,
    reaches,
    wait_until,
    webhook,
    worker_env,
    worker_name,
    worker_processes,
)
from tests.apply.receiver import OK, Action, Hold, Request, Stall
from tests.conftest import TestDatabase

# Longer than the worker's poll backstop (1 s): a worker that were there would have claimed.
QUIET_SECONDS = 2.0
GRACE_SECONDS = 10.0  # server.worker.GRACE_SECONDS, what "promptly" is measured against


async def healthz(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_serve_carries_decisions_out_in_process_by_default(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    async with (
        effect_receiver(db, kyc_queue) as receiver,
        casework_serve_process(worker_env(test_database)) as served,
    ):
        decision_id = await make_decision(db, kyc_queue, "served")
        await reaches(
            owner_conn, decision_id, "applied", within=20, what="applied by casework serve"
        )
        assert (await healthz(served.url))["worker"]["applied"] == 1

    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert (attempt["outcome"], attempt["worker"]) == ("applied", worker_name(served.pid))
    assert [request.key for request in receiver.requests] == [str(decision_id)]


async def test_serve_no_worker_leaves_decisions_to_casework_worker(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    env = worker_env(test_database)
    async with (
        effect_receiver(db, kyc_queue) as receiver,
        casework_serve_process(env, "--no-worker") as served,
    ):
        assert (await healthz(served.url))["worker"] is None
        decision_id = await make_decision(db, kyc_queue, "left")
        # A negative check, bounded: nothing in serve takes the decision up, past the
        # time a worker's hint or poll would have.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUIET_SECONDS
        while loop.time() < deadline:
            row = await application_row(owner_conn, decision_id)
            assert (row["state"], row["attempts"]) == ("pending", 0), dict(row)
            assert receiver.requests == []
            await asyncio.sleep(0.1)

        async with worker_processes(env, 1) as (worker,):
            await reaches(
                owner_conn, decision_id, "applied", within=20, what="applied by casework worker"
            )
            assert await worker.terminate() == 0, worker.log

    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert (attempt["outcome"], attempt["worker"]) == ("applied", worker.name)


async def test_sigterm_finishes_attempts_in_flight_claims_nothing_more_and_exits_0(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    """Two attempts in flight at SIGTERM: one the receiver answers later (applied), one it
    never answers (times out, recorded for a retry). A third decision waiting for a slot is
    not taken up. The worker exits 0 as soon as its attempts are done."""
    release = asyncio.Event()

    def policy(request: Request) -> Action:
        key = request.json()["externalKey"]
        return Hold(release, OK) if key.startswith("answered") else Stall()

    # Per queue: the stalled attempt gives up well before the answered one would.
    timeout, patient = 1.0, 8.0
    senior = "kyc-senior"
    async with effect_receiver(db, kyc_queue, policy, timeout_seconds=timeout) as receiver:
        await configure_effect(db, senior, webhook(receiver.url), timeout_seconds=patient)
        env = worker_env(test_database)
        async with worker_processes(env, 1, "--concurrency", "2") as (worker,):
            answered = await make_decision(db, senior, "answered")
            stalled = await make_decision(db, kyc_queue, "stalled")
            arrived = {(await receiver.next_arrival()).key for _ in range(2)}
            assert arrived == {str(answered), str(stalled)}
            # Both slots are busy: this one waits on the work list.
            queued = await make_decision(db, kyc_queue, "queued")
            worker.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()

            async def stalled_recorded() -> bool:
                return bool(await attempt_rows(owner_conn, stalled))

            # The stalled attempt ends by its timeout, a slot frees up, and still nothing
            # new is claimed. Then the receiver answers the other one.
            await wait_until(stalled_recorded, within=timeout + 5, what="the timeout recorded")
            release.set()
            released = time.monotonic()
            code = await worker.wait()
            exited = time.monotonic()

    assert code == 0, worker.log
    assert "Traceback" not in worker.log, worker.log
    assert exited - signalled < GRACE_SECONDS, "waited out the grace period"
    assert exited - released < 5, "exited late after its last attempt ended"

    done = await application_row(owner_conn, answered)
    assert (done["state"], done["attempts"], done["locked_until"]) == ("applied", 1, None)
    retry = await application_row(owner_conn, stalled)
    assert (retry["state"], retry["attempts"], retry["locked_until"]) == ("pending", 1, None)
    (timed_out,) = await attempt_rows(owner_conn, stalled)
    assert timed_out["outcome"] == "transient"
    assert timed_out["error"] == f"timed out after {timeout:g} s"
    assert timed_out["next_retry_at"] == retry["next_attempt_at"]
    untouched = await application_row(owner_conn, queued)
    assert (untouched["state"], untouched["attempts"], untouched["locked_until"]) == (
        "pending",
        0,
        None,
    )
    assert receiver.requests_for(queued) == []
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []


async def test_an_attempt_abandoned_at_shutdown_is_taken_over_at_once_by_the_next_worker(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    """Past the grace period the attempt is cancelled: nothing recorded, the claim's lock
    still in place, but the stopping worker marks its liveness ended, so the next worker
    carries the decision out without waiting for the lock to lapse."""
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def never_ends(client: Session, due: DueApplication) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    settings = WorkerSettings(concurrency=1, poll_seconds=0.05, grace_seconds=0.2)
    worker = ApplyWorker(db, settings, name="stopping", perform_effect=never_ends)
    run = asyncio.create_task(worker.run())
    decision_id = await make_decision(db, kyc_queue, "abandoned")
    worker.wake()
    await asyncio.wait_for(started.wait(), 10)
    worker.stop()
    await asyncio.wait_for(run, 5)

    assert cancelled.is_set()
    row = await application_row(owner_conn, decision_id)
    assert (row["state"], row["attempts"], row["locked"]) == ("pending", 1, True)
    assert await attempt_rows(owner_conn, decision_id) == []
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []

    # The lock runs for a while yet (twice the effect timeout plus 10 s); the claim's
    # worker has left, so it is taken over now.
    successor = ApplyWorker(db, settings, name="successor")
    run = asyncio.create_task(successor.run())
    try:
        await reaches(
            owner_conn, decision_id, "applied", within=10, what="taken over before the lock lapsed"
        )
    finally:
        successor.stop()
        await run
    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert (attempt["attempt"], attempt["worker"], attempt["outcome"]) == (
        2,
        "successor",
        "applied",
    )
