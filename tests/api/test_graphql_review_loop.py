"""The review loop over HTTP: what a console and an integration actually send."""

from __future__ import annotations

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, OVERTURN, decision_input, enqueue


async def test_enqueue_claim_decide_overturn(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    claim = (await gql(tokens.reviewer, CLAIM, queue=kyc))["data"]["claimNext"]
    assert claim["__typename"] == "Claim"
    assert claim["item"]["id"] == item["id"]
    assert claim["evidenceHash"] == item["evidenceHash"]

    decided = await gql(
        tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
    )
    recorded = decided["data"]["submitDecision"]
    assert recorded["__typename"] == "DecisionRecorded"
    assert recorded["decision"]["reviewer"] == "rita"
    assert recorded["decision"]["item"]["state"] == "DECIDED"
    assert recorded["replay"] is False

    # The same submission again (a console whose answer was lost): the same decision back.
    again = await gql(
        tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
    )
    replayed = again["data"]["submitDecision"]
    assert replayed["__typename"] == "DecisionRecorded"
    assert replayed["replay"] is True
    assert replayed["decision"]["id"] == recorded["decision"]["id"]
    # A different verdict under the spent lease: refused, and it says why.
    other = await gql(
        tokens.reviewer, DECIDE, input=decision_input(claim, "REJECT", "name_mismatch")
    )
    assert other["data"]["submitDecision"]["__typename"] == "StaleLease"
    assert other["data"]["submitDecision"]["decidedUnderThisLease"] is True

    refused = await gql(
        tokens.reviewer,
        OVERTURN,
        input={"decisionId": recorded["decision"]["id"], "reasonCode": "name_mismatch"},
    )
    assert refused["data"]["overturnDecision"]["__typename"] == "NotPermitted"
    overturned = await gql(
        tokens.approver,
        OVERTURN,
        input={"decisionId": recorded["decision"]["id"], "reasonCode": "name_mismatch"},
    )
    result = overturned["data"]["overturnDecision"]
    assert result["__typename"] == "DecisionRecorded"
    assert result["decision"]["verdict"] == "REJECT"
    assert result["decision"]["isOverturn"] is True
    assert result["decision"]["supersedes"]["id"] == recorded["decision"]["id"]

    read = await gql(
        tokens.manager,
        "query($id: ID!) { item(id: $id) { currentDecision { id verdict } decisions { id } } }",
        id=item["id"],
    )
    assert read["data"]["item"]["currentDecision"] == {
        "id": result["decision"]["id"],
        "verdict": "REJECT",
    }
    assert len(read["data"]["item"]["decisions"]) == 2


async def test_renew_and_release(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    await enqueue(gql, tokens, "cust-1")
    claim = (await gql(tokens.reviewer, CLAIM, queue=kyc))["data"]["claimNext"]
    args = {"itemId": claim["item"]["id"], "leaseToken": claim["leaseToken"]}
    renew = """
    mutation($itemId: ID!, $leaseToken: String!) {
      renewLease(itemId: $itemId, leaseToken: $leaseToken) {
        __typename ... on LeaseRenewed { leaseExpiresAt }
      }
    }"""
    release = """
    mutation($itemId: ID!, $leaseToken: String!) {
      releaseLease(itemId: $itemId, leaseToken: $leaseToken) {
        __typename ... on LeaseReleased { item { state } }
      }
    }"""
    renewed = (await gql(tokens.reviewer, renew, **args))["data"]["renewLease"]
    assert renewed["__typename"] == "LeaseRenewed"
    assert renewed["leaseExpiresAt"] >= claim["leaseExpiresAt"]
    stranger = (await gql(tokens.other_reviewer, release, **args))["data"]["releaseLease"]
    assert stranger["__typename"] == "StaleLease"
    released = (await gql(tokens.reviewer, release, **args))["data"]["releaseLease"]
    assert released == {"__typename": "LeaseReleased", "item": {"state": "PENDING"}}
    reclaimed = (await gql(tokens.other_reviewer, CLAIM, queue=kyc))["data"]["claimNext"]
    assert reclaimed["item"]["leaseCount"] == 2


async def test_evidence_changed_over_http(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    await enqueue(gql, tokens, "cust-1")
    claim = (await gql(tokens.reviewer, CLAIM, queue=kyc))["data"]["claimNext"]
    reupload = await gql(
        tokens.integration,
        ENQUEUE,
        queue="kyc",
        items=[{"externalKey": "cust-1", "payload": {"applicant": "cust-1", "rescored": True}}],
    )
    assert reupload["data"]["enqueueItems"]["items"][0]["evidenceUpdated"] is True
    refused = await gql(
        tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
    )
    result = refused["data"]["submitDecision"]
    assert result["__typename"] == "EvidenceChanged"
    assert result["currentEvidenceHash"] != claim["evidenceHash"]
    decisions = await gql(
        tokens.manager, '{ queue(name: "kyc") { decisions { edges { node { id } } } } }'
    )
    assert decisions["data"]["queue"]["decisions"]["edges"] == []


async def test_queue_reads_and_pagination(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    items = await enqueue(gql, tokens, *(f"cust-{n}" for n in range(5)))
    page = """
    query($after: String) {
      queue(name: "kyc") {
        name leaseTtlSeconds reasonCodes { code verdicts }
        items(state: PENDING, first: 2, after: $after) {
          edges { cursor node { id } } pageInfo { hasNextPage endCursor }
        }
      }
    }
    """
    seen: list[str] = []
    after = None
    while True:
        body = await gql(tokens.manager, page, after=after)
        connection = body["data"]["queue"]["items"]
        seen += [edge["node"]["id"] for edge in connection["edges"]]
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
    assert seen == [item["id"] for item in items]
    queue = body["data"]["queue"]
    assert queue["leaseTtlSeconds"] == 300
    assert {"code": "documents_ok", "verdicts": ["APPROVE"]} in queue["reasonCodes"]


async def test_reviewer_sees_only_its_queues(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    body = await gql(
        tokens.outsider,
        'query($id: ID!) { queues { name } queue(name: "kyc") { name } item(id: $id) { id } }',
        id=item["id"],
    )
    assert body["data"] == {"queues": [], "queue": None, "item": None}
    claim = (await gql(tokens.outsider, CLAIM, queue=kyc))["data"]["claimNext"]
    assert claim["__typename"] == "NotPermitted"
    me = await gql(tokens.outsider, "{ me { user role queues } }")
    assert me["data"]["me"] == {"user": "olga", "role": "reviewer", "queues": ["payouts"]}
