"""QA sampling through GraphQL: configureQueue(qaSampleRate), a QA reviewer claiming the
copy (qaOf), recordQaResult, Decision.qaResult and sampledForQa, Queue.measures.quality."""

from __future__ import annotations

from typing import Any

import pytest

from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, decision_input, enqueue
from tests.conftest import MakeToken, token_maker

CONFIGURE = """
mutation($rate: Float) {
  configureQueue(input: {name: "kyc", qaSampleRate: $rate}) {
    __typename
    ... on QueueConfigured { queue { name qaSampleRate qaQueue } }
    ... on InvalidInput { field message }
  }
}
"""
QA_CODES = """
mutation {
  agree: defineReasonCode(input: {queue: "kyc-qa", code: "qa_agree", label: "Right call",
                                  verdicts: [APPROVE]}) { __typename }
  wrong: defineReasonCode(input: {queue: "kyc-qa", code: "qa_wrong", label: "Wrong call",
                                  verdicts: [REJECT], requiresNote: true}) { __typename }
}
"""
QA_CLAIM = """
mutation {
  claimNext(queue: "kyc-qa") {
    __typename
    ... on Claim {
      leaseToken evidenceHash
      item { id payload qaOf { id verdict reasonCode note reviewer evidenceHash } }
    }
  }
}
"""
RECORD = """
mutation($input: RecordQaResultInput!) {
  recordQaResult(input: $input) {
    __typename
    ... on QaResultRecorded {
      replay
      result { agrees reasonCode note reviewer recordedAt }
      decision { id sampledForQa }
      item { id state }
    }
    ... on InvalidReasonCode { code verdict }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}
"""
DECISION = """
query($queue: String!) {
  queue(name: $queue) {
    decisions { edges { node { id sampledForQa qaResult { agrees reasonCode note reviewer } } } }
  }
}
"""
QUALITY = """
{
  queue(name: "kyc") {
    measures {
      quality {
        decided sampled checked agreed agreementRate overturned overturnRate sampledShare
        byReasonCode { key decided sampled checked agreed agreementRate }
        byReviewer { key decided sampled checked agreed agreementRate overturned }
      }
    }
  }
}
"""


@pytest.fixture
def make(owner_db: Database) -> MakeToken:
    return token_maker(owner_db)


@pytest.mark.parametrize("rate", [-0.5, 1.5])
async def test_a_rate_outside_0_to_1_is_invalid_input_naming_the_field(
    gql: GraphQL, tokens: Tokens, kyc: str, rate: float
) -> None:
    body = await gql(tokens.admin, CONFIGURE, rate=rate)

    assert body["data"]["configureQueue"]["__typename"] == "InvalidInput", body
    assert body["data"]["configureQueue"]["field"] == "qaSampleRate"


async def test_a_sampled_decision_is_checked_by_another_reviewer_end_to_end(
    gql: GraphQL, tokens: Tokens, kyc: str, make: MakeToken
) -> None:
    configured = await gql(tokens.admin, CONFIGURE, rate=1.0)
    assert configured["data"]["configureQueue"]["queue"] == {
        "name": "kyc",
        "qaSampleRate": 1.0,
        "qaQueue": "kyc-qa",
    }
    codes = await gql(tokens.admin, QA_CODES)
    assert {v["__typename"] for v in codes["data"].values()} == {"ReasonCodeDefined"}
    decider = await make("dora", Role.REVIEWER, "kyc", "kyc-qa")
    checker = await make("quinn", Role.REVIEWER, "kyc-qa")
    await enqueue(gql, tokens, "cust-1")
    claim = (await gql(decider, CLAIM, queue="kyc"))["data"]["claimNext"]
    decided = await gql(decider, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok"))
    decision_id = decided["data"]["submitDecision"]["decision"]["id"]

    # The decider is never handed the copy; the checker is, with the decision to check.
    mine = await gql(decider, QA_CLAIM)
    assert mine["data"]["claimNext"]["__typename"] == "QueueEmpty", mine
    qa_claim = (await gql(checker, QA_CLAIM))["data"]["claimNext"]
    assert qa_claim["__typename"] == "Claim", qa_claim
    assert qa_claim["item"]["payload"] == {"applicant": "cust-1"}
    assert qa_claim["item"]["qaOf"] == {
        "id": decision_id,
        "verdict": "APPROVE",
        "reasonCode": "documents_ok",
        "note": None,
        "reviewer": "dora",
        "evidenceHash": claim["evidenceHash"],
    }
    assert qa_claim["evidenceHash"] == claim["evidenceHash"]

    # submitDecision on the copy is a typed refusal.
    misuse = await gql(checker, DECIDE, input=decision_input(qa_claim, "APPROVE", "qa_agree"))
    assert misuse["data"]["submitDecision"]["__typename"] == "InvalidInput", misuse

    answer: dict[str, Any] = {
        "itemId": qa_claim["item"]["id"],
        "leaseToken": qa_claim["leaseToken"],
        "agrees": False,
        "reasonCode": "qa_agree",
    }
    wrong_code = (await gql(checker, RECORD, input=answer))["data"]["recordQaResult"]
    assert (wrong_code["__typename"], wrong_code["code"], wrong_code["verdict"]) == (
        "InvalidReasonCode",
        "qa_agree",
        "REJECT",
    )
    no_note = await gql(checker, RECORD, input={**answer, "reasonCode": "qa_wrong"})
    refused = no_note["data"]["recordQaResult"]
    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "note")

    recorded = await gql(
        checker, RECORD, input={**answer, "reasonCode": "qa_wrong", "note": "ID expired"}
    )

    result = recorded["data"]["recordQaResult"]
    assert result["__typename"] == "QaResultRecorded", recorded
    assert {k: v for k, v in result["result"].items() if k != "recordedAt"} == {
        "agrees": False,
        "reasonCode": "qa_wrong",
        "note": "ID expired",
        "reviewer": "quinn",
    }
    assert result["decision"] == {"id": decision_id, "sampledForQa": True}
    assert result["item"] == {"id": qa_claim["item"]["id"], "state": "DECIDED"}
    assert result["replay"] is False
    # The same check again, as a console sends it after a lost answer: the recorded result.
    repeated = await gql(
        checker, RECORD, input={**answer, "reasonCode": "qa_wrong", "note": "ID expired"}
    )
    assert repeated["data"]["recordQaResult"] == {**result, "replay": True}, repeated
    again = await gql(checker, RECORD, input={**answer, "reasonCode": "qa_wrong", "note": "x"})
    assert again["data"]["recordQaResult"]["__typename"] == "StaleLease"

    decisions = await gql(tokens.manager, DECISION, queue="kyc")
    (edge,) = decisions["data"]["queue"]["decisions"]["edges"]
    assert edge["node"] == {
        "id": decision_id,
        "sampledForQa": True,
        "qaResult": {
            "agrees": False,
            "reasonCode": "qa_wrong",
            "note": "ID expired",
            "reviewer": "quinn",
        },
    }

    quality = (await gql(tokens.manager, QUALITY))["data"]["queue"]["measures"]["quality"]
    assert quality == {
        "decided": 1,
        "sampled": 1,
        "checked": 1,
        "agreed": 0,
        "agreementRate": 0.0,
        "overturned": 0,
        "overturnRate": 0.0,
        "sampledShare": 1.0,
        "byReasonCode": [
            {
                "key": "documents_ok",
                "decided": 1,
                "sampled": 1,
                "checked": 1,
                "agreed": 0,
                "agreementRate": 0.0,
            }
        ],
        "byReviewer": [
            {
                "key": "dora",
                "decided": 1,
                "sampled": 1,
                "checked": 1,
                "agreed": 0,
                "agreementRate": 0.0,
                "overturned": 0,
            }
        ],
    }


async def test_an_unsampled_decision_reads_as_not_sampled(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    await enqueue(gql, tokens, "cust-1")
    claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    await gql(tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok"))

    decisions = await gql(tokens.manager, DECISION, queue="kyc")

    (edge,) = decisions["data"]["queue"]["decisions"]["edges"]
    assert (edge["node"]["sampledForQa"], edge["node"]["qaResult"]) == (False, None)
    quality = (await gql(tokens.manager, QUALITY))["data"]["queue"]["measures"]["quality"]
    assert (quality["decided"], quality["sampled"], quality["agreementRate"]) == (1, 0, None)
