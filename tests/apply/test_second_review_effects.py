"""Second review and the apply worker (migration 0020): the effect of a decision that needs a
second review is sent exactly once, and only after its confirmation, however many workers
run over the work list before it; an override's effect is sent in its place, and the
provisional decision's never. Real `casework worker` processes, a real HTTP receiver."""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from server.domain.model import Verdict
from server.store.database import Database
from tests.apply.helpers import (
    effect_receiver,
    inconsistencies,
    make_decision,
    reaches,
    start_worker,
    worker_env,
    worker_processes,
)
from tests.apply.receiver import Receiver
from tests.conftest import TestDatabase
from tests.integration.helpers import claim
from tests.integration.second_review import (
    BOB,
    SECOND_REVIEW_QUEUE,
    confirm,
    override,
    provisional_rejection,
    require_second_review,
)

APPLIED_WITHIN = 20.0


async def applied(owner: asyncpg.Connection, decision_id: int) -> None:
    """Until the worker has carried the decision out (no signal crosses the process)."""

    await reaches(
        owner, decision_id, "applied", within=APPLIED_WITHIN, what=f"decision {decision_id} applied"
    )


async def enlisted(owner: asyncpg.Connection, decision_id: int) -> bool:
    return bool(
        await owner.fetchval(
            "SELECT count(*) FROM decision_applications WHERE decision_id = $1", decision_id
        )
    )


def only_body(receiver: Receiver, decision_id: int) -> dict[str, Any]:
    (request,) = receiver.requests_for(decision_id)
    assert request.signature_ok
    return request.json()


async def test_no_effect_before_confirmation_across_restarts_then_exactly_one(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    env = worker_env(test_database)
    async with effect_receiver(db, kyc_queue) as receiver, worker_processes(env, 1) as workers:
        await require_second_review(db)
        provisional = await provisional_rejection(db, "held-back")

        # A first worker runs over the work list: an effective decision made after the
        # provisional one is carried out, and the provisional one is not.
        first_marker = await make_decision(db, kyc_queue, "marker-1")
        await applied(owner_conn, first_marker)
        assert receiver.requests_for(provisional.id) == []
        assert not await enlisted(owner_conn, provisional.id)
        assert await workers[0].terminate() == 0, workers[0].log

        # Another worker, after the restart: the same.
        workers[0] = await start_worker(env)
        second_marker = await make_decision(db, kyc_queue, "marker-2")
        await applied(owner_conn, second_marker)
        assert receiver.requests_for(provisional.id) == []
        assert not await enlisted(owner_conn, provisional.id)

        confirmed_at = time.monotonic()
        await confirm(db, BOB, await claim(db, BOB, SECOND_REVIEW_QUEUE))
        await applied(owner_conn, provisional.id)
        assert await workers[0].terminate() == 0, workers[0].log

    body = only_body(receiver, provisional.id)
    (request,) = receiver.requests_for(provisional.id)
    assert request.received_at > confirmed_at
    assert (body["decisionId"], body["verdict"], body["reasonCode"], body["reviewer"]) == (
        str(provisional.id),
        "REJECT",
        "name_mismatch",
        "alice",
    )
    assert (body["isOverturn"], body["supersedes"]) == (False, None)
    assert body["evidenceHash"] == provisional.evidence_hash
    # Each marker once, and nothing else was sent.
    assert receiver.keys == {str(first_marker), str(second_marker), str(provisional.id)}
    assert len(receiver.requests) == 3
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []


async def test_an_override_sends_only_the_overriding_decisions_effect(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, test_database: TestDatabase
) -> None:
    env = worker_env(test_database)
    async with effect_receiver(db, kyc_queue) as receiver, worker_processes(env, 1) as (worker,):
        await require_second_review(db)
        provisional = await provisional_rejection(db, "overridden")

        replaced = await override(db, BOB, await claim(db, BOB, SECOND_REVIEW_QUEUE))
        await applied(owner_conn, replaced.id)
        # An effective decision made after it, applied too: the worker has run over the
        # list since, and the provisional decision was never on it.
        marker = await make_decision(db, kyc_queue, "marker")
        await applied(owner_conn, marker)
        assert await worker.terminate() == 0, worker.log

    assert receiver.requests_for(provisional.id) == []
    assert not await enlisted(owner_conn, provisional.id)
    body = only_body(receiver, replaced.id)
    assert (body["verdict"], body["reviewer"], body["reasonCode"]) == (
        Verdict.APPROVE.name,
        "bob",
        "documents_ok",
    )
    # An override is an ordinary decision to the receiver: nothing was carried out before it
    # that it would have to reverse.
    assert (body["isOverturn"], body["supersedes"], body["queue"]) == (False, None, "kyc")
    assert receiver.keys == {str(replaced.id), str(marker)}
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
