"""Second review and QA sampling together: a decision is sampled for QA when it takes
effect (never while it is provisional), whether a second reviewer confirms it or overrides
it, and the item's audit pack tells the whole story: the confirmation, the sample and the
QA reviewer's check."""

from __future__ import annotations

import asyncpg
import pytest

from server.domain.model import Claim, Decision, Verdict
from server.domain.quality import audit
from server.domain.quality.qa import QaResult, QaResultInput, record_qa_result
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.events.channels import parse_event
from server.store.database import Database
from tests.conftest import ADMIN, TestDatabase, reviewer
from tests.integration.helpers import claim, listening
from tests.integration.second_review import (
    BOB,
    SECOND_REVIEW_QUEUE,
    confirm,
    override,
    provisional_rejection,
    require_second_review,
)

QA_QUEUE = "kyc-qa"
QUINN = reviewer("quinn", QA_QUEUE)
AGREE = "qa_agree"


@pytest.fixture
async def both(db: Database, kyc_queue: str) -> str:
    """kyc: rejections need a second review, and every effective decision is sampled."""
    await require_second_review(db)
    configured = await configure_queue(db, ADMIN, QueueSettings("kyc", qa_sample_rate=1.0))
    assert not hasattr(configured, "message"), configured
    defined = await define_reason_code(
        db, ADMIN, queue=QA_QUEUE, code=AGREE, label="Agree", verdicts=[Verdict.APPROVE]
    )
    assert not hasattr(defined, "message"), defined
    return kyc_queue


async def qa_copies(owner: asyncpg.Connection) -> list[tuple[int, str, str]]:
    """(decision checked, QA queue, barred claimer) of every QA copy."""
    rows = await owner.fetch(
        "SELECT qa_of, queue, barred_claimer FROM review_items WHERE kind = 'qa' ORDER BY id"
    )
    return [(row["qa_of"], row["queue"], row["barred_claimer"]) for row in rows]


async def test_a_provisional_decision_is_sampled_when_it_is_confirmed_and_not_before(
    db: Database, owner_conn: asyncpg.Connection, test_database: TestDatabase, both: str
) -> None:
    provisional = await provisional_rejection(db)
    assert await qa_copies(owner_conn) == []

    held = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    async with listening(test_database) as listener:
        hints = await listener.events_of(confirm(db, BOB, held))

    # The copy checks the first decider's decision, so it is barred to her.
    assert await qa_copies(owner_conn) == [(provisional.id, QA_QUEUE, "alice")]
    (hint,) = [parse_event(payload) for payload in hints]
    assert hint is not None
    assert QA_QUEUE in hint.queues


async def test_an_override_is_sampled_as_the_second_reviewers_decision(
    db: Database, owner_conn: asyncpg.Connection, both: str
) -> None:
    provisional = await provisional_rejection(db)
    held = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    overriding = await override(db, BOB, held)

    assert overriding.supersedes == provisional.id
    # The provisional decision never took effect: only the override is checked, barred to
    # the second reviewer who made it.
    assert await qa_copies(owner_conn) == [(overriding.id, QA_QUEUE, "bob")]


async def check(db: Database) -> QaResult:
    held: Claim = await claim(db, QUINN, QA_QUEUE)
    result = await record_qa_result(
        db, QUINN, QaResultInput(str(held.item.id), str(held.lease_token), True, AGREE, "fine")
    )
    assert isinstance(result, QaResult), result
    return result


async def test_the_audit_pack_holds_the_confirmation_the_sample_and_the_check(
    db: Database, owner_conn: asyncpg.Connection, both: str
) -> None:
    provisional: Decision = await provisional_rejection(db)
    held = await claim(db, BOB, SECOND_REVIEW_QUEUE)
    await confirm(db, BOB, held)

    before_check = (await audit.audit_packs(db, [provisional.item_id]))[provisional.item_id]
    (decision,) = before_check["pack"]["decisions"]
    assert decision["status"] == "effective"
    assert decision["provisional"] is True
    confirmation = decision["confirmation"]
    assert confirmation["confirmed_by"] == "bob"
    assert confirmation["review_queue"] == SECOND_REVIEW_QUEUE
    assert confirmation["evidence_hash"] == provisional.evidence_hash
    assert confirmation["lease_id"] == audit.lease_id(held.lease_token)
    assert "lease_token" not in confirmation
    copy_id = await owner_conn.fetchval(
        "SELECT id FROM review_items WHERE qa_of = $1", provisional.id
    )
    assert decision["qa"] == {
        "decision_id": provisional.id,
        "qa_item_id": copy_id,
        "qa_queue": QA_QUEUE,
        "result": None,
    }

    checked = await check(db)
    after_check = (await audit.audit_packs(db, [provisional.item_id]))[provisional.item_id]
    result = after_check["pack"]["decisions"][0]["qa"]["result"]
    assert (result["agrees"], result["reason_code"], result["reviewer"], result["note"]) == (
        True,
        AGREE,
        "quinn",
        "fine",
    )
    assert result["recorded_at"] == audit.timestamp(checked.recorded_at)
    assert after_check["sha256"] != before_check["sha256"]
