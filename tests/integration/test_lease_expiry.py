"""Leases: expiry fences the old token even before anyone re-claims; renew and release."""

from __future__ import annotations

from datetime import timedelta

import asyncpg

from server.domain.failures import StaleLease
from server.domain.model import Item, Queue
from server.domain.review.decisions import submit_decision
from server.domain.review.leases import release_lease, renew_lease
from server.domain.review.queues import QueueSettings, configure_queue
from server.store.database import Database
from tests.conftest import ADMIN, reviewer
from tests.integration.helpers import (
    claim,
    claimed_one,
    decide,
    decision_rows,
    enqueue_one,
    expire_lease,
    item_row,
    verdict_for,
)


async def test_expired_token_is_stale_everywhere_then_a_new_claim_works(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    configured = await configure_queue(db, ADMIN, QueueSettings(kyc_queue, lease_ttl_seconds=1))
    assert isinstance(configured, Queue), configured
    assert configured.lease_ttl_seconds == 1
    item = await enqueue_one(db, kyc_queue, "cust-1", {"name": "Ada"})
    alice, bob = reviewer("alice"), reviewer("bob")
    first = await claim(db, alice)
    await expire_lease(owner_conn, item.id)

    item_id, token = str(item.id), str(first.lease_token)
    assert await submit_decision(db, alice, verdict_for(first)) == StaleLease(item.id)
    assert await renew_lease(db, alice, item_id, token) == StaleLease(item.id)
    assert await release_lease(db, alice, item_id, token) == StaleLease(item.id)
    # Nobody re-claimed: the lapsed lease is still on the row, and nothing was written.
    row = await item_row(owner_conn, item.id)
    assert (row["state"], row["lease_token"], row["lease_owner"]) == (
        "pending",
        first.lease_token,
        "alice",
    )
    assert await decision_rows(owner_conn, item.id) == []

    second = await claim(db, bob)
    assert second.item.id == item.id
    assert second.lease_token != first.lease_token
    assert (second.item.lease_count, second.item.abandon_count) == (2, 1)
    decision = await decide(db, bob, second)
    assert decision.reviewer == "bob"
    assert await submit_decision(db, alice, verdict_for(first)) == StaleLease(item.id)
    assert [row["reviewer"] for row in await decision_rows(owner_conn, item.id)] == ["bob"]


async def test_renew_extends_the_lease(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    alice = reviewer("alice")
    held = await claimed_one(db, kyc_queue, alice)
    # Near the end of its 300 s lease, so the extension is unmistakable.
    await owner_conn.execute(
        "UPDATE review_items SET lease_expires_at = now() + interval '5 seconds' WHERE id = $1",
        held.item.id,
    )
    before = (await item_row(owner_conn, held.item.id))["lease_expires_at"]

    renewed = await renew_lease(db, alice, str(held.item.id), str(held.lease_token))

    assert isinstance(renewed, Item), renewed
    assert renewed.lease_expires_at is not None
    assert renewed.lease_expires_at - before > timedelta(seconds=290)
    row = await item_row(owner_conn, held.item.id)
    assert (row["lease_expires_at"], row["lease_token"]) == (
        renewed.lease_expires_at,
        held.lease_token,
    )
    await decide(db, alice, held)


async def test_release_makes_the_item_claimable_at_once_without_an_abandonment(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1")
    alice, bob = reviewer("alice"), reviewer("bob")
    held = await claim(db, alice)

    released = await release_lease(db, alice, str(item.id), str(held.lease_token))

    assert isinstance(released, Item), released
    assert (released.lease_owner, released.lease_expires_at) == (None, None)
    again = await claim(db, bob)
    assert again.item.id == item.id
    assert (again.item.lease_count, again.item.abandon_count) == (2, 0)
    assert await submit_decision(db, alice, verdict_for(held)) == StaleLease(item.id)
    await decide(db, bob, again)
    assert (await item_row(owner_conn, item.id))["abandon_count"] == 0
