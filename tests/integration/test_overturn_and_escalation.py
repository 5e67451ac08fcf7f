"""Corrections are new rows that supersede old ones; abandoned or hard items move up a queue."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from server.domain.failures import AlreadySuperseded, InvalidReasonCode, NotPermitted, QueueEmpty
from server.domain.model import Claim, Decision, Verdict
from server.domain.reads import decisions_by_item_ids, effective_decision
from server.domain.review.decisions import OverturnInput, overturn_decision
from server.domain.review.leases import claim_next
from server.store.database import Database
from tests.conftest import APPROVER, reviewer
from tests.integration.helpers import (
    claim,
    decide,
    decision_rows,
    enqueue_one,
    expire_lease,
    item_row,
)

ALICE = reviewer("alice")
SENIOR = reviewer("sam-senior", "kyc-senior")


@pytest.fixture
async def approved(db: Database, kyc_queue: str) -> Decision:
    await enqueue_one(db, kyc_queue, "cust-1")
    return await decide(db, ALICE, await claim(db, ALICE))


async def overturn(db: Database, target: Decision, reason_code: str) -> Decision:
    result = await overturn_decision(db, APPROVER, OverturnInput(str(target.id), reason_code))
    assert isinstance(result, Decision), result
    return result


async def test_overturning_an_overturn_leaves_one_effective_approval(
    db: Database, approved: Decision
) -> None:
    rejected = await overturn(db, approved, "name_mismatch")
    assert (rejected.is_overturn, rejected.outcome, rejected.supersedes) == (
        True,
        Verdict.REJECT,
        approved.id,
    )
    approved_again = await overturn(db, rejected, "documents_ok")
    assert (approved_again.outcome, approved_again.supersedes) == (Verdict.APPROVE, rejected.id)

    history = (await decisions_by_item_ids(db, [approved.item_id]))[approved.item_id]

    assert [d.id for d in history] == [approved.id, rejected.id, approved_again.id]
    assert [d.id for d in history if d.superseded_by is None] == [approved_again.id]
    standing = effective_decision(history)
    assert standing is not None
    assert (standing.id, standing.outcome) == (approved_again.id, Verdict.APPROVE)


async def test_a_superseded_decision_cannot_be_overturned(
    db: Database, approved: Decision, owner_conn: asyncpg.Connection
) -> None:
    rejected = await overturn(db, approved, "name_mismatch")

    again = await overturn_decision(db, APPROVER, OverturnInput(str(approved.id), "name_mismatch"))

    assert again == AlreadySuperseded(approved.id, rejected.id)
    assert len(await decision_rows(owner_conn, approved.item_id)) == 2


async def test_a_reviewer_cannot_overturn(
    db: Database, approved: Decision, owner_conn: asyncpg.Connection
) -> None:
    result = await overturn_decision(db, ALICE, OverturnInput(str(approved.id), "name_mismatch"))

    assert isinstance(result, NotPermitted)
    assert [row["id"] for row in await decision_rows(owner_conn, approved.item_id)] == [approved.id]


async def test_the_reason_must_fit_the_reversed_outcome(
    db: Database, approved: Decision, owner_conn: asyncpg.Connection
) -> None:
    # documents_ok is an approve reason; overturning an approval produces a rejection.
    result = await overturn_decision(db, APPROVER, OverturnInput(str(approved.id), "documents_ok"))

    assert result == InvalidReasonCode("kyc", "documents_ok", "REJECT")
    assert len(await decision_rows(owner_conn, approved.item_id)) == 1


async def test_concurrent_overturns_of_one_decision_let_one_through(
    db: Database, approved: Decision, owner_conn: asyncpg.Connection
) -> None:
    results = await asyncio.gather(
        *(
            overturn_decision(db, APPROVER, OverturnInput(str(approved.id), "name_mismatch"))
            for _ in range(10)
        )
    )

    winners = [r for r in results if isinstance(r, Decision)]
    assert len(winners) == 1, results
    losers = [r for r in results if not isinstance(r, Decision)]
    assert all(isinstance(r, AlreadySuperseded) for r in losers), losers
    assert len(losers) == 9
    overturns = await owner_conn.fetch(
        "SELECT id FROM review_decisions WHERE supersedes = $1", approved.id
    )
    assert [row["id"] for row in overturns] == [winners[0].id]


async def test_third_abandonment_moves_the_item_to_the_escalation_queue(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1", priority=5)
    for abandons_so_far in range(3):
        held = await claim(db, ALICE)
        assert (held.item.id, held.item.abandon_count) == (item.id, abandons_so_far)
        await expire_lease(owner_conn, item.id)

    assert await claim_next(db, reviewer("bob"), kyc_queue) == QueueEmpty(kyc_queue)

    escalated = {
        "queue": "kyc-senior",
        "origin_queue": "kyc",
        "state": "pending",
        "priority": 105,
        "abandon_count": 0,
        "escalation_count": 1,
        "lease_count": 3,
        "lease_token": None,
        "lease_owner": None,
        "lease_expires_at": None,
    }
    row = await item_row(owner_conn, item.id)
    assert {column: row[column] for column in escalated} == escalated
    senior = await claim(db, SENIOR, "kyc-senior")
    assert (senior.item.id, senior.item.queue, senior.item.lease_count) == (
        item.id,
        "kyc-senior",
        4,
    )
    decision = await decide(db, SENIOR, senior)
    assert decision.queue == "kyc-senior"


async def test_escalate_verdict_moves_the_item_and_records_it(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1", priority=7)

    escalation = await decide(db, ALICE, await claim(db, ALICE), Verdict.ESCALATE, "needs_senior")

    assert (escalation.outcome, escalation.is_overturn, escalation.queue) == (
        Verdict.ESCALATE,
        False,
        "kyc",
    )
    row = await item_row(owner_conn, item.id)
    assert (row["queue"], row["state"], row["priority"], row["lease_token"]) == (
        "kyc-senior",
        "pending",
        107,
        None,
    )
    assert (row["escalation_count"], row["decided_at"]) == (1, None)
    assert [
        (r["verdict"], r["outcome"], r["reason_code"])
        for r in await decision_rows(owner_conn, item.id)
    ] == [("escalate", "escalate", "needs_senior")]
    assert await claim_next(db, ALICE, kyc_queue) == QueueEmpty(kyc_queue)
    senior = await claim_next(db, SENIOR, "kyc-senior")
    assert isinstance(senior, Claim)
    assert senior.item.id == item.id
    # An escalation is a hand-over, not an outcome to reverse.
    assert await overturn_decision(
        db, APPROVER, OverturnInput(str(escalation.id), "name_mismatch")
    ) == AlreadySuperseded(escalation.id, None)
