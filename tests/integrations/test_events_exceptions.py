"""The exception events (exception.*, redrive.requested), scoped by workflow and written in
the transaction of the action that makes them."""

from __future__ import annotations

import asyncpg

from server.store.database import Database
from tests.integrations.events_support import (
    EXCEPTION_TYPES,
    WORKFLOW,
    approve,
    close_as_rejected,
    correct,
    only_event,
    outbox,
    raise_one,
    redrive,
    report_success,
    subscribe,
    supplier_workflow,
    types_written,
)


async def test_nothing_is_written_for_a_workflow_nobody_subscribes_to(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    await supplier_workflow(db)
    await subscribe(owner_conn, EXCEPTION_TYPES, workflows=["apply_decision"])
    await subscribe(owner_conn, EXCEPTION_TYPES, queues=["supplier-ops"])  # queues: review events

    await raise_one(db, "SUP-1")

    assert await outbox(owner_conn) == []


async def test_an_exception_from_raised_to_closed_by_its_redrive(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    await supplier_workflow(db)
    await subscribe(owner_conn, EXCEPTION_TYPES, workflows=[WORKFLOW])

    raised = await raise_one(db, "SUP-2")
    exception_id = raised.exception.id
    assert not (await raise_one(db, "SUP-2")).created  # a recurrence: no second event
    await correct(db, exception_id)
    await approve(db, exception_id)
    key = await redrive(db, exception_id)
    await report_success(db, key)

    assert await types_written(owner_conn) == [
        "exception.raised",
        "exception.needs_approval",
        "redrive.requested",
        "exception.closed",
    ]
    for row in await outbox(owner_conn):
        assert (row["exception_id"], row["workflow"]) == (exception_id, WORKFLOW)
        assert (row["item_id"], row["queue"]) == (None, None)

    opened = await only_event(owner_conn, "exception.raised")
    assert {k: v for k, v in opened.data.items() if k not in ("at", "dueAt")} == {
        "exceptionId": exception_id,
        "workflow": WORKFLOW,
        "sourceRecordId": "SUP-2",
        "reasonCode": "entity_mismatch",
        "consequence": "high",
        "state": "needs_review",
        "version": 0,
        "ownerRole": "supplier-ops",
        "actor": "erp-onboarding",
        "blockedStep": "verify_legal_entity",
        "completedSteps": ["collect_documents", "verify_bank_account"],
        "escalationRole": "procurement-leads",
    }
    # Never the detail or the context: free text about a record may be personal.
    assert "detail" not in opened.data
    assert "context" not in opened.data

    waiting = await only_event(owner_conn, "exception.needs_approval")
    assert (waiting.data["state"], waiting.data["version"], waiting.data["actor"]) == (
        "awaiting_approval",
        1,
        "sam",
    )
    assert waiting.data["approvalQueue"] == "supplier-approvals"

    requested = await only_event(owner_conn, "redrive.requested")
    assert requested.data == {
        "redriveKey": key,
        "exceptionId": exception_id,
        "workflow": WORKFLOW,
        "sourceRecordId": "SUP-2",
        "version": 1,
        "reasonCode": "entity_mismatch",
        "completedSteps": ["collect_documents", "verify_bank_account"],
        "blockedStep": "verify_legal_entity",
        "resumeAfter": "verify_bank_account",
        "staleSteps": [],
        "changes": {"legalName": "Acme Holdings Ltd"},
        "evidence": ["registry://companies-house/09876543"],
        "correctedBy": "sam",
        "requestedBy": "sam",
        "requestedAt": requested.data["requestedAt"],
    }

    closed = await only_event(owner_conn, "exception.closed")
    assert (closed.data["closure"], closed.data["redriveKey"], closed.data["actor"]) == (
        "corrected",
        key,
        "erp-onboarding",
    )


async def test_an_exception_closed_by_a_person(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    await supplier_workflow(db)
    await subscribe(owner_conn, ["exception.closed"], workflows=[WORKFLOW])

    raised = await raise_one(db, "SUP-3")
    await close_as_rejected(db, raised.exception.id)

    closed = await only_event(owner_conn, "exception.closed")
    assert (closed.data["closure"], closed.data["redriveKey"], closed.data["state"]) == (
        "rejected",
        None,
        "closed",
    )
    assert await types_written(owner_conn) == ["exception.closed"]
