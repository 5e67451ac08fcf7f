"""The review events (decision.*, item.escalated) are written to the outbox in the
transaction of the change that makes them, scoped by queue, and only when an enabled
endpoint subscribes."""

from __future__ import annotations

import asyncpg
import pytest

from server.domain.model import Decision, Verdict
from server.domain.review.decisions import OverturnInput, overturn_decision, submit_decision
from server.store.database import Database
from tests.conftest import APPROVER, reviewer
from tests.integration.helpers import claim, decide, enqueue_one, verdict_for
from tests.integration.second_review import (
    ALICE,
    BOB,
    confirm,
    provisional_rejection,
    require_second_review,
)
from tests.integrations.events_support import (
    ALL_TYPES,
    REVIEW_TYPES,
    deliveries,
    only_event,
    outbox,
    subscribe,
    types_written,
)

REVIEWER = reviewer("rita-reviewer", "kyc")


async def approved(db: Database, key: str = "app-7731") -> Decision:
    await enqueue_one(db, "kyc", key, {"name": "Ada"})
    return await decide(db, REVIEWER, await claim(db, REVIEWER))


async def test_nothing_is_written_when_no_endpoint_subscribes(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    # Subscribed to other queues, other types, or disabled: none of them wants this one.
    await subscribe(owner_conn, ALL_TYPES, queues=["payouts"])
    await subscribe(owner_conn, ["lease.lapsed"], queues=["kyc"])
    await subscribe(owner_conn, REVIEW_TYPES, queues=["kyc"], enabled=False)

    await approved(db)

    assert await outbox(owner_conn) == []


async def test_an_effective_decision_is_the_decision_webhook_body_without_attempt(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    first = await subscribe(owner_conn, ["decision.effective"], queues=["kyc"])
    second = await subscribe(owner_conn, REVIEW_TYPES, queues=["kyc", "payouts"])

    decision = await approved(db)

    event = await only_event(owner_conn, "decision.effective")
    assert (event.item_id, event.queue, event.exception_id) == (decision.item_id, "kyc", None)
    assert event.message_id.startswith("evt_")
    assert len(event.message_id) == len("evt_") + 32
    assert event.data == {
        "decisionId": str(decision.id),
        "itemId": str(decision.item_id),
        "externalKey": "app-7731",
        "queue": "kyc",
        "verdict": "APPROVE",
        "isOverturn": False,
        "supersedes": None,
        "reasonCode": "documents_ok",
        "note": None,
        "reviewer": "rita-reviewer",
        "evidenceHash": decision.evidence_hash,
        "decidedAt": decision.decided_at.isoformat(timespec="microseconds"),
    }
    # One delivery per subscribed endpoint, ordered by the item.
    rows = await deliveries(owner_conn)
    assert {row["endpoint_id"] for row in rows} == {first, second}
    assert {row["ordering_key"] for row in rows} == {f"item:{decision.item_id}"}


async def test_a_rolled_back_decision_writes_no_event(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await subscribe(owner_conn, REVIEW_TYPES, queues=["kyc"])
    await enqueue_one(db, "kyc", "app-1")
    held = await claim(db, REVIEWER)

    class Undone(Exception):
        pass

    async def decide_then_undo() -> None:
        async with db.transaction() as tx:
            recorded = await submit_decision(tx, REVIEWER, verdict_for(held))
            assert isinstance(recorded, Decision), recorded
            raise Undone

    with pytest.raises(Undone):
        await decide_then_undo()

    assert await outbox(owner_conn) == []
    assert await deliveries(owner_conn) == []


async def test_an_escalation_by_verdict_is_effective_and_escalates_the_item(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await subscribe(owner_conn, REVIEW_TYPES, queues=["kyc"])
    await enqueue_one(db, "kyc", "app-2")
    escalation = await decide(
        db, REVIEWER, await claim(db, REVIEWER), Verdict.ESCALATE, "needs_senior"
    )

    assert await types_written(owner_conn) == ["decision.effective", "item.escalated"]
    effective = await only_event(owner_conn, "decision.effective")
    assert effective.data["verdict"] == "ESCALATE"
    escalated = await only_event(owner_conn, "item.escalated")
    assert escalated.queue == "kyc"
    assert escalated.data == {
        "itemId": str(escalation.item_id),
        "externalKey": "app-2",
        "fromQueue": "kyc",
        "toQueue": "kyc-senior",
        "cause": "verdict",
        "actor": "rita-reviewer",
        "decisionId": str(escalation.id),
        "reasonCode": "needs_senior",
        "escalatedAt": escalation.decided_at.isoformat(timespec="microseconds"),
    }


async def test_a_provisional_decision_takes_effect_when_confirmed(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    await require_second_review(db)
    await subscribe(owner_conn, REVIEW_TYPES, queues=["kyc"])

    provisional = await provisional_rejection(db)
    assert await outbox(owner_conn) == []

    await confirm(db, BOB, await claim(db, BOB, "kyc-second-review"))

    event = await only_event(owner_conn, "decision.effective")
    assert event.data["decisionId"] == str(provisional.id)
    assert (event.data["verdict"], event.data["reviewer"]) == ("REJECT", ALICE.user)


async def test_an_overturn_is_decision_overturned_naming_what_it_reverses(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    decision = await approved(db)
    await subscribe(owner_conn, REVIEW_TYPES, queues=["kyc"])

    overturn = await overturn_decision(
        db, APPROVER, OverturnInput(str(decision.id), "name_mismatch", "wrong person")
    )
    assert isinstance(overturn, Decision), overturn

    assert await types_written(owner_conn) == ["decision.overturned"]
    event = await only_event(owner_conn, "decision.overturned")
    assert event.data["decisionId"] == str(overturn.id)
    assert event.data["isOverturn"] is True
    assert event.data["supersedes"] == {"decisionId": str(decision.id), "verdict": "APPROVE"}
    assert (event.data["verdict"], event.data["note"]) == ("REJECT", "wrong person")
