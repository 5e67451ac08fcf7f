"""Two claimers, one item: the row lock gives it to exactly one of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from server.domain.failures import QueueEmpty
from server.domain.model import Claim
from server.domain.review.leases import claim_next
from server.store.database import Database, connect
from server.store.queries import Queries
from tests.conftest import TestDatabase, reviewer
from tests.integration.helpers import decide, enqueue_one

ROUNDS = 20


@pytest.fixture
async def two_connections(test_database: TestDatabase) -> AsyncIterator[list[asyncpg.Connection]]:
    conns = await asyncio.gather(*(connect(test_database.app_dsn) for _ in range(2)))
    try:
        yield list(conns)
    finally:
        await asyncio.gather(*(conn.close() for conn in conns))


async def test_exactly_one_of_two_concurrent_claims_wins(
    db: Database, kyc_queue: str, queries: Queries, two_connections: list[asyncpg.Connection]
) -> None:
    claimers = [
        (Database(conn, queries), reviewer(name))
        for conn, name in zip(two_connections, ("alice", "bob"), strict=True)
    ]
    for round_ in range(ROUNDS):
        item = await enqueue_one(db, kyc_queue, f"race-{round_}")
        results = await asyncio.gather(
            *(claim_next(claimer_db, who, kyc_queue) for claimer_db, who in claimers)
        )
        won = [(claimers[i], r) for i, r in enumerate(results) if isinstance(r, Claim)]
        lost = [r for r in results if isinstance(r, QueueEmpty)]
        assert (len(won), len(lost)) == (1, 1), results
        (winner_db, winner), claim = won[0]
        assert claim.item.id == item.id
        assert claim.item.lease_owner == winner.user
        assert claim.item.lease_count == 1
        await decide(winner_db, winner, claim)
