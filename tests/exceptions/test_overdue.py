"""Overdue exceptions change owner with no cron job: reads show the escalation owner at
once, the next claim on either queue moves the exception, once, and a live lease keeps it
with its holder until the lease ends. Time is driven by moving `due_at` in SQL."""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from typing import Any

import asyncpg
import pytest

from server.domain.failures import QueueEmpty
from server.domain.model import Claim
from server.domain.review.leases import claim_next
from server.store.database import Database
from server.store.queries import Queries
from tests.api.conftest import GraphQL
from tests.conftest import TestDatabase, one_row, reviewer
from tests.exceptions.conftest import ESCALATION_QUEUE, OWNER_QUEUE, People
from tests.exceptions.domain_drivers import (
    all_at_once,
    claim_exception,
    event_rows,
    own_connections,
    raise_one,
    set_due,
)
from tests.exceptions.operations import (
    APPROVE_CORRECTION,
    ATTACH_EVIDENCE,
    CLAIM,
    EXCEPTION,
    REGISTRY_EVIDENCE,
    SUBMIT_CORRECTION,
    claim,
    correction_input,
    raise_mismatch,
    release,
    run,
    under_claim,
)

# Every test here works in the supplier-onboarding workflow, set up over the API.
pytestmark = pytest.mark.usefixtures("supplier_workflow")

PAST_DUE = timedelta(minutes=-1)
ALMOST_DUE = timedelta(minutes=1)
RACERS = 8

VIEW = """
query($id: ID!) {
  exception(id: $id) {
    id state overdue ownerRole escalationOwnerRole escalatedAt owner
    item { id queue state escalationCount }
    events { kind actor actorRole fromState toState }
  }
}
"""

LIST = """
query($filter: ExceptionFilter) {
  exceptions(filter: $filter) { edges { node { id overdue ownerRole } } }
}
"""


async def view(gql: GraphQL, people: People, exception_id: str) -> dict[str, Any]:
    body = await gql(people.manager, VIEW, id=exception_id)
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]["exception"]
    assert found is not None, f"no exception {exception_id}"
    return found


async def listed(gql: GraphQL, people: People, **where: Any) -> list[str]:
    body = await gql(people.manager, LIST, filter=where)
    assert "errors" not in body, body
    return [edge["node"]["id"] for edge in body["data"]["exceptions"]["edges"]]


async def claim_result(gql: GraphQL, token: str, queue: str) -> str:
    result = await run(gql, token, CLAIM, queue=queue)
    typename: str = result["__typename"]
    return typename


async def stored(owner: asyncpg.Connection, exception_id: str) -> asyncpg.Record:
    query = (
        "SELECT e.owner_role, e.escalated_at, i.queue, i.lease_owner, i.escalation_count "
        "FROM exceptions AS e JOIN review_items AS i ON i.id = e.item_id WHERE e.id = $1"
    )
    return await one_row(owner, query, exception_id, missing=f"no exception {exception_id}")


async def escalations(owner: asyncpg.Connection, exception_id: str) -> list[tuple[Any, ...]]:
    return [
        (row["actor"], row["actor_role"], row["data"])
        for row in await event_rows(owner, exception_id)
        if row["kind"] == "escalated"
    ]


async def raised_due(
    gql: GraphQL, people: People, owner: asyncpg.Connection, offset: timedelta
) -> str:
    """The walk-through's exception, its due time moved by `offset` from now: its id."""
    exception_id: str = (await raise_mismatch(gql, people.erp))["id"]
    await set_due(owner, exception_id, offset)
    return exception_id


async def held_past_due(
    gql: GraphQL, people: People, owner: asyncpg.Connection
) -> tuple[str, dict[str, Any]]:
    """The walk-through's exception, claimed by sam and then past due: its id and his claim."""
    exception_id: str = (await raise_mismatch(gql, people.erp))["id"]
    mine = await claim(gql, people.sam, OWNER_QUEUE)
    assert mine["item"]["exception"]["id"] == exception_id, mine
    await set_due(owner, exception_id, PAST_DUE)
    return exception_id, mine


async def test_reads_show_the_escalation_owner_before_any_claim_moves_it(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    late = (await raise_mismatch(gql, people.erp, source_record_id="SUP-5001"))["id"]
    on_time = (await raise_mismatch(gql, people.erp, source_record_id="SUP-5002"))["id"]
    await set_due(owner_conn, late, PAST_DUE)

    seen = await view(gql, people, late)
    assert (seen["overdue"], seen["ownerRole"]) == (True, ESCALATION_QUEUE)
    assert seen["escalationOwnerRole"] == ESCALATION_QUEUE
    # Nothing has moved it yet: the owner change is evaluated, not written.
    assert seen["escalatedAt"] is None
    assert seen["item"]["queue"] == OWNER_QUEUE
    assert [event["kind"] for event in seen["events"]] == ["raised"]
    other = await view(gql, people, on_time)
    assert (other["overdue"], other["ownerRole"]) == (False, OWNER_QUEUE)

    assert await listed(gql, people, overdue=True) == [late]
    assert await listed(gql, people, overdue=False) == [on_time]
    assert await listed(gql, people, ownerRole=ESCALATION_QUEUE) == [late]
    assert await listed(gql, people, ownerRole=OWNER_QUEUE) == [on_time]
    # The escalation owner's own token finds it too, before it is in its queue.
    body = await gql(people.leo, LIST, filter={"overdue": True})
    assert [e["node"]["id"] for e in body["data"]["exceptions"]["edges"]] == [late]

    # Reads wrote nothing.
    row = await stored(owner_conn, late)
    assert (row["owner_role"], row["escalated_at"], row["queue"]) == (
        OWNER_QUEUE,
        None,
        OWNER_QUEUE,
    )
    assert await escalations(owner_conn, late) == []


async def test_owner_claim_moves_it_and_the_escalation_owner_claims_it(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    late = await raised_due(gql, people, owner_conn, PAST_DUE)

    assert await claim_result(gql, people.sam, OWNER_QUEUE) == "QueueEmpty"
    leo = await claim(gql, people.leo, ESCALATION_QUEUE)

    assert leo["item"]["exception"]["id"] == late
    seen = await view(gql, people, late)
    assert seen["escalatedAt"] is not None
    assert (seen["ownerRole"], seen["owner"], seen["state"]) == (
        ESCALATION_QUEUE,
        "leo",
        "NEEDS_REVIEW",
    )
    assert seen["item"]["queue"] == ESCALATION_QUEUE
    assert seen["item"]["escalationCount"] == 1
    assert seen["events"][-1] == {
        "kind": "escalated",
        "actor": "casework",
        "actorRole": "system",
        "fromState": "NEEDS_REVIEW",
        "toState": "NEEDS_REVIEW",
    }
    [(_, _, data)] = await escalations(owner_conn, late)
    assert data == {"fromOwnerRole": OWNER_QUEUE, "toOwnerRole": ESCALATION_QUEUE}
    row = await stored(owner_conn, late)
    assert (row["owner_role"], row["queue"]) == (ESCALATION_QUEUE, ESCALATION_QUEUE)


async def test_escalation_owner_claim_alone_moves_it(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    # Nobody works the owner's queue any more: the escalation queue's own claim must look.
    late = await raised_due(gql, people, owner_conn, PAST_DUE)

    leo = await claim(gql, people.leo, ESCALATION_QUEUE)

    assert leo["item"]["exception"]["id"] == late
    assert len(await escalations(owner_conn, late)) == 1


async def test_escalation_happens_once(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    late = await raised_due(gql, people, owner_conn, PAST_DUE)
    first = await claim(gql, people.leo, ESCALATION_QUEUE)
    escalated_at = (await stored(owner_conn, late))["escalated_at"]
    await release(gql, people.leo, first["item"]["id"], first["leaseToken"])

    # Further overdue passes from both ends: it is still past due, but already escalated.
    assert await claim_result(gql, people.sam, OWNER_QUEUE) == "QueueEmpty"
    again = await claim(gql, people.leo, ESCALATION_QUEUE)

    assert again["item"]["id"] == first["item"]["id"]
    row = await stored(owner_conn, late)
    assert (row["escalated_at"], row["escalation_count"], row["queue"]) == (
        escalated_at,
        1,
        ESCALATION_QUEUE,
    )
    assert len(await escalations(owner_conn, late)) == 1
    seen = await view(gql, people, late)
    assert (seen["overdue"], seen["ownerRole"]) == (True, ESCALATION_QUEUE)


async def test_live_lease_keeps_it_with_its_holder_until_released(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    late, sam = await held_past_due(gql, people, owner_conn)

    assert await claim_result(gql, people.leo, ESCALATION_QUEUE) == "QueueEmpty"
    assert await claim_result(gql, people.sue, OWNER_QUEUE) == "QueueEmpty"
    row = await stored(owner_conn, late)
    assert (row["queue"], row["lease_owner"], row["escalated_at"]) == (OWNER_QUEUE, "sam", None)
    # The holder still works under his lease.
    evidence = under_claim(late, sam["leaseToken"], evidence=[REGISTRY_EVIDENCE])
    attached = await run(gql, people.sam, ATTACH_EVIDENCE, input=evidence)
    assert attached["__typename"] == "ExceptionUpdated", attached
    assert await escalations(owner_conn, late) == []

    await release(gql, people.sam, sam["item"]["id"], sam["leaseToken"])
    leo = await claim(gql, people.leo, ESCALATION_QUEUE)

    assert leo["item"]["exception"]["id"] == late
    row = await stored(owner_conn, late)
    assert (row["queue"], row["lease_owner"]) == (ESCALATION_QUEUE, "leo")
    assert row["escalated_at"] is not None
    assert len(await escalations(owner_conn, late)) == 1


async def test_lapsed_lease_no_longer_keeps_it(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    late, sam = await held_past_due(gql, people, owner_conn)
    await owner_conn.execute(
        "UPDATE review_items SET lease_expires_at = now() - interval '1 second' WHERE id = $1",
        int(sam["item"]["id"]),
    )

    leo = await claim(gql, people.leo, ESCALATION_QUEUE)

    assert leo["item"]["exception"]["id"] == late
    # The move ended his claim: his write is stale, and nothing is recorded. His team still
    # sees the exception it started with.
    evidence = under_claim(late, sam["leaseToken"], evidence=[REGISTRY_EVIDENCE])
    stale = await run(gql, people.sam, ATTACH_EVIDENCE, input=evidence)
    assert stale["__typename"] == "StaleLease", stale
    assert [e["kind"] for e in (await view(gql, people, late))["events"]] == ["raised", "escalated"]
    seen_by_sam = (await gql(people.sam, EXCEPTION, id=late))["data"]["exception"]
    assert seen_by_sam["ownerRole"] == ESCALATION_QUEUE
    # The item's timeline says how his lease ended: it lapsed, in his team's queue.
    lapses = await owner_conn.fetch(
        "SELECT queue, actor, lease_token FROM item_events WHERE item_id = $1 AND kind = 'lapsed'",
        int(sam["item"]["id"]),
    )
    assert [(r["queue"], r["actor"], str(r["lease_token"])) for r in lapses] == [
        (OWNER_QUEUE, "sam", sam["leaseToken"])
    ]


async def test_not_yet_due_never_moves(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    soon = await raised_due(gql, people, owner_conn, ALMOST_DUE)

    assert await claim_result(gql, people.leo, ESCALATION_QUEUE) == "QueueEmpty"
    sam = await claim(gql, people.sam, OWNER_QUEUE)
    await release(gql, people.sam, sam["item"]["id"], sam["leaseToken"])
    assert await claim_result(gql, people.leo, ESCALATION_QUEUE) == "QueueEmpty"

    assert sam["item"]["exception"]["id"] == soon
    seen = await view(gql, people, soon)
    assert (seen["overdue"], seen["ownerRole"], seen["escalatedAt"]) == (False, OWNER_QUEUE, None)
    assert seen["item"]["queue"] == OWNER_QUEUE
    assert await escalations(owner_conn, soon) == []
    assert await listed(gql, people, overdue=True) == []
    assert await listed(gql, people, ownerRole=ESCALATION_QUEUE) == []


async def test_overdue_awaiting_approval_stays_in_the_approval_queue(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    late = (await raise_mismatch(gql, people.erp))["id"]
    sam = await claim(gql, people.sam, OWNER_QUEUE)
    correction = correction_input(
        late,
        sam["leaseToken"],
        changes={"legalName": "Acme Holdings Ltd"},
        evidence=["ticket://procurement/PRC-311"],
    )
    corrected = await run(gql, people.sam, SUBMIT_CORRECTION, input=correction)
    assert corrected["__typename"] == "ExceptionUpdated", corrected
    await set_due(owner_conn, late, PAST_DUE)

    assert await claim_result(gql, people.sam, OWNER_QUEUE) == "QueueEmpty"
    assert await claim_result(gql, people.leo, ESCALATION_QUEUE) == "QueueEmpty"

    seen = await view(gql, people, late)
    assert (seen["state"], seen["overdue"], seen["ownerRole"]) == (
        "AWAITING_APPROVAL",
        True,
        OWNER_QUEUE,
    )
    assert seen["item"]["queue"] == "supplier-approvals"
    assert await escalations(owner_conn, late) == []
    ann = await claim(gql, people.ann, "supplier-approvals")
    approval = under_claim(late, ann["leaseToken"], version=1)
    approved = await run(gql, people.ann, APPROVE_CORRECTION, input=approval)
    assert approved["__typename"] == "ExceptionUpdated", approved


async def test_read_under_a_live_lease_names_the_owner_the_claim_keeps_it_with(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    # exceptions_read.sql promises the owner "exactly as the next claim would" evaluate it,
    # and the claim leaves a leased exception with its holder's team.
    late, sam = await held_past_due(gql, people, owner_conn)
    assert await claim_result(gql, people.leo, ESCALATION_QUEUE) == "QueueEmpty"

    seen = await view(gql, people, late)

    assert (seen["owner"], seen["item"]["queue"]) == ("sam", OWNER_QUEUE)
    assert seen["overdue"] is True
    assert seen["ownerRole"] == OWNER_QUEUE, seen
    assert await listed(gql, people, ownerRole=ESCALATION_QUEUE) == []
    assert await listed(gql, people, ownerRole=OWNER_QUEUE) == [late]

    await release(gql, people.sam, sam["item"]["id"], sam["leaseToken"])
    assert (await view(gql, people, late))["ownerRole"] == ESCALATION_QUEUE


async def test_claims_racing_on_both_queues_escalate_it_once(
    db: Database,
    test_database: TestDatabase,
    queries: Queries,
    owner_conn: asyncpg.Connection,
) -> None:
    late = (await raise_one(db, "SUP-5003")).exception
    await set_due(owner_conn, late.id, PAST_DUE)
    ops = [reviewer(f"ops-{n:02d}", OWNER_QUEUE) for n in range(RACERS)]
    leads = [reviewer(f"lead-{n:02d}", ESCALATION_QUEUE) for n in range(RACERS)]
    claimers = [(who, OWNER_QUEUE) for who in ops] + [(who, ESCALATION_QUEUE) for who in leads]

    async with own_connections(test_database, queries, len(claimers)) as conns:
        results = await all_at_once(
            [
                partial(claim_next, conn, who, queue)
                for conn, (who, queue) in zip(conns, claimers, strict=True)
            ]
        )

    by_owner = results[:RACERS]
    by_leads = results[RACERS:]
    assert all(isinstance(result, QueueEmpty) for result in by_owner), by_owner
    won = [result for result in by_leads if isinstance(result, Claim)]
    assert len(won) + sum(isinstance(r, QueueEmpty) for r in by_leads) == RACERS, by_leads
    # A lead whose claim ran while another's escalation held the row skips it; if every
    # lead did, the exception is waiting in their queue for the next claim.
    if not won:
        won = [await claim_exception(db, leads[0], ESCALATION_QUEUE, late.id)]
    assert [claim.item.id for claim in won] == [late.item_id]
    row = await stored(owner_conn, late.id)
    assert (row["queue"], row["escalation_count"]) == (ESCALATION_QUEUE, 1)
    assert row["lease_owner"] == won[0].item.lease_owner
    assert len(await escalations(owner_conn, late.id)) == 1
