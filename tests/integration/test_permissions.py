"""Roles and queues: a refused caller gets NotPermitted and the database does not change."""

from __future__ import annotations

import asyncpg
import pytest

from server.domain.failures import InvalidInput, NotPermitted, StaleLease
from server.domain.model import Claim, Principal, Role, Verdict
from server.domain.review.decisions import OverturnInput, overturn_decision, submit_decision
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next, release_lease, renew_lease
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.store.database import Database
from tests.conftest import ADMIN, APPROVER, INTEGRATION, MANAGER, reviewer
from tests.integration.helpers import claim, decide, enqueue_one, snapshot, verdict_for

OUTSIDER = reviewer("mallory", "aml")
# Alice's token re-issued without kyc while she still holds a kyc lease.
ALICE_MOVED = reviewer("alice", "aml")
KYC_ELSEWHERE = Principal("aml-approver", Role.APPROVER, frozenset({"aml"}))


def by_user(principal: Principal) -> str:
    return principal.user


@pytest.fixture
async def held(db: Database, kyc_queue: str) -> Claim:
    await enqueue_one(db, kyc_queue, "cust-1")
    await enqueue_one(db, kyc_queue, "cust-2")
    return await claim(db, reviewer("alice"))


@pytest.mark.parametrize("principal", [OUTSIDER, ALICE_MOVED], ids=["outsider", "moved"])
async def test_reviewer_without_the_queue_is_refused_everywhere(
    db: Database, held: Claim, owner_conn: asyncpg.Connection, principal: Principal
) -> None:
    item_id, token = str(held.item.id), str(held.lease_token)
    before = await snapshot(owner_conn)

    assert isinstance(await claim_next(db, principal, "kyc"), NotPermitted)
    assert isinstance(
        await enqueue_items(db, principal, "kyc", [NewItem("cust-3", {})]), NotPermitted
    )
    # An item outside the token's scope answers as one that does not exist.
    assert await submit_decision(db, principal, verdict_for(held)) == InvalidInput(
        f"no item with id {held.item.id}", "itemId"
    )
    assert await renew_lease(db, principal, item_id, token) == StaleLease(held.item.id)
    assert await release_lease(db, principal, item_id, token) == StaleLease(held.item.id)

    assert await snapshot(owner_conn) == before


async def test_integration_cannot_claim_or_decide(
    db: Database, held: Claim, owner_conn: asyncpg.Connection
) -> None:
    before = await snapshot(owner_conn)

    assert isinstance(await claim_next(db, INTEGRATION, "kyc"), NotPermitted)
    assert isinstance(await submit_decision(db, INTEGRATION, verdict_for(held)), NotPermitted)

    assert await snapshot(owner_conn) == before


@pytest.mark.parametrize(
    "principal", [reviewer("alice"), MANAGER, APPROVER, INTEGRATION], ids=by_user
)
async def test_only_an_admin_configures_queues_and_catalogues(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, principal: Principal
) -> None:
    before = await snapshot(owner_conn)

    assert isinstance(
        await configure_queue(db, principal, QueueSettings("kyc", lease_ttl_seconds=5)),
        NotPermitted,
    )
    assert isinstance(await configure_queue(db, principal, QueueSettings("aml")), NotPermitted)
    assert isinstance(
        await define_reason_code(
            db, principal, queue="kyc", code="looks_fine", label="x", verdicts=[Verdict.APPROVE]
        ),
        NotPermitted,
    )

    assert await snapshot(owner_conn) == before


@pytest.mark.parametrize("principal", [MANAGER, ADMIN, APPROVER, reviewer("alice")], ids=by_user)
async def test_only_an_integration_enqueues(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, principal: Principal
) -> None:
    before = await snapshot(owner_conn)

    result = await enqueue_items(db, principal, kyc_queue, [NewItem("cust-9", {})])

    assert isinstance(result, NotPermitted)
    assert await snapshot(owner_conn) == before


@pytest.mark.parametrize(
    "principal", [ADMIN, MANAGER, reviewer("alice"), KYC_ELSEWHERE], ids=by_user
)
async def test_only_an_approver_of_the_queue_overturns(
    db: Database, held: Claim, owner_conn: asyncpg.Connection, principal: Principal
) -> None:
    decision = await decide(db, reviewer("alice"), held)
    before = await snapshot(owner_conn)

    result = await overturn_decision(
        db, principal, OverturnInput(str(decision.id), "name_mismatch")
    )

    # An approver of another queue is answered as if the decision did not exist.
    expected = InvalidInput if principal is KYC_ELSEWHERE else NotPermitted
    assert isinstance(result, expected), result
    assert await snapshot(owner_conn) == before


async def test_only_reviewers_claim(db: Database, held: Claim) -> None:
    for principal in (ADMIN, MANAGER, APPROVER):
        assert isinstance(await claim_next(db, principal, "kyc"), NotPermitted)
