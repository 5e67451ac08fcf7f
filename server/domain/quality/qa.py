"""QA sampling: a share of a queue's decisions is checked by a second reviewer after the
effect (migration 0021).

The sampling itself happens in the database, in the statement that records a decision
(decision_submit, through casework_qa_copy): a decision is sampled iff casework_qa_draw(its id) is
below its queue's qa_sample_rate at that moment. `qa_draw` here is the same function, so
anyone can say which decisions a rate samples. A QA reviewer claims the copy from the QA
queue (the claim never hands it to the decider: `barred_claimer`) and records agree or
disagree here; a disagreement is for an approver to act on with overturnDecision.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from server.domain.failures import InvalidInput, InvalidReasonCode, NotPermitted, StaleLease
from server.domain.model import Principal
from server.domain.parsing import holds_lease, reviewer_lease
from server.domain.review.decisions import catalogue_refusal, noted, under_lease
from server.domain.rows import FromRow
from server.store import sql
from server.store.database import Database

# The catalogue verdict a QA reason code must allow: approve for an agreement, reject for a
# disagreement (a QA queue's codes are defined with defineReasonCode like any other).
AGREE_VERDICT = "APPROVE"
DISAGREE_VERDICT = "REJECT"


def qa_draw(decision_id: int) -> float:
    """casework_qa_draw (migration 0021) in Python: the first 52 bits of SHA-256 over the
    id's 8 big-endian bytes, divided by 2^52, in [0, 1)."""
    digest = hashlib.sha256(decision_id.to_bytes(8, "big", signed=True)).hexdigest()
    return int(digest[:13], 16) / 2**52


def sampled(decision_id: int, rate: float) -> bool:
    """Whether a decision with this id is sampled at this rate."""
    return qa_draw(decision_id) < rate


@dataclass(frozen=True)
class QaResult(FromRow):
    decision_id: int
    qa_item_id: int
    agrees: bool
    reason_code: str
    note: str | None
    reviewer: str
    recorded_at: datetime


@dataclass(frozen=True)
class QaCheck:
    """A sampled decision: its QA copy, and the result once one is recorded."""

    decision_id: int
    qa_item_id: int
    qa_queue: str
    result: QaResult | None


@dataclass(frozen=True)
class QaReplayed:
    """A retried check that was recorded already: its result. Nothing was written."""

    result: QaResult


@dataclass(frozen=True)
class QaResultInput:
    item_id: str
    lease_token: str
    agrees: bool
    reason_code: str
    note: str | None = None


RecordResult = QaResult | QaReplayed | StaleLease | InvalidReasonCode | NotPermitted | InvalidInput


async def record_qa_result(
    db: Database, principal: Principal, answer: QaResultInput
) -> RecordResult:
    """One statement (qa_result_record): the result, the copy decided, the timeline row and
    the hint; or, when its fence refuses, a diagnosis of why, and nothing written."""
    refused = "only a reviewer token may record a QA result"
    parsed = noted(reviewer_lease(principal, answer, refused=refused), answer.note)
    if isinstance(parsed, NotPermitted | InvalidInput):
        return parsed
    item_id, token = parsed
    row = await db.fetchrow(
        sql.qa.QA_RESULT_RECORD,
        **under_lease(principal, item_id, token),
        agrees=answer.agrees,
        reason_code=answer.reason_code,
        note=answer.note,
    )
    if row is not None:
        return QaResult.from_row(row)
    return await _why_not_recorded(db, principal, item_id, token, answer)


async def _why_not_recorded(
    db: Database, principal: Principal, item_id: int, token: UUID, answer: QaResultInput
) -> QaReplayed | StaleLease | InvalidReasonCode | NotPermitted | InvalidInput:
    """The fence refused the write; say which condition failed, in order of precedence."""
    state = await db.fetchrow(
        sql.qa.QA_RESULT_RECORD_DIAGNOSE,
        item_id=item_id,
        lease_token=token,
        reason_code=answer.reason_code,
        agrees=answer.agrees,
        note=answer.note,
    )
    if state is None or not principal.works_in(state["queue"]):
        # Outside the token's queues reads as missing, as for submitDecision.
        return InvalidInput(f"no item with id {item_id}", "itemId")
    if state["kind"] != "qa":
        return InvalidInput(
            f"item {item_id} is not a QA copy: a QA result is recorded on an item of a QA "
            "queue (ReviewItem.qaOf names the decision it checks)",
            "itemId",
        )
    if state["decider"] == principal.user:
        return NotPermitted(
            "you made the decision this QA copy checks: a QA check is made by another "
            "reviewer; nothing was written"
        )
    if state["reviewer"] == principal.user:
        # Recorded under this lease already. Only its reviewer is told: a lease token is its
        # holder's secret, and anyone else presenting it gets a stale lease, as below.
        prior = QaResult.from_row(state)
        if (prior.agrees, prior.reason_code, prior.note) == (
            answer.agrees,
            answer.reason_code,
            answer.note,
        ):
            return QaReplayed(prior)
        return StaleLease(
            item_id,
            f"a QA result on decision {prior.decision_id} was recorded under this lease "
            "already, with another answer, reason code or note; nothing was written",
            queue=state["queue"],
        )
    if not holds_lease(state, token, principal.user):
        return StaleLease(item_id, queue=state["queue"])
    verdict = AGREE_VERDICT if answer.agrees else DISAGREE_VERDICT
    if refused := catalogue_refusal(state, state["queue"], answer.reason_code, verdict):
        return refused
    # Every condition holds now, so it failed an instant ago: a concurrent write won.
    return StaleLease(item_id, queue=state["queue"])


async def checks_by_decision_ids(db: Database, decision_ids: list[int]) -> dict[int, QaCheck]:
    """The sampled decisions among these, with their copies and results; one statement."""
    rows = await db.fetch(sql.qa.QA_GET_BY_DECISION_IDS, decision_ids=decision_ids)
    return {
        row["decision_id"]: QaCheck(
            decision_id=row["decision_id"],
            qa_item_id=row["qa_item_id"],
            qa_queue=row["qa_queue"],
            result=None if row["agrees"] is None else QaResult.from_row(row),
        )
        for row in rows
    }
