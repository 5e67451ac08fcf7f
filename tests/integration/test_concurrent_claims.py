"""Many claimers drain one queue: each item is held by one claimer at a time, decided once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from server.domain.failures import QueueEmpty
from server.domain.model import Claim, Decision, Principal
from server.domain.review.decisions import submit_decision
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.store.database import Database, connect
from server.store.queries import Queries
from tests.conftest import INTEGRATION, TestDatabase, reviewer
from tests.integration.helpers import verdict_for

pytestmark = pytest.mark.slow

CLAIMERS = 32
ITEMS = 5_000
BATCH = 1_000
# Generous for a run that takes seconds; it turns a hang into a failure.
DEADLINE_SECONDS = 60


@pytest.fixture
async def claimer_connections(
    test_database: TestDatabase,
) -> AsyncIterator[list[asyncpg.Connection]]:
    conns = await asyncio.gather(*(connect(test_database.app_dsn) for _ in range(CLAIMERS)))
    try:
        yield list(conns)
    finally:
        await asyncio.gather(*(conn.close() for conn in conns))


async def test_every_item_is_decided_exactly_once(
    db: Database,
    kyc_queue: str,
    queries: Queries,
    claimer_connections: list[asyncpg.Connection],
    owner_conn: asyncpg.Connection,
) -> None:
    enqueued: list[int] = []
    for start in range(0, ITEMS, BATCH):
        batch = [NewItem(f"cust-{n}", {"customer": n}) for n in range(start, start + BATCH)]
        result = await enqueue_items(db, INTEGRATION, kyc_queue, batch)
        assert isinstance(result, list), result
        assert all(entry.created for entry in result)
        enqueued += [entry.item.id for entry in result]

    held: set[int] = set()
    violations: list[str] = []
    most_held_at_once = 0
    decided_per_claimer: dict[str, int] = {}

    async def drain(conn: asyncpg.Connection, principal: Principal) -> None:
        nonlocal most_held_at_once
        claimer_db = Database(conn, queries)
        decided = 0
        while True:
            claim = await claim_next(claimer_db, principal, kyc_queue)
            if isinstance(claim, QueueEmpty):
                break
            assert isinstance(claim, Claim), claim
            if claim.item.id in held:
                violations.append(f"{principal.user} claimed item {claim.item.id} while held")
            held.add(claim.item.id)
            most_held_at_once = max(most_held_at_once, len(held))
            decision = await submit_decision(claimer_db, principal, verdict_for(claim))
            held.discard(claim.item.id)
            assert isinstance(decision, Decision), decision
            decided += 1
        decided_per_claimer[principal.user] = decided

    async with asyncio.timeout(DEADLINE_SECONDS), asyncio.TaskGroup() as claimers:
        for index, conn in enumerate(claimer_connections):
            claimers.create_task(drain(conn, reviewer(f"reviewer-{index:02d}")))

    assert violations == []
    # Otherwise the run proved nothing about concurrent holders.
    assert most_held_at_once > 1
    assert sum(decided_per_claimer.values()) == ITEMS

    per_item = await owner_conn.fetch(
        "SELECT item_id, count(*) AS decisions FROM review_decisions GROUP BY item_id"
    )
    assert [row["decisions"] for row in per_item if row["decisions"] != 1] == []
    assert sorted(row["item_id"] for row in per_item) == sorted(enqueued)
    states = await owner_conn.fetch(
        "SELECT state, lease_count, count(*) AS items FROM review_items GROUP BY 1, 2"
    )
    assert [tuple(row) for row in states] == [("decided", 1, ITEMS)]
