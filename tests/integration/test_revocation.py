"""A manager revokes a lease: the holder's token is stale at once, the item is claimable
again, and the timeline says who and why. Revoking, assigning and claiming the same item
at once end in one consistent state, every step recorded."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from server.domain.controls.assignments import Assignment, Revoked, assign_item, revoke_lease
from server.domain.failures import (
    InvalidInput,
    ItemNotWaiting,
    NotFound,
    NotLeased,
    NotPermitted,
    QueueEmpty,
    StaleLease,
)
from server.domain.model import Claim, Item, Principal, Role
from server.domain.review.decisions import submit_decision
from server.domain.review.leases import claim_next, release_lease, renew_lease
from server.domain.timeline.events import TimelineKind
from server.events.channels import parse_event
from server.store.database import Database
from tests.conftest import ADMIN, MANAGER, reviewer, token_maker
from tests.integration.helpers import (
    Listener,
    claim,
    claimed_one,
    decide,
    enqueue_one,
    expire_lease,
    item_row,
    refused_unheard,
    snapshot,
    timeline_after_enqueue,
    verdict_for,
)

ALICE = reviewer("alice")
BOB = reviewer("bob")
CAROL = reviewer("carol")
REASON = "Bob is off sick; his items go back to the team."
ROUNDS = 30


async def revoke(db: Database, item_id: int, by: Principal = MANAGER) -> Revoked:
    result = await revoke_lease(db, by, str(item_id), REASON)
    assert isinstance(result, Revoked), result
    return result


async def test_a_revoked_lease_is_stale_at_once_and_the_item_claimable_again(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    held = await claimed_one(db, kyc_queue, BOB)

    revoked = await revoke(db, held.item.id)

    assert revoked.owner == "bob"
    assert revoked.item.lease_owner is None
    item, token = str(held.item.id), str(held.lease_token)
    assert await renew_lease(db, BOB, item, token) == StaleLease(held.item.id)
    assert await release_lease(db, BOB, item, token) == StaleLease(held.item.id)
    assert isinstance(await submit_decision(db, BOB, verdict_for(held)), StaleLease)
    # Claimable at once, and a revocation is not an abandonment.
    again = await claim(db, ALICE)
    assert again.item.id == held.item.id
    assert (await item_row(owner_conn, held.item.id))["abandon_count"] == 0


async def test_the_timeline_says_whose_lease_ended_who_ended_it_and_why(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, listener: Listener
) -> None:
    held = await claimed_one(db, kyc_queue, BOB)
    started = (await item_row(owner_conn, held.item.id))["lease_started_at"]

    [hint] = await listener.events_of(revoke(db, held.item.id))

    event = parse_event(hint)
    assert event is not None
    assert (event.kind, event.queue, event.item_id) == ("revoked", "kyc", held.item.id)
    [row] = await timeline_after_enqueue(owner_conn, held.item.id)
    assert (row["kind"], row["actor"], row["actor_role"], row["body"]) == (
        TimelineKind.REVOKED,
        "max-manager",
        "manager",
        REASON,
    )
    # The lease it ended, so that the timeline reader can derive the claim from it.
    assert (row["lease_token"], row["lease_started_at"]) == (held.lease_token, started)
    assert row["detail"] == {"owner": "bob"}


@pytest.mark.parametrize(
    ("by", "reason", "refusal"),
    [
        (BOB, REASON, NotPermitted),
        (ADMIN, REASON, NotPermitted),
        (Principal("mo", Role.MANAGER, frozenset({"payouts"})), REASON, NotFound),
        (MANAGER, "   ", InvalidInput),
        (MANAGER, "x" * 4001, InvalidInput),
    ],
    ids=["reviewer", "admin", "other team's manager", "blank reason", "long reason"],
)
async def test_a_refused_revocation_writes_nothing_and_sends_nothing(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    listener: Listener,
    by: Principal,
    reason: str,
    refusal: type,
) -> None:
    held = await claimed_one(db, kyc_queue, BOB)
    await refused_unheard(
        owner_conn, listener, revoke_lease(db, by, str(held.item.id), reason), refusal
    )


async def test_there_must_be_a_live_lease_to_revoke(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    free = await enqueue_one(db, kyc_queue, "cust-free")
    assert await revoke_lease(db, MANAGER, str(free.id), REASON) == NotLeased(free.id)

    await enqueue_one(db, kyc_queue, "cust-lapsed")
    lapsed = await claim(db, BOB)
    await expire_lease(owner_conn, lapsed.item.id)
    before = await snapshot(owner_conn)
    assert await revoke_lease(db, MANAGER, str(lapsed.item.id), REASON) == NotLeased(lapsed.item.id)
    assert await snapshot(owner_conn) == before

    decision = await decide(db, ALICE, await claim(db, ALICE))
    assert await revoke_lease(db, MANAGER, str(decision.item_id), REASON) == ItemNotWaiting(
        decision.item_id, "decided"
    )


@pytest.fixture
async def alice_and_carol(owner_db: Database, kyc_queue: str) -> str:
    make = token_maker(owner_db)
    await make("alice", Role.REVIEWER, "kyc")
    await make("carol", Role.REVIEWER, "kyc")
    return kyc_queue


async def test_assign_claim_and_revoke_at_once_end_in_one_consistent_state(
    db: Database, alice_and_carol: str, owner_conn: asyncpg.Connection
) -> None:
    """Bob holds the only item. At once: a manager assigns it to alice, another revokes
    bob's lease, and alice and carol each claim. Whatever the order, the item ends with
    one holder at most, the assignment, and a timeline with every step."""
    queue = alice_and_carol
    for round_number in range(ROUNDS):
        item = await enqueue_one(db, queue, f"cust-{round_number}")
        held = await claim(db, BOB)
        assert held.item.id == item.id

        assigned, revoked, alice, carol = await asyncio.gather(
            assign_item(db, MANAGER, Assignment(str(item.id), "alice")),
            revoke_lease(db, MANAGER, str(item.id), REASON),
            claim_next(db, ALICE, queue),
            claim_next(db, CAROL, queue),
        )

        # The assignment and the revocation always succeed: the item waits, bob's lease
        # is live until the revocation, and nobody else can claim before it.
        assert isinstance(assigned, Item), assigned
        assert isinstance(revoked, Revoked), revoked
        assert revoked.owner == "bob"
        claims = {
            who: answer
            for who, answer in (("alice", alice), ("carol", carol))
            if isinstance(answer, Claim)
        }
        losers = [answer for answer in (alice, carol) if not isinstance(answer, Claim)]
        assert all(isinstance(answer, QueueEmpty) for answer in losers), (alice, carol)
        # At most one claim won the item, and the item is under that claim's lease.
        assert len(claims) <= 1, claims
        row = await item_row(owner_conn, item.id)
        assert row["assigned_to"] == "alice"
        if claims:
            [(winner, won)] = claims.items()
            assert (row["lease_owner"], row["lease_token"]) == (winner, won.lease_token)
            assert row["lease_count"] == 2
        else:
            assert row["lease_token"] is None
            assert row["lease_count"] == 1
        # Every step is in the timeline, once: the revocation of bob's lease and the
        # assignment (claims are read from the lease itself and write no row).
        rows = await timeline_after_enqueue(owner_conn, item.id)
        assert sorted(r["kind"] for r in rows) == [TimelineKind.ASSIGNED, TimelineKind.REVOKED], (
            rows
        )
        [revoked_row] = [r for r in rows if r["kind"] == TimelineKind.REVOKED]
        assert revoked_row["lease_token"] == held.lease_token
        # Bob's token is stale whatever happened.
        stale = await renew_lease(db, BOB, str(item.id), str(held.lease_token))
        assert isinstance(stale, StaleLease)
        # The round's item leaves the backlog, so the next round's is the only one.
        await owner_conn.execute(
            "UPDATE review_items SET state = 'decided', decided_at = now(), lease_owner = NULL,"
            " lease_token = NULL, lease_expires_at = NULL WHERE id = $1",
            item.id,
        )
