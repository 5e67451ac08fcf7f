"""Second review over GraphQL (migration 0020): configureQueue's secondReview and
Queue.secondReview, a provisional decision's status, the second reviewer's claim with
ReviewItem.awaitingSecondReview, confirmDecision and overrideDecision, and who may do what:
the first decider never, a reviewer whose token covers the second-review queue only."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, decision_input, enqueue
from tests.conftest import token_maker
from tests.integration.helpers import snapshot

CONFIGURE = """
mutation($secondReview: SecondReviewInput) {
  configureQueue(input: {name: "kyc", secondReview: $secondReview}) {
    __typename
    ... on QueueConfigured { queue { name secondReview { verdicts minPriority queue } } }
    ... on InvalidInput { field message }
    ... on Error { message }
  }
}
"""
QUEUE = """
query($name: String!) { queue(name: $name) { name holderRole secondReview { verdicts queue } } }
"""
DECISION_FIELDS = """
  id verdict reasonCode note reviewer evidenceHash status confirmedBy confirmedAt isOverride
  reviewQueue queue supersedes { id status } supersededBy { id }
  application { state }
"""
ITEM = f"""
query($id: ID!) {{
  item(id: $id) {{
    id queue state
    awaitingSecondReview {{ {DECISION_FIELDS} }}
    currentDecision {{ id status }}
    decisions {{ id status }}
    events {{ edges {{ node {{ kind queue actor fromQueue toQueue decision {{ id }} }} }} }}
  }}
}}
"""
SECOND_CLAIM = f"""
mutation($queue: String!) {{
  claimNext(queue: $queue) {{
    __typename
    ... on Claim {{
      leaseToken evidenceHash
      item {{ id queue awaitingSecondReview {{ {DECISION_FIELDS} }} }}
    }}
    ... on Error {{ message }}
  }}
}}
"""
RESULT = f"""
    __typename
    ... on DecisionRecorded {{ replay decision {{ {DECISION_FIELDS} }} }}
    ... on EvidenceChanged {{ currentEvidenceHash }}
    ... on InvalidReasonCode {{ queue code }}
    ... on InvalidInput {{ field }}
    ... on Error {{ message }}
"""
# ConfirmDecisionResult has no InvalidReasonCode: a confirmation gives no reason.
CONFIRM_RESULT = RESULT.replace("... on InvalidReasonCode { queue code }", "")
CONFIRM = f"""
mutation($input: ConfirmDecisionInput!) {{ confirmDecision(input: $input) {{ {CONFIRM_RESULT} }} }}
"""
SUBMIT = f"""
mutation($input: SubmitDecisionInput!) {{ submitDecision(input: $input) {{ {RESULT} }} }}
"""
OVERRIDE = f"""
mutation($input: OverrideDecisionInput!) {{ overrideDecision(input: $input) {{ {RESULT} }} }}
"""
REVIEW_QUEUE = "kyc-second-review"


@pytest.fixture
async def four_eyes(gql: GraphQL, tokens: Tokens, kyc: str) -> dict[str, Any]:
    body = await gql(tokens.admin, CONFIGURE, secondReview={"verdicts": ["REJECT"]})
    result: dict[str, Any] = body["data"]["configureQueue"]
    assert result["__typename"] == "QueueConfigured", body
    return result


@pytest.fixture
async def second_reviewers(owner_db: Database, four_eyes: dict[str, Any]) -> dict[str, str]:
    """Tokens for the second-review queue, once kyc sends its rejections there."""
    make = token_maker(owner_db)
    return {
        "sam": await make("sam", Role.REVIEWER, REVIEW_QUEUE),
        "sue": await make("sue", Role.REVIEWER, REVIEW_QUEUE),
        # Rita, the first decider, covering the second-review queue too.
        "rita": await make("rita", Role.REVIEWER, "kyc", REVIEW_QUEUE),
        "approver": await make("ann", Role.APPROVER, REVIEW_QUEUE),
    }


async def provisional(gql: GraphQL, tokens: Tokens, key: str = "cust-1") -> dict[str, Any]:
    """Rita rejects a fresh item: the decision as submitDecision answered it."""
    await enqueue(gql, tokens, key)
    claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    body = await gql(
        tokens.reviewer, SUBMIT, input=decision_input(claim, "REJECT", "name_mismatch")
    )
    recorded: dict[str, Any] = body["data"]["submitDecision"]
    assert recorded["__typename"] == "DecisionRecorded", body
    decision: dict[str, Any] = recorded["decision"]
    assert (decision["status"], decision["application"]) == ("PROVISIONAL", None)
    return decision


async def second_claim(gql: GraphQL, token: str) -> dict[str, Any]:
    result: dict[str, Any] = (await gql(token, SECOND_CLAIM, queue=REVIEW_QUEUE))["data"][
        "claimNext"
    ]
    return result


def answer(claim: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "itemId": claim["item"]["id"],
        "leaseToken": claim["leaseToken"],
        "evidenceHash": claim["evidenceHash"],
        **extra,
    }


async def test_the_setting_round_trips(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    body = await gql(
        tokens.admin,
        CONFIGURE,
        secondReview={"verdicts": ["REJECT", "APPROVE"], "minPriority": 50},
    )
    assert body["data"]["configureQueue"]["queue"]["secondReview"] == {
        "verdicts": ["APPROVE", "REJECT"],
        "minPriority": 50,
        "queue": REVIEW_QUEUE,
    }
    read = (await gql(tokens.admin, QUEUE, name="kyc"))["data"]["queue"]
    assert read["secondReview"] == {"verdicts": ["APPROVE", "REJECT"], "queue": REVIEW_QUEUE}
    created = (await gql(tokens.admin, QUEUE, name=REVIEW_QUEUE))["data"]["queue"]
    assert (created["holderRole"], created["secondReview"]) == ("reviewer", None)

    refused = await gql(tokens.admin, CONFIGURE, secondReview={"verdicts": ["ESCALATE"]})
    assert refused["data"]["configureQueue"]["__typename"] == "InvalidInput"
    assert refused["data"]["configureQueue"]["field"] == "secondReview.verdicts"
    # Only admins configure.
    denied = await gql(tokens.reviewer, CONFIGURE, secondReview={"verdicts": []})
    assert denied["data"]["configureQueue"]["__typename"] == "NotPermitted"

    off = await gql(tokens.admin, CONFIGURE, secondReview={"verdicts": []})
    assert off["data"]["configureQueue"]["queue"]["secondReview"] is None


async def test_confirmation_round_trip_with_every_new_field(
    gql: GraphQL, tokens: Tokens, second_reviewers: dict[str, str]
) -> None:
    first = await provisional(gql, tokens)
    claim = await second_claim(gql, second_reviewers["sam"])
    assert claim["__typename"] == "Claim", claim
    waiting = claim["item"]["awaitingSecondReview"]
    assert claim["item"]["queue"] == REVIEW_QUEUE
    assert waiting == {
        "id": first["id"],
        "verdict": "REJECT",
        "reasonCode": "name_mismatch",
        "note": None,
        "reviewer": "rita",
        "evidenceHash": claim["evidenceHash"],
        "status": "PROVISIONAL",
        "confirmedBy": None,
        "confirmedAt": None,
        "isOverride": False,
        "reviewQueue": None,
        "queue": "kyc",
        "supersedes": None,
        "supersededBy": None,
        "application": None,
    }
    item = (await gql(tokens.admin, ITEM, id=claim["item"]["id"]))["data"]["item"]
    assert item["currentDecision"] is None
    assert item["decisions"] == [{"id": first["id"], "status": "PROVISIONAL"}]

    body = await gql(second_reviewers["sam"], CONFIRM, input=answer(claim))
    confirmed = body["data"]["confirmDecision"]
    assert confirmed["__typename"] == "DecisionRecorded", body
    assert confirmed["replay"] is False
    decision = confirmed["decision"]
    assert (decision["id"], decision["status"], decision["confirmedBy"]) == (
        first["id"],
        "EFFECTIVE",
        "sam",
    )
    assert decision["confirmedAt"] is not None
    assert decision["application"] == {"state": "PENDING"}

    again = (await gql(second_reviewers["sam"], CONFIRM, input=answer(claim)))["data"]
    assert again["confirmDecision"]["replay"] is True
    assert again["confirmDecision"]["decision"]["id"] == first["id"]

    item = (await gql(tokens.admin, ITEM, id=claim["item"]["id"]))["data"]["item"]
    assert item["state"] == "DECIDED"
    assert item["awaitingSecondReview"] is None
    assert item["currentDecision"] == {"id": first["id"], "status": "EFFECTIVE"}
    kinds = [edge["node"]["kind"] for edge in item["events"]["edges"]]
    assert kinds == ["ENQUEUED", "CLAIMED", "SECOND_REVIEW", "CLAIMED", "CONFIRMED"]
    sent = item["events"]["edges"][2]["node"]
    assert (sent["fromQueue"], sent["toQueue"], sent["decision"]) == (
        "kyc",
        REVIEW_QUEUE,
        {"id": first["id"]},
    )


async def test_override_round_trip(
    gql: GraphQL, tokens: Tokens, second_reviewers: dict[str, str]
) -> None:
    first = await provisional(gql, tokens)
    claim = await second_claim(gql, second_reviewers["sam"])

    escalating = await gql(
        second_reviewers["sam"],
        OVERRIDE,
        input=answer(claim, verdict="ESCALATE", reasonCode="name_mismatch"),
    )
    assert escalating["data"]["overrideDecision"] == {
        "__typename": "InvalidInput",
        "field": "verdict",
        "message": escalating["data"]["overrideDecision"]["message"],
    }
    wrong = await gql(
        second_reviewers["sam"],
        OVERRIDE,
        input=answer(claim, verdict="APPROVE", reasonCode="name_mismatch"),
    )
    assert wrong["data"]["overrideDecision"]["__typename"] == "InvalidReasonCode"
    assert wrong["data"]["overrideDecision"]["queue"] == "kyc"

    body = await gql(
        second_reviewers["sam"],
        OVERRIDE,
        input=answer(claim, verdict="APPROVE", reasonCode="documents_ok", note="papers match"),
    )
    result = body["data"]["overrideDecision"]
    assert result["__typename"] == "DecisionRecorded", body
    decision = result["decision"]
    assert (decision["verdict"], decision["reasonCode"], decision["note"]) == (
        "APPROVE",
        "documents_ok",
        "papers match",
    )
    assert (decision["status"], decision["isOverride"], decision["reviewer"]) == (
        "EFFECTIVE",
        True,
        "sam",
    )
    assert (decision["queue"], decision["reviewQueue"]) == ("kyc", REVIEW_QUEUE)
    assert decision["supersedes"] == {"id": first["id"], "status": "SUPERSEDED"}
    assert decision["application"] == {"state": "PENDING"}

    item = (await gql(tokens.admin, ITEM, id=claim["item"]["id"]))["data"]["item"]
    assert item["decisions"] == [
        {"id": first["id"], "status": "SUPERSEDED"},
        {"id": decision["id"], "status": "EFFECTIVE"},
    ]
    assert item["currentDecision"] == {"id": decision["id"], "status": "EFFECTIVE"}
    assert [edge["node"]["kind"] for edge in item["events"]["edges"]][-1] == "OVERRIDDEN"


@pytest.mark.parametrize("mutation", [CONFIRM, OVERRIDE], ids=["confirm", "override"])
async def test_who_may_make_the_second_review(
    gql: GraphQL,
    tokens: Tokens,
    second_reviewers: dict[str, str],
    owner_conn: asyncpg.Connection,
    mutation: str,
) -> None:
    await provisional(gql, tokens)
    # The first decider is never handed the item.
    refused_claim = await second_claim(gql, second_reviewers["rita"])
    assert refused_claim["__typename"] == "QueueEmpty", refused_claim
    claim = await second_claim(gql, second_reviewers["sam"])
    extra = {} if mutation == CONFIRM else {"verdict": "APPROVE", "reasonCode": "documents_ok"}
    field = "confirmDecision" if mutation == CONFIRM else "overrideDecision"
    before = await snapshot(owner_conn)

    refusals = {
        # The first decider, with the second reviewer's lease token.
        "rita": "NotPermitted",
        # Another second reviewer: the lease is not theirs.
        "sue": "StaleLease",
        # A reviewer whose token does not cover the second-review queue: no such item.
        "other": "InvalidInput",
        # Not a reviewer.
        "approver": "NotPermitted",
        "admin": "NotPermitted",
    }
    callers = {
        "rita": second_reviewers["rita"],
        "sue": second_reviewers["sue"],
        "other": tokens.other_reviewer,
        "approver": second_reviewers["approver"],
        "admin": tokens.admin,
    }
    for who, expected in refusals.items():
        body = await gql(callers[who], mutation, input=answer(claim, **extra))
        assert body["data"][field]["__typename"] == expected, (who, body)
    assert await snapshot(owner_conn) == before

    allowed = await gql(second_reviewers["sam"], mutation, input=answer(claim, **extra))
    assert allowed["data"][field]["__typename"] == "DecisionRecorded", allowed


async def test_changed_evidence_is_refused_over_graphql(
    gql: GraphQL,
    tokens: Tokens,
    second_reviewers: dict[str, str],
    owner_conn: asyncpg.Connection,
) -> None:
    first = await provisional(gql, tokens)
    # The integration re-uploads the key with other evidence while the decision waits.
    body = await gql(
        tokens.integration,
        'mutation { enqueueItems(queue: "kyc", items: [{externalKey: "cust-1", '
        'payload: {applicant: "changed"}}]) '
        "{ ... on EnqueuedItems { items { evidenceUpdated item { evidenceHash } } } } }",
    )
    (entry,) = body["data"]["enqueueItems"]["items"]
    assert entry["evidenceUpdated"] is True
    claim = await second_claim(gql, second_reviewers["sam"])
    before = await snapshot(owner_conn)

    refused = await gql(second_reviewers["sam"], CONFIRM, input=answer(claim))
    assert refused["data"]["confirmDecision"] == {
        "__typename": "EvidenceChanged",
        "currentEvidenceHash": entry["item"]["evidenceHash"],
        "message": refused["data"]["confirmDecision"]["message"],
    }
    # The second reviewer is shown both: the evidence now, and what the decision was made on.
    assert claim["evidenceHash"] == entry["item"]["evidenceHash"]
    assert claim["item"]["awaitingSecondReview"]["evidenceHash"] == first["evidenceHash"]
    assert first["evidenceHash"] != claim["evidenceHash"]
    assert await snapshot(owner_conn) == before
