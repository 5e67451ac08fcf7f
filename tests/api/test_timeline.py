"""The item timeline over HTTP: one item's whole story read in one query, page by page, for
many items at once, and never showing a lease token."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import (
    CLAIM,
    DECIDE,
    ENQUEUE,
    OVERTURN,
    decision_input,
    enqueue,
    statements_of,
)

STORY = """
query($id: ID!, $first: Int!, $after: String) {
  item(id: $id) {
    events(first: $first, after: $after) {
      edges {
        cursor
        node {
          kind at queue actor actorRole body recordedAt
          lease { id owner startedAt }
          evidenceHash fromQueue toQueue until
          decision { id verdict isOverturn }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""
RENEW = """
mutation($itemId: ID!, $leaseToken: String!) {
  renewLease(itemId: $itemId, leaseToken: $leaseToken) {
    __typename ... on LeaseRenewed { leaseExpiresAt }
  }
}
"""
RELEASE = """
mutation($itemId: ID!, $leaseToken: String!) {
  releaseLease(itemId: $itemId, leaseToken: $leaseToken) { __typename }
}
"""
ADD_NOTE = """
mutation($input: AddNoteInput!) {
  addNote(input: $input) {
    __typename
    ... on NoteAdded { event { kind actor actorRole body } item { id } }
    ... on Error { message }
    ... on InvalidInput { field }
  }
}
"""
SENIOR_REJECT = """
mutation {
  kyc: configureQueue(input: {name: "kyc", maxAbandons: 2}) { __typename }
  reject: defineReasonCode(input: {queue: "kyc-senior", code: "name_mismatch",
                                   label: "Name mismatch", verdicts: [REJECT]}) { __typename }
}
"""


async def lapse_now(owner: asyncpg.Connection, item_id: str) -> None:
    """Ends the item's lease at this instant, after its claim began and before the next."""
    status = await owner.execute(
        "UPDATE review_items SET lease_expires_at = now() "
        "WHERE id = $1 AND lease_token IS NOT NULL",
        int(item_id),
    )
    assert status == "UPDATE 1", f"item {item_id} holds no lease"


async def claimed(gql: GraphQL, token: str, queue: str = "kyc") -> dict[str, Any]:
    claim: dict[str, Any] = (await gql(token, CLAIM, queue=queue))["data"]["claimNext"]
    assert claim["__typename"] == "Claim", claim
    return claim


async def story(gql: GraphQL, token: str, item_id: str, first: int = 50) -> list[dict[str, Any]]:
    """Every event of the item, page after page of `first`."""
    nodes: list[dict[str, Any]] = []
    after = None
    while True:
        body = await gql(token, STORY, id=item_id, first=first, after=after)
        assert "errors" not in body, body
        connection = body["data"]["item"]["events"]
        nodes += [edge["node"] for edge in connection["edges"]]
        if not connection["pageInfo"]["hasNextPage"]:
            return nodes
        after = connection["pageInfo"]["endCursor"]


@pytest.fixture
async def told(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> dict[str, Any]:
    """An item's story, acted out: enqueued, re-uploaded, claimed, renewed, released,
    claimed by another, lapsed (noticed by the next claim), lapsed again, escalated for
    abandonment by the claim that noticed it, noted, claimed and decided in the escalation
    queue, overturned. What the acts returned, by name."""
    setup = await gql(tokens.admin, SENIOR_REJECT)
    assert {v["__typename"] for v in setup["data"].values()} == {
        "QueueConfigured",
        "ReasonCodeDefined",
    }, setup
    [item] = await enqueue(gql, tokens, "cust-1")
    item_id = item["id"]
    reupload = await gql(
        tokens.integration,
        ENQUEUE,
        queue="kyc",
        items=[{"externalKey": "cust-1", "payload": {"applicant": "cust-1", "rescored": True}}],
    )
    [reuploaded] = reupload["data"]["enqueueItems"]["items"]
    assert reuploaded["evidenceUpdated"] is True
    first = await claimed(gql, tokens.reviewer)
    lease = {"itemId": item_id, "leaseToken": first["leaseToken"]}
    renewed = (await gql(tokens.reviewer, RENEW, **lease))["data"]["renewLease"]
    assert renewed["__typename"] == "LeaseRenewed"
    released = (await gql(tokens.reviewer, RELEASE, **lease))["data"]["releaseLease"]
    assert released["__typename"] == "LeaseReleased"
    second = await claimed(gql, tokens.other_reviewer)
    await lapse_now(owner_conn, item_id)
    third = await claimed(gql, tokens.reviewer)
    await lapse_now(owner_conn, item_id)
    # The second abandonment reaches maxAbandons: the claim moves the item on and finds
    # nothing else in kyc.
    empty = (await gql(tokens.other_reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    assert empty["__typename"] == "QueueEmpty", empty
    noted = await gql(
        tokens.manager, ADD_NOTE, input={"itemId": item_id, "body": "Two lapses: look closer."}
    )
    assert noted["data"]["addNote"]["__typename"] == "NoteAdded", noted
    fourth = await claimed(gql, tokens.reviewer, "kyc-senior")
    decided = await gql(
        tokens.reviewer, DECIDE, input=decision_input(fourth, "APPROVE", "documents_ok")
    )
    decision = decided["data"]["submitDecision"]["decision"]
    overturned = await gql(
        tokens.approver,
        OVERTURN,
        input={
            "decisionId": decision["id"],
            "reasonCode": "name_mismatch",
            "note": "The names differ.",
        },
    )
    overturn = overturned["data"]["overturnDecision"]["decision"]
    return {
        "item_id": item_id,
        "hashes": (item["evidenceHash"], reuploaded["item"]["evidenceHash"]),
        "claims": [first, second, third, fourth],
        "renewed_until": renewed["leaseExpiresAt"],
        "decision": decision,
        "overturn": overturn,
    }


def outline(node: dict[str, Any]) -> tuple[Any, ...]:
    return (node["kind"], node["actor"], node["actorRole"], node["queue"])


async def test_the_story_reads_end_to_end_in_one_query(
    gql: GraphQL, tokens: Tokens, told: dict[str, Any]
) -> None:
    body = await gql(tokens.manager, STORY, id=told["item_id"], first=50)
    connection = body["data"]["item"]["events"]
    nodes = [edge["node"] for edge in connection["edges"]]

    assert [outline(node) for node in nodes] == [
        ("ENQUEUED", "kyc-provider", "integration", "kyc"),
        ("REUPLOADED", "kyc-provider", "integration", "kyc"),
        ("CLAIMED", "rita", "reviewer", "kyc"),
        ("RENEWED", "rita", "reviewer", "kyc"),
        ("RELEASED", "rita", "reviewer", "kyc"),
        ("CLAIMED", "rob", "reviewer", "kyc"),
        ("LAPSED", "rob", "reviewer", "kyc"),
        ("CLAIMED", "rita", "reviewer", "kyc"),
        ("LAPSED", "rita", "reviewer", "kyc"),
        ("ESCALATED", "rob", "reviewer", "kyc"),
        ("NOTED", "max", "manager", "kyc-senior"),
        ("CLAIMED", "rita", "reviewer", "kyc-senior"),
        ("DECIDED", "rita", "reviewer", "kyc-senior"),
        ("OVERTURNED", "ann", "approver", "kyc-senior"),
    ]
    assert connection["pageInfo"]["hasNextPage"] is False
    enqueued, reuploaded, claim_1, renewal, release, claim_2, lapse_2, claim_3, lapse_3 = nodes[:9]
    escalation, note, claim_4, decided, overturned = nodes[9:]
    # What each kind carries.
    assert (enqueued["evidenceHash"], reuploaded["evidenceHash"]) == told["hashes"]
    assert renewal["until"] == told["renewed_until"]
    assert (escalation["fromQueue"], escalation["toQueue"]) == ("kyc", "kyc-senior")
    assert escalation["lease"] is None
    assert escalation["decision"] is None
    assert note["body"] == "Two lapses: look closer."
    assert note["lease"] is None
    assert decided["decision"] == {
        "id": told["decision"]["id"],
        "verdict": "APPROVE",
        "isOverturn": False,
    }
    assert overturned["decision"] == {
        "id": told["overturn"]["id"],
        "verdict": "REJECT",
        "isOverturn": True,
    }
    assert overturned["body"] == "The names differ."
    assert overturned["lease"] is None
    # One lease per claim, named the same on every event made under it, never alike twice.
    leases = [claim_1, claim_2, claim_3, claim_4]
    assert [c["lease"]["owner"] for c in leases] == ["rita", "rob", "rita", "rita"]
    assert len({c["lease"]["id"] for c in leases}) == 4
    assert renewal["lease"] == release["lease"] == claim_1["lease"]
    assert lapse_2["lease"] == claim_2["lease"]
    assert lapse_3["lease"] == claim_3["lease"]
    assert decided["lease"] == claim_4["lease"]
    assert all(c["at"] == c["lease"]["startedAt"] for c in leases)
    # Lapses were recorded when a claim noticed them, after they happened.
    assert lapse_2["recordedAt"] == claim_3["at"]
    assert lapse_2["recordedAt"] > lapse_2["at"]
    assert lapse_3["recordedAt"] > lapse_3["at"]
    # Derived events have no recording of their own.
    assert {n["recordedAt"] is None for n in (claim_1, claim_4, decided, overturned)} == {True}
    assert [n["at"] for n in nodes] == sorted(n["at"] for n in nodes)


async def test_no_lease_token_is_ever_shown(
    gql: GraphQL, tokens: Tokens, told: dict[str, Any]
) -> None:
    body = await gql(tokens.manager, STORY, id=told["item_id"], first=50)
    text = json.dumps(body)

    for claim in told["claims"]:
        token = claim["leaseToken"]
        assert token not in text
        assert token.replace("-", "") not in text


@pytest.mark.parametrize("first", [1, 2, 3, 5])
async def test_pages_join_up_with_no_gap_or_repeat(
    gql: GraphQL, tokens: Tokens, told: dict[str, Any], first: int
) -> None:
    whole = (await gql(tokens.manager, STORY, id=told["item_id"], first=50))["data"]["item"]
    paged = await story(gql, tokens.manager, told["item_id"], first=first)

    assert paged == [edge["node"] for edge in whole["events"]["edges"]]
    assert len(paged) == 14


async def test_a_malformed_cursor_and_page_size_are_refused(
    gql: GraphQL, tokens: Tokens, told: dict[str, Any]
) -> None:
    bad_cursor = await gql(tokens.manager, STORY, id=told["item_id"], first=5, after="bm9wZQ==")
    too_many = await gql(tokens.manager, STORY, id=told["item_id"], first=201)

    assert "malformed cursor" in bad_cursor["errors"][0]["message"]
    assert "first must be between 1 and 200" in too_many["errors"][0]["message"]


async def test_a_lapse_no_claim_noticed_yet_shows_then_is_recorded_once(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    await claimed(gql, tokens.reviewer)
    await lapse_now(owner_conn, item["id"])
    first_page = (await gql(tokens.manager, STORY, id=item["id"], first=3))["data"]["item"]
    seen = [edge["node"] for edge in first_page["events"]["edges"]]
    assert [outline(n) for n in seen] == [
        ("ENQUEUED", "kyc-provider", "integration", "kyc"),
        ("CLAIMED", "rita", "reviewer", "kyc"),
        ("LAPSED", "rita", "reviewer", "kyc"),
    ]
    assert seen[2]["recordedAt"] is None

    await claimed(gql, tokens.other_reviewer)
    after = first_page["events"]["pageInfo"]["endCursor"]
    rest = (await gql(tokens.manager, STORY, id=item["id"], first=50, after=after))["data"]
    whole = await story(gql, tokens.manager, item["id"])

    # A reader paging on learns of the new claim only, not of the same lapse again.
    assert [outline(e["node"]) for e in rest["item"]["events"]["edges"]] == [
        ("CLAIMED", "rob", "reviewer", "kyc")
    ]
    assert [outline(n) for n in whole] == [
        *map(outline, seen),
        ("CLAIMED", "rob", "reviewer", "kyc"),
    ]
    noticed = whole[2]
    assert (noticed["at"], noticed["lease"]) == (seen[2]["at"], seen[2]["lease"])
    assert noticed["recordedAt"] == whole[3]["at"]


async def test_an_escalation_by_verdict_goes_to_the_queue_the_item_went_to(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    escalate = await gql(
        tokens.admin,
        'mutation { defineReasonCode(input: {queue: "kyc", code: "needs_senior", '
        'label: "Needs a senior", verdicts: [ESCALATE]}) { __typename } }',
    )
    assert escalate["data"]["defineReasonCode"]["__typename"] == "ReasonCodeDefined"
    [item] = await enqueue(gql, tokens, "cust-1")
    claim = await claimed(gql, tokens.reviewer)
    decided = await gql(
        tokens.reviewer, DECIDE, input={**decision_input(claim, "ESCALATE", "needs_senior")}
    )
    assert decided["data"]["submitDecision"]["__typename"] == "DecisionRecorded", decided

    nodes = await story(gql, tokens.manager, item["id"])

    assert [outline(n) for n in nodes] == [
        ("ENQUEUED", "kyc-provider", "integration", "kyc"),
        ("CLAIMED", "rita", "reviewer", "kyc"),
        ("ESCALATED", "rita", "reviewer", "kyc"),
    ]
    escalation = nodes[2]
    assert (escalation["fromQueue"], escalation["toQueue"]) == ("kyc", "kyc-senior")
    assert escalation["decision"]["verdict"] == "ESCALATE"
    assert escalation["lease"] == nodes[1]["lease"]


MANY_STORIES = """
{
  queue(name: "kyc") {
    items(first: 100) {
      edges { node { id events(first: 10) { edges { node { kind decision { id } } } } } }
    }
  }
}
"""


async def test_many_items_stories_cost_one_statement(
    gql: GraphQL, tokens: Tokens, kyc: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await enqueue(gql, tokens, *(f"cust-{n}" for n in range(12)))
    for _ in range(12):
        claim = await claimed(gql, tokens.reviewer)
        decided = await gql(
            tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
        )
        assert decided["data"]["submitDecision"]["__typename"] == "DecisionRecorded"

    data, calls = await statements_of(gql, tokens.manager, MANY_STORIES, monkeypatch)

    items = data["queue"]["items"]["edges"]
    assert len(items) == 12
    for edge in items:
        kinds = [e["node"]["kind"] for e in edge["node"]["events"]["edges"]]
        assert kinds == ["ENQUEUED", "CLAIMED", "DECIDED"]
    assert calls.count("item_events_get_pages") == 1
    assert calls.count("decisions_get_by_ids") == 1


async def test_an_enqueue_that_changes_nothing_records_nothing(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    # The same evidence again: nothing changes.
    await enqueue(gql, tokens, "cust-1")
    claim = await claimed(gql, tokens.reviewer)
    decided = await gql(
        tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
    )
    assert decided["data"]["submitDecision"]["__typename"] == "DecisionRecorded"
    # Other evidence for a decided item: the item keeps what was decided on.
    again = await gql(
        tokens.integration,
        ENQUEUE,
        queue="kyc",
        items=[{"externalKey": "cust-1", "payload": {"applicant": "someone else"}}],
    )
    assert again["data"]["enqueueItems"]["items"][0]["evidenceUpdated"] is False

    nodes = await story(gql, tokens.manager, item["id"])

    assert [n["kind"] for n in nodes] == ["ENQUEUED", "CLAIMED", "DECIDED"]
