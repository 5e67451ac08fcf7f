"""What the event-producer tests share: an endpoint subscribed in SQL (the endpoints' GraphQL
is another part of issue 27), the outbox as rows and as OutboxEvents, and the steps that
cause each event type, through the domain as the API would call it."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from server.domain.exceptions.actions import (
    CorrectionInput,
    Raised,
    RaiseInput,
    approve_correction,
    close_exception,
    raise_exception,
    submit_correction,
)
from server.domain.exceptions.records import (
    Closure,
    Consequence,
    ExceptionAction,
    ExceptionState,
)
from server.domain.exceptions.redrives import (
    RedriveQueued,
    RedriveReported,
    report_redrive_result,
    request_redrive,
)
from server.domain.exceptions.workflows import (
    ReasonDefinition,
    WorkflowSettings,
    configure_workflow,
    define_exception_reason,
)
from server.domain.integrations.envelope import OutboxEvent
from server.domain.integrations.events import EventType
from server.domain.integrations.sweeps import SweepResult, SweepSettings, sweep_time_events
from server.domain.model import Claim, Principal, Queue, Role
from server.domain.review.leases import claim_next
from server.domain.review.queues import QueueSettings, configure_queue
from server.store.database import Database
from tests.conftest import ADMIN

ALL_TYPES = tuple(str(t) for t in EventType)
REVIEW_TYPES = tuple(str(t) for t in EventType if t.is_review_event)
EXCEPTION_TYPES = tuple(str(t) for t in EventType if not t.is_review_event)

WORKFLOW = "supplier_onboarding"
OWNER_QUEUE = "supplier-ops"
ESCALATION_QUEUE = "procurement-leads"
APPROVAL_QUEUE = "supplier-approvals"
REASON = "entity_mismatch"
ERP = Principal("erp-onboarding", Role.INTEGRATION, frozenset())
SAM = Principal("sam", Role.REVIEWER, frozenset({OWNER_QUEUE}))
ANN = Principal("ann", Role.APPROVER, frozenset({APPROVAL_QUEUE}))

# A sweep that looks at everything at once, in tests.
SWEEP = SweepSettings(batch_size=200, lookback_seconds=86_400, settle_seconds=30)


async def subscribe(
    owner: asyncpg.Connection,
    types: Sequence[str],
    *,
    queues: Sequence[str] | None = None,
    workflows: Sequence[str] | None = None,
    enabled: bool = True,
) -> uuid.UUID:
    endpoint = uuid.uuid4()
    await owner.execute(
        "INSERT INTO webhook_endpoints (id, url, event_types, queues, workflows, created_by,"
        " enabled, disabled_at, disabled_reason)"
        " VALUES ($1, 'https://receiver.example/casework', $2, $3, $4, 'ada-admin', $5,"
        " CASE WHEN $5 THEN NULL ELSE now() END, CASE WHEN $5 THEN NULL ELSE 'test' END)",
        endpoint,
        list(types),
        None if queues is None else list(queues),
        None if workflows is None else list(workflows),
        enabled,
    )
    return endpoint


async def outbox(owner: asyncpg.Connection) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await owner.fetch("SELECT * FROM outbox_events ORDER BY id")
    return rows


async def types_written(owner: asyncpg.Connection) -> list[str]:
    return [row["event_type"] for row in await outbox(owner)]


async def deliveries(owner: asyncpg.Connection) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await owner.fetch(
        "SELECT * FROM outbox_deliveries ORDER BY event_id, endpoint_id"
    )
    return rows


def as_event(row: asyncpg.Record) -> OutboxEvent:
    data = row["data"]
    return OutboxEvent(
        message_id=row["message_id"],
        event_type=row["event_type"],
        occurred_at=row["occurred_at"],
        data=data if isinstance(data, dict) else json.loads(data),
        item_id=row["item_id"],
        exception_id=row["exception_id"],
        queue=row["queue"],
        workflow=row["workflow"],
    )


async def only_event(owner: asyncpg.Connection, event_type: str) -> OutboxEvent:
    rows = [row for row in await outbox(owner) if row["event_type"] == event_type]
    assert len(rows) == 1, (event_type, [row["event_type"] for row in await outbox(owner)])
    return as_event(rows[0])


async def sweep(db: Database, settings: SweepSettings = SWEEP) -> SweepResult:
    result = await sweep_time_events(db, settings)
    assert result.swept, "the sweep did not run: nobody subscribes, or its lock was held"
    return result


async def configure(db: Database, settings: QueueSettings) -> Queue:
    result = await configure_queue(db, ADMIN, settings)
    assert isinstance(result, Queue), result
    return result


async def expire_lease(owner: asyncpg.Connection, item_id: int, ago: timedelta) -> None:
    status = await owner.execute(
        "UPDATE review_items SET lease_expires_at = now() - $2::interval"
        " WHERE id = $1 AND lease_token IS NOT NULL",
        item_id,
        ago,
    )
    assert status == "UPDATE 1", f"item {item_id} holds no lease to expire"


async def wait_until(check: Callable[[], Awaitable[Any]], *, within: float, what: str) -> Any:
    """Polls `check` until it returns something truthy, for a row no signal announces;
    fails after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        if result := await check():
            return result
        if loop.time() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.05)


def past(minutes: float) -> datetime:
    return datetime.now(UTC) - timedelta(minutes=minutes)


# --- exceptions ----------------------------------------------------------------------------


async def supplier_workflow(db: Database) -> str:
    """The supplier-onboarding workflow: its three queues, the workflow and one reason that
    allows every action."""
    await configure(db, QueueSettings(OWNER_QUEUE))
    await configure(db, QueueSettings(ESCALATION_QUEUE))
    await configure(db, QueueSettings(APPROVAL_QUEUE))
    workflow = await configure_workflow(
        db, ADMIN, WorkflowSettings(WORKFLOW, approval_queue=APPROVAL_QUEUE)
    )
    assert not hasattr(workflow, "message"), workflow
    reason = await define_exception_reason(
        db,
        ADMIN,
        ReasonDefinition(
            workflow=WORKFLOW,
            code=REASON,
            label="Document names another legal entity",
            owner_role=OWNER_QUEUE,
            escalation_role=ESCALATION_QUEUE,
            allowed_actions=list(ExceptionAction),
            due_seconds={c: 14_400 for c in Consequence},
        ),
    )
    assert not hasattr(reason, "message"), reason
    return WORKFLOW


def mismatch(source_record_id: str) -> RaiseInput:
    return RaiseInput(
        workflow=WORKFLOW,
        source_record_id=source_record_id,
        reason_code=REASON,
        detail="The certificate names Acme Holdings Ltd; the record says Acme Trading Ltd.",
        consequence=Consequence.HIGH,
        completed_steps=["collect_documents", "verify_bank_account"],
        evidence=[f"docstore://suppliers/{source_record_id}/certificate.pdf"],
        blocked_step="verify_legal_entity",
    )


async def raise_one(db: Database, source_record_id: str) -> Raised:
    raised = await raise_exception(db, ERP, mismatch(source_record_id))
    assert isinstance(raised, Raised), raised
    return raised


async def claim_exception(db: Database, who: Principal, queue: str) -> Claim:
    claim = await claim_next(db, who, queue)
    assert isinstance(claim, Claim), claim
    return claim


async def correct(db: Database, exception_id: str) -> None:
    mine = await claim_exception(db, SAM, OWNER_QUEUE)
    corrected = await submit_correction(
        db,
        SAM,
        CorrectionInput(
            exception_id=exception_id,
            lease_token=str(mine.lease_token),
            reason_code=REASON,
            changes={"legalName": "Acme Holdings Ltd"},
            evidence=["registry://companies-house/09876543"],
        ),
    )
    assert not hasattr(corrected, "message"), corrected


async def approve(db: Database, exception_id: str) -> None:
    theirs = await claim_exception(db, ANN, APPROVAL_QUEUE)
    approved = await approve_correction(
        db, ANN, exception_id, str(theirs.lease_token), version=1, note=None
    )
    assert getattr(approved, "state", None) is ExceptionState.REDRIVE_PENDING, approved


async def redrive(db: Database, exception_id: str) -> str:
    queued = await request_redrive(db, SAM, exception_id, 1)
    assert isinstance(queued, RedriveQueued), queued
    return queued.redrive_key


async def report_success(db: Database, redrive_key: str) -> None:
    reported = await report_redrive_result(db, ERP, redrive_key, True, "re-run from step 3")
    assert isinstance(reported, RedriveReported), reported


async def close_as_rejected(db: Database, exception_id: str) -> None:
    mine = await claim_exception(db, SAM, OWNER_QUEUE)
    closed = await close_exception(
        db, SAM, exception_id, str(mine.lease_token), Closure.REJECTED, None
    )
    assert getattr(closed, "state", None) is ExceptionState.CLOSED, closed
