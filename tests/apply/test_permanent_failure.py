"""What cannot be carried out ends `failed`, visibly, and is not retried: a refusal (4xx) at
once, a receiver that keeps failing once the attempts run out. A 429's Retry-After is
honoured. Each against a real `casework worker` process and a real HTTP receiver."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta
from typing import Any

import asyncpg

from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import in_process_client
from tests.apply.helpers import (
    application_row,
    attempt_rows,
    effect_receiver,
    inconsistencies,
    make_decision,
    reaches,
    wait_until,
    worker_env,
    worker_processes,
)
from tests.apply.receiver import OK, Action, Receiver, Reply, Request, always
from tests.conftest import TestDatabase

# Longer than the worker's poll backstop (1 s) plus any first backoff (0.05 s * 1.5): a
# retry that were going to happen would happen inside it.
QUIET_SECONDS = 2.5

APPLICATION = """
query($id: ID!, $queue: String!) {
  decision(id: $id) {
    application {
      state attempts lastError nextAttemptAt appliedAt note
      history { attempt worker outcome error nextRetryAt startedAt finishedAt }
    }
  }
  queue(name: $queue) {
    stats(lagThresholdSeconds: 3600) {
      unappliedDecisions unappliedOlderThanThreshold oldestUnappliedAgeSeconds failedApplications
    }
  }
}
"""


async def stays_failed(
    conn: asyncpg.Connection, receiver: Receiver, decision_id: int, attempts: int
) -> None:
    """Watches for QUIET_SECONDS: the decision stays failed after `attempts` attempts, and
    the receiver sees no other request for it.

    A negative check: no event says "nothing happened", so it polls for a bounded window."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + QUIET_SECONDS
    while loop.time() < deadline:
        row = await application_row(conn, decision_id)
        assert (row["state"], row["attempts"]) == ("failed", attempts), dict(row)
        assert len(receiver.requests_for(decision_id)) == attempts
        await asyncio.sleep(0.1)


def by_external_key(refused: Action) -> Any:
    """`refused` for items whose external key starts with "refused", 200 for the others."""

    def policy(request: Request) -> Action:
        return refused if request.json()["externalKey"].startswith("refused") else OK

    return policy


async def test_a_400_fails_the_decision_after_one_attempt_visibly_and_for_good(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    owner_db: Database,
    test_database: TestDatabase,
) -> None:
    refusal = Reply(400, body=b'{"error":"unknown customer"}')
    async with effect_receiver(db, kyc_queue, by_external_key(refusal), max_attempts=8) as receiver:
        decision_id = await make_decision(db, kyc_queue, "refused")
        async with worker_processes(worker_env(test_database), 1) as (worker,):
            await reaches(
                owner_conn, decision_id, "failed", within=20, what="the refused decision failed"
            )
            # The worker goes on working (it applies a later decision) and does not retry.
            later = await make_decision(db, kyc_queue, "fine")

            await reaches(owner_conn, later, "applied", within=20, what="a later decision applied")
            await stays_failed(owner_conn, receiver, decision_id, 1)
            assert await worker.terminate() == 0, worker.log

    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert (attempt["attempt"], attempt["outcome"], attempt["worker"]) == (
        1,
        "permanent",
        worker.name,
    )
    assert attempt["error"].startswith("webhook answered 400"), attempt["error"]
    assert "unknown customer" in attempt["error"]
    assert attempt["next_retry_at"] is None
    row = await application_row(owner_conn, decision_id)
    assert (row["attempts"], row["locked_until"], row["last_error"]) == (
        1,
        None,
        attempt["error"],
    )
    assert (
        await owner_conn.fetchval(
            "SELECT count(*) FROM applied_decisions WHERE decision_id = $1", decision_id
        )
        == 0
    )
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
    # Raised for a person: the worker logs it as an error.
    assert f"decision {decision_id} could not be carried out after 1 attempt(s)" in worker.log

    # Visible in GraphQL: the application and the queue's count of failures.
    admin = await create_token(owner_db, user="ada", role=Role.ADMIN, queues=[])
    async with in_process_client(test_database, dev=False) as client:
        response = await client.post(
            "/graphql",
            json={"query": APPLICATION, "variables": {"id": str(decision_id), "queue": kyc_queue}},
            headers={"Authorization": f"Bearer {admin}"},
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body
    application = body["data"]["decision"]["application"]
    assert application["state"] == "FAILED"
    assert application["attempts"] == 1
    assert application["lastError"] == attempt["error"]
    assert (application["nextAttemptAt"], application["appliedAt"], application["note"]) == (
        None,
        None,
        None,
    )
    (history,) = application["history"]
    assert history["attempt"] == 1
    assert history["worker"] == worker.name
    assert history["outcome"] == "permanent"
    assert history["error"] == attempt["error"]
    assert history["nextRetryAt"] is None
    assert body["data"]["queue"]["stats"] == {
        "unappliedDecisions": 0,
        "unappliedOlderThanThreshold": 0,
        "oldestUnappliedAgeSeconds": None,
        "failedApplications": 1,
    }


async def test_attempts_exhausted_on_a_receiver_that_keeps_failing_end_failed(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    async with effect_receiver(
        db, kyc_queue, always(Reply(503, body=b"down")), max_attempts=3
    ) as receiver:
        decision_id = await make_decision(db, kyc_queue, "unlucky")
        async with worker_processes(worker_env(test_database), 1) as (worker,):
            await reaches(owner_conn, decision_id, "failed", within=20, what="the decision failed")
            await stays_failed(owner_conn, receiver, decision_id, 3)
            assert await worker.terminate() == 0, worker.log

    attempts = await attempt_rows(owner_conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [
        (1, "transient"),
        (2, "transient"),
        (3, "permanent"),
    ]
    assert all(a["error"].startswith("webhook answered 503") for a in attempts)
    # The retries waited as scheduled, and the last attempt schedules none.
    assert [a["next_retry_at"] is None for a in attempts] == [False, False, True]
    for earlier, later in itertools.pairwise(attempts):
        assert later["started_at"] >= earlier["next_retry_at"]
    assert f"decision {decision_id} could not be carried out after 3 attempt(s)" in worker.log
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []


async def test_a_429_retry_after_delays_the_next_attempt(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    answers = iter([Reply(429, headers=(("Retry-After", "2"),), body=b"slow down")])

    def policy(request: Request) -> Action:
        return next(answers, OK)

    async with effect_receiver(db, kyc_queue, policy) as receiver:
        decision_id = await make_decision(db, kyc_queue, "throttled")
        async with worker_processes(worker_env(test_database), 1) as (worker,):
            first_arrival = await receiver.next_arrival()

            async def first_recorded() -> list[asyncpg.Record]:
                return await attempt_rows(owner_conn, decision_id)

            (first,) = await wait_until(first_recorded, within=10, what="the 429 recorded")
            row = await application_row(owner_conn, decision_id)
            assert (row["state"], row["next_attempt_at"]) == ("pending", first["next_retry_at"])
            second_arrival = await receiver.next_arrival()

            await reaches(
                owner_conn, decision_id, "applied", within=10, what="the decision applied"
            )
            assert await worker.terminate() == 0, worker.log

    assert first["outcome"] == "transient"
    assert first["error"].startswith("webhook answered 429")
    # Backoff from 0.05 s would retry within ~0.1 s; the receiver asked for 2.
    assert first["next_retry_at"] - first["started_at"] >= timedelta(seconds=2)
    assert second_arrival.received_at - first_arrival.received_at >= 2.0
    attempts = await attempt_rows(owner_conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "transient"), (2, "applied")]
    assert attempts[1]["started_at"] >= first["next_retry_at"]


async def test_a_refusal_with_a_nul_byte_in_its_body_is_recorded_failed_too(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    """PostgreSQL text holds no NUL: the error is kept with a replacement character, rather
    than making every recording of the attempt fail (which left the decision locked, then
    retried, forever, with no attempt ever recorded)."""
    refusal = Reply(400, body=b'{"error":"bad\x00input"}')
    async with effect_receiver(db, kyc_queue, always(refusal)):
        decision_id = await make_decision(db, kyc_queue, "nul")
        async with worker_processes(worker_env(test_database), 1) as (worker,):
            await reaches(
                owner_conn, decision_id, "failed", within=10, what="the refused decision failed"
            )
            assert await worker.terminate() == 0, worker.log

    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert attempt["outcome"] == "permanent"
    assert "bad\ufffdinput" in attempt["error"]
    assert (await application_row(owner_conn, decision_id))["last_error"] == attempt["error"]
    assert "Traceback" not in worker.log, worker.log
