"""Steps the second-review tests share (migration 0020): a queue whose REJECT decisions need
a second person, a provisional decision on one of its items, and the second reviewer's
claim and answers."""

from __future__ import annotations

from typing import Any

import asyncpg

from server.domain.model import Claim, Decision, Principal, Queue, Verdict
from server.domain.quality.second_review import (
    ConfirmInput,
    OverrideInput,
    confirm_decision,
    override_decision,
)
from server.domain.review.queues import QueueSettings, SecondReviewSettings, configure_queue
from server.store.database import Database
from tests.conftest import ADMIN, reviewer
from tests.integration.helpers import claim, decide, enqueue_one

SECOND_REVIEW_QUEUE = "kyc-second-review"
ALICE = reviewer("alice", "kyc", SECOND_REVIEW_QUEUE)
BOB = reviewer("bob", SECOND_REVIEW_QUEUE)
CAROL = reviewer("carol", SECOND_REVIEW_QUEUE)


async def require_second_review(
    db: Database,
    queue: str = "kyc",
    verdicts: tuple[Verdict, ...] = (Verdict.REJECT,),
    min_priority: int | None = None,
) -> Queue:
    result = await configure_queue(
        db, ADMIN, QueueSettings(queue, second_review=SecondReviewSettings(verdicts, min_priority))
    )
    assert isinstance(result, Queue), result
    return result


async def provisional_rejection(
    db: Database, key: str = "cust-1", payload: Any = None, priority: int = 0
) -> Decision:
    """Alice rejects a fresh item of `kyc`: a decision that waits for its second review."""
    await enqueue_one(db, "kyc", key, payload, priority)
    decision = await decide(db, ALICE, await claim(db, ALICE), Verdict.REJECT, "name_mismatch")
    assert decision.provisional, decision
    return decision


def confirmation(claimed: Claim, evidence_hash: str | None = None) -> ConfirmInput:
    return ConfirmInput(
        str(claimed.item.id), str(claimed.lease_token), evidence_hash or claimed.evidence_hash
    )


def overriding(
    claimed: Claim,
    verdict: Verdict = Verdict.APPROVE,
    reason_code: str = "documents_ok",
    evidence_hash: str | None = None,
    note: str | None = None,
) -> OverrideInput:
    return OverrideInput(
        str(claimed.item.id),
        str(claimed.lease_token),
        verdict,
        reason_code,
        evidence_hash or claimed.evidence_hash,
        note,
    )


async def confirm(db: Database, principal: Principal, claimed: Claim) -> Decision:
    result = await confirm_decision(db, principal, confirmation(claimed))
    assert isinstance(result, Decision), result
    return result


async def override(db: Database, principal: Principal, claimed: Claim) -> Decision:
    result = await override_decision(db, principal, overriding(claimed))
    assert isinstance(result, Decision), result
    return result


async def applications(owner: asyncpg.Connection) -> list[int]:
    """The decisions on the apply work list, by id."""
    return [
        row["decision_id"]
        for row in await owner.fetch(
            "SELECT decision_id FROM decision_applications ORDER BY decision_id"
        )
    ]
