"""Small steps of the review loop that many tests share, each asserting it succeeded."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from server.domain.model import Claim, Decision, Item, Principal, Verdict
from server.domain.review.apply import Liveness
from server.domain.review.decisions import DecisionInput, submit_decision
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.domain.timeline.events import TimelineKind
from server.events.channels import CHANNEL
from server.store.database import Database
from tests.conftest import INTEGRATION, TestDatabase, one_row

# A test that claims applications itself, as a worker would: alive for the test's length.
CLAIMER = Liveness(uuid.UUID(int=1), "test-claimer", 3600.0)

Snapshot = dict[str, list[tuple[Any, ...]]]

MARKER = "end-of-step"
WAIT_SECONDS = 10


class Listener:
    """Collects notifications; a marker sent after a step bounds what the step sent."""

    def __init__(self, conn: asyncpg.Connection, marker_conn: asyncpg.Connection) -> None:
        self._conn = conn
        self._marker_conn = marker_conn
        self._received: asyncio.Queue[str] = asyncio.Queue()

    def on_notify(self, conn: asyncpg.Connection, pid: int, channel: str, payload: str) -> None:
        self._received.put_nowait(payload)

    async def events_of(self, step: Awaitable[object]) -> list[str]:
        await self._until_marker()
        await step
        return await self._until_marker()

    async def _until_marker(self) -> list[str]:
        # Notifications arrive in commit order: a marker committed now comes after
        # everything committed before it.
        await self._marker_conn.execute("SELECT pg_notify($1, $2)", CHANNEL, MARKER)
        payloads = []
        while (payload := await asyncio.wait_for(self._received.get(), WAIT_SECONDS)) != MARKER:
            payloads.append(payload)
        return payloads


@asynccontextmanager
async def listening(test_database: TestDatabase) -> AsyncIterator[Listener]:
    """A Listener on the database's hint channel, for as long as the block runs."""
    conn = await asyncpg.connect(test_database.app_dsn)
    marker_conn = await asyncpg.connect(test_database.app_dsn)
    collector = Listener(conn, marker_conn)
    await conn.add_listener(CHANNEL, collector.on_notify)
    try:
        yield collector
    finally:
        await conn.close()
        await marker_conn.close()


async def timeline(owner: asyncpg.Connection, item_id: int) -> list[asyncpg.Record]:
    """The rows item_events holds for the item, oldest first."""
    rows: list[asyncpg.Record] = await owner.fetch(
        "SELECT * FROM item_events WHERE item_id = $1 ORDER BY id", item_id
    )
    return rows


async def timeline_after_enqueue(owner: asyncpg.Connection, item_id: int) -> list[asyncpg.Record]:
    """The item's item_events rows after the `enqueued` row its enqueue wrote (checked)."""
    first, *rest = await timeline(owner, item_id)
    assert first["kind"] == TimelineKind.ENQUEUED, first
    return rest


async def enqueue_one(
    db: Database, queue: str, key: str, payload: Any = None, priority: int = 0
) -> Item:
    result = await enqueue_items(
        db, INTEGRATION, queue, [NewItem(key, payload if payload is not None else {}, priority)]
    )
    assert isinstance(result, list), result
    return result[0].item


async def claim(db: Database, principal: Principal, queue: str = "kyc") -> Claim:
    result = await claim_next(db, principal, queue)
    assert isinstance(result, Claim), result
    return result


async def claimed_one(db: Database, queue: str, principal: Principal, key: str = "cust-1") -> Claim:
    """A fresh item of `queue`, claimed by `principal`."""
    await enqueue_one(db, queue, key)
    return await claim(db, principal, queue)


def verdict_for(
    claim: Claim,
    verdict: Verdict = Verdict.APPROVE,
    reason_code: str = "documents_ok",
    evidence_hash: str | None = None,
) -> DecisionInput:
    return DecisionInput(
        item_id=str(claim.item.id),
        lease_token=str(claim.lease_token),
        verdict=verdict,
        reason_code=reason_code,
        evidence_hash=evidence_hash or claim.evidence_hash,
    )


async def decide(
    db: Database,
    principal: Principal,
    claim: Claim,
    verdict: Verdict = Verdict.APPROVE,
    reason_code: str = "documents_ok",
) -> Decision:
    result = await submit_decision(db, principal, verdict_for(claim, verdict, reason_code))
    assert isinstance(result, Decision), result
    return result


async def refused_unheard(
    owner: asyncpg.Connection, listener: Listener, call: Awaitable[object], refusal: type
) -> None:
    """`call` is answered with a `refusal`, sends no hint and changes no row."""
    before = await snapshot(owner)
    answers: list[object] = []

    async def attempt() -> None:
        answers.append(await call)

    assert await listener.events_of(attempt()) == []
    assert isinstance(answers[0], refusal), answers[0]
    assert await snapshot(owner) == before


def later(hours: float = 1) -> datetime:
    return datetime.now(UTC) + timedelta(hours=hours)


async def expire_lease(owner: asyncpg.Connection, item_id: int) -> None:
    status = await owner.execute(
        "UPDATE review_items SET lease_expires_at = now() - interval '1 second' "
        "WHERE id = $1 AND lease_token IS NOT NULL",
        item_id,
    )
    assert status == "UPDATE 1", f"item {item_id} holds no lease to expire"


async def item_row(owner: asyncpg.Connection, item_id: int) -> asyncpg.Record:
    return await one_row(
        owner, "SELECT * FROM review_items WHERE id = $1", item_id, missing=f"no item {item_id}"
    )


async def decision_rows(owner: asyncpg.Connection, item_id: int) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await owner.fetch(
        "SELECT * FROM review_decisions WHERE item_id = $1 ORDER BY id", item_id
    )
    return rows


async def snapshot(owner: asyncpg.Connection) -> Snapshot:
    """Every row the review loop writes, to show that a refused call changed nothing."""
    tables = {
        "queues": "name",
        "reason_codes": "queue, code",
        "hold_reasons": "queue, code",
        "review_items": "id",
        "review_decisions": "id",
        "item_events": "id",
        # Second review (migration 0020) and the apply work list.
        "decision_confirmations": "decision_id",
        "decision_applications": "decision_id",
    }
    return {
        table: [tuple(row) for row in await owner.fetch(f"SELECT * FROM {table} ORDER BY {key}")]
        for table, key in tables.items()
    }
