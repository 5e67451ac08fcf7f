"""Domain-level drivers for the exception tests that bypass HTTP: principals matching the
`people` tokens, an approved correction in a few calls, and a way to start many calls at
the same moment on connections of their own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TypeVar

import asyncpg

from server.domain.exceptions.actions import (
    CorrectionInput,
    Raised,
    RaiseInput,
    approve_correction,
    raise_exception,
    submit_correction,
)
from server.domain.exceptions.records import Consequence, ExceptionState
from server.domain.model import Claim, Principal, Role
from server.domain.review.leases import claim_next
from server.store.database import Database, connect
from server.store.queries import Queries
from tests.conftest import TestDatabase
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, REASON, WORKFLOW

T = TypeVar("T")

# The same users as the `people` tokens: the domain takes a principal, not a token.
ERP = Principal("erp-onboarding", Role.INTEGRATION, frozenset())
SAM = Principal("sam", Role.REVIEWER, frozenset({OWNER_QUEUE}))
ANN = Principal("ann", Role.APPROVER, frozenset({APPROVAL_QUEUE}))

# Generous for calls that take milliseconds; it turns a deadlock into a failure.
DEADLINE_SECONDS = 30


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
    assert raised.created
    return raised


async def claim_exception(db: Database, who: Principal, queue: str, exception_id: str) -> Claim:
    claim = await claim_next(db, who, queue)
    assert isinstance(claim, Claim), claim
    assert claim.item.payload == {"exceptionId": exception_id}, claim
    return claim


async def corrected_by_sam(db: Database, exception_id: str) -> Claim:
    """sam claims the exception and submits the legal name the registry shows: his claim."""
    mine = await claim_exception(db, SAM, OWNER_QUEUE, exception_id)
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
    return mine


async def approved_correction(db: Database, source_record_id: str) -> tuple[str, int]:
    """Raise, correct (sam), approve (ann): the exception waits for its redrive. Returns
    its id and the approved version."""
    exception_id = (await raise_one(db, source_record_id)).exception.id
    await corrected_by_sam(db, exception_id)
    theirs = await claim_exception(db, ANN, APPROVAL_QUEUE, exception_id)
    approved = await approve_correction(
        db, ANN, exception_id, str(theirs.lease_token), version=1, note=None
    )
    assert getattr(approved, "state", None) is ExceptionState.REDRIVE_PENDING, approved
    return exception_id, 1


@asynccontextmanager
async def own_connections(
    test_database: TestDatabase, queries: Queries, count: int
) -> AsyncIterator[list[Database]]:
    """`count` connections as the application role, opened before any call starts, so no
    caller waits for a pool slot while the others run."""
    conns: list[asyncpg.Connection] = list(
        await asyncio.gather(*(connect(test_database.app_dsn) for _ in range(count)))
    )
    try:
        yield [Database(conn, queries) for conn in conns]
    finally:
        await asyncio.gather(*(conn.close() for conn in conns))


async def all_at_once(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Starts every call at the same moment: each task waits at a barrier until all of them
    are running, so their statements are in flight together, not one after another."""
    barrier = asyncio.Barrier(len(calls))

    async def when_all_ready(call: Callable[[], Awaitable[T]]) -> T:
        await barrier.wait()
        return await call()

    async with asyncio.timeout(DEADLINE_SECONDS):
        return list(await asyncio.gather(*(when_all_ready(call) for call in calls)))


async def set_due(owner: asyncpg.Connection, exception_id: str, offset: timedelta) -> None:
    """Moves the due time relative to the database clock: time is driven, not waited for."""
    status = await owner.execute(
        "UPDATE exceptions SET due_at = now() + $2 WHERE id = $1", exception_id, offset
    )
    assert status == "UPDATE 1", f"no exception {exception_id}"


async def event_rows(owner: asyncpg.Connection, exception_id: str) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await owner.fetch(
        "SELECT * FROM exception_events WHERE exception_id = $1 ORDER BY id", exception_id
    )
    return rows
