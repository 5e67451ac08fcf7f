"""The happy path of the review loop through the domain layer, on a real PostgreSQL."""

from __future__ import annotations

from server.domain.failures import QueueEmpty, StaleLease
from server.domain.model import Claim, Decision, Item, Verdict
from server.domain.review.decisions import DecisionInput, submit_decision
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next, release_lease, renew_lease
from server.store.database import Database
from tests.conftest import INTEGRATION, reviewer


async def test_enqueue_claim_decide(db: Database, kyc_queue: str) -> None:
    enqueued = await enqueue_items(
        db, INTEGRATION, kyc_queue, [NewItem("cust-1", {"name": "Ada"}), NewItem("cust-2", {})]
    )
    assert isinstance(enqueued, list)
    assert [e.created for e in enqueued] == [True, True]
    again = await enqueue_items(db, INTEGRATION, kyc_queue, [NewItem("cust-1", {"name": "Ada"})])
    assert isinstance(again, list)
    assert again[0].item.id == enqueued[0].item.id
    assert not again[0].created

    alice = reviewer("alice")
    claim = await claim_next(db, alice, kyc_queue)
    assert isinstance(claim, Claim)
    assert claim.item.lease_count == 1
    renewed = await renew_lease(db, alice, str(claim.item.id), str(claim.lease_token))
    assert isinstance(renewed, Item)
    decision = await submit_decision(
        db,
        alice,
        DecisionInput(
            str(claim.item.id),
            str(claim.lease_token),
            Verdict.APPROVE,
            "documents_ok",
            claim.evidence_hash,
        ),
    )
    assert isinstance(decision, Decision), decision
    stale = await release_lease(db, alice, str(claim.item.id), str(claim.lease_token))
    assert isinstance(stale, StaleLease)

    second = await claim_next(db, alice, kyc_queue)
    assert isinstance(second, Claim)
    released = await release_lease(db, alice, str(second.item.id), str(second.lease_token))
    assert isinstance(released, Item)
    third = await claim_next(db, alice, kyc_queue)
    assert isinstance(third, Claim)
    assert third.item.id == second.item.id
    assert third.item.lease_count == 2
    assert isinstance(await claim_next(db, alice, kyc_queue), QueueEmpty)
