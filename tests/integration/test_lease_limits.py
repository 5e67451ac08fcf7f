"""maxLeasesPerReviewer: a reviewer holds at most that many live leases in a queue, even
when their claims arrive at once; the refusal lists the leases held, tokens included."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from server.domain.failures import LeaseLimitReached, QueueEmpty
from server.domain.model import Claim, Item
from server.domain.review.leases import claim_next, held_leases, release_lease, renew_lease
from server.domain.review.queues import QueueSettings, configure_queue
from server.store.database import Database
from tests.conftest import ADMIN, reviewer
from tests.integration.helpers import claim, decide, enqueue_one, expire_lease, snapshot

ALICE = reviewer("alice")
BOB = reviewer("bob")
LIMIT = 2
CONCURRENT_CLAIMS = 8
# Rounds of racing claims: a lost race shows in one of them.
ROUNDS = 5


async def set_limit(db: Database, limit: int) -> None:
    configured = await configure_queue(
        db, ADMIN, QueueSettings("kyc", max_leases_per_reviewer=limit)
    )
    assert not hasattr(configured, "message"), configured


@pytest.fixture
async def limited(db: Database, kyc_queue: str) -> str:
    await set_limit(db, LIMIT)
    for n in range(12):
        await enqueue_one(db, kyc_queue, f"cust-{n}")
    return kyc_queue


def tokens_of(claims: list[Claim]) -> set[tuple[int, object]]:
    return {(c.item.id, c.lease_token) for c in claims}


async def test_concurrent_claims_by_one_reviewer_get_exactly_the_limit(
    db: Database, limited: str, owner_conn: asyncpg.Connection
) -> None:
    for _ in range(ROUNDS):
        # Each claim runs on a connection of its own (the pool has 40): they race for real.
        answers = await asyncio.gather(
            *(claim_next(db, ALICE, limited) for _ in range(CONCURRENT_CLAIMS))
        )

        won = [a for a in answers if isinstance(a, Claim)]
        refused = [a for a in answers if isinstance(a, LeaseLimitReached)]
        assert len(won) == LIMIT, answers
        assert len(refused) == CONCURRENT_CLAIMS - LIMIT, answers
        live = await owner_conn.fetchval(
            "SELECT count(*) FROM review_items WHERE lease_owner = 'alice' "
            "AND lease_expires_at > now()"
        )
        assert live == LIMIT
        # Every refusal names the leases alice holds, with their tokens.
        for refusal in refused:
            assert refusal.limit == LIMIT
            assert tokens_of(list(refusal.held)) == tokens_of(won)
        for held in won:
            released = await release_lease(db, ALICE, str(held.item.id), str(held.lease_token))
            assert isinstance(released, Item), released


async def test_the_refusal_writes_nothing_and_its_tokens_take_the_work_up_again(
    db: Database, limited: str, owner_conn: asyncpg.Connection
) -> None:
    first, second = await claim(db, ALICE), await claim(db, ALICE)
    before = await snapshot(owner_conn)

    refused = await claim_next(db, ALICE, limited)

    assert isinstance(refused, LeaseLimitReached)
    assert await snapshot(owner_conn) == before
    assert "2 live leases" in refused.message
    # Soonest to run out first; the listed token is the live lease itself.
    assert [c.item.id for c in refused.held] == [first.item.id, second.item.id]
    renewed = await renew_lease(
        db, ALICE, str(refused.held[0].item.id), str(refused.held[0].lease_token)
    )
    assert isinstance(renewed, Item)


async def test_the_limit_is_per_reviewer_and_frees_up_as_leases_end(
    db: Database, limited: str, owner_conn: asyncpg.Connection
) -> None:
    first = await claim(db, ALICE)
    await claim(db, ALICE)
    assert isinstance(await claim_next(db, ALICE, limited), LeaseLimitReached)

    # Bob's leases are his own count.
    await claim(db, BOB)
    await claim(db, BOB)
    # A decision ends a lease, and so does a lapse: either makes room.
    await decide(db, ALICE, first)
    third = await claim(db, ALICE)
    await expire_lease(owner_conn, third.item.id)
    assert isinstance(await claim_next(db, ALICE, limited), Claim)


async def test_zero_lifts_the_limit(db: Database, limited: str) -> None:
    await claim(db, ALICE)
    await claim(db, ALICE)
    await set_limit(db, 0)

    assert isinstance(await claim_next(db, ALICE, limited), Claim)


async def test_the_limit_counts_only_the_queue_it_is_set_on(db: Database, limited: str) -> None:
    senior = reviewer("alice", "kyc", "kyc-senior")
    await enqueue_one(db, "kyc-senior", "senior-1")
    await enqueue_one(db, "kyc-senior", "senior-2")
    await enqueue_one(db, "kyc-senior", "senior-3")
    for _ in range(3):
        assert isinstance(await claim_next(db, senior, "kyc-senior"), Claim)

    assert isinstance(await claim_next(db, senior, limited), Claim)


async def test_the_callers_leases_are_listed_across_its_queues(db: Database, limited: str) -> None:
    senior = reviewer("alice", "kyc", "kyc-senior")
    await enqueue_one(db, "kyc-senior", "senior-1")
    in_kyc = await claim(db, senior, "kyc")
    in_senior = await claim(db, senior, "kyc-senior")

    everywhere = await held_leases(db, senior)
    only_kyc = await held_leases(db, reviewer("alice", "kyc"))

    assert tokens_of(everywhere) == tokens_of([in_kyc, in_senior])
    assert tokens_of(only_kyc) == tokens_of([in_kyc])
    assert await held_leases(db, BOB) == []


async def test_an_empty_queue_is_empty_not_limited(db: Database, kyc_queue: str) -> None:
    await set_limit(db, 1)

    assert await claim_next(db, ALICE, kyc_queue) == QueueEmpty(kyc_queue)
