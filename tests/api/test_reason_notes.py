"""A reason code that requires a note: a decision or an overturn giving it without a note
that says something is refused naming `note`, and nothing is written."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, OVERTURN, decision_input, enqueue
from tests.integration.helpers import snapshot

DEFINE = """
mutation($code: String!, $verdicts: [Verdict!]!, $requiresNote: Boolean) {
  defineReasonCode(input: {queue: "kyc", code: $code, label: "Needs words",
                           verdicts: $verdicts, requiresNote: $requiresNote}) {
    __typename ... on ReasonCodeDefined { reasonCode { code requiresNote } }
  }
}
"""
CATALOGUE = '{ queue(name: "kyc") { reasonCodes { code requiresNote } } }'
REFUSAL = """
    __typename
    ... on InvalidInput { field message }
    ... on InvalidReasonCode { code }
    ... on DecisionRecorded { decision { id note verdict } }
"""
SUBMIT = f"""
mutation($input: SubmitDecisionInput!) {{ submitDecision(input: $input) {{ {REFUSAL} }} }}
"""
OVERTURN_NOTED = f"""
mutation($input: OverturnDecisionInput!) {{ overturnDecision(input: $input) {{ {REFUSAL} }} }}
"""
NO_NOTES: list[dict[str, Any]] = [{}, {"note": None}, {"note": ""}, {"note": " \n\t "}]


async def define(
    gql: GraphQL, tokens: Tokens, code: str, verdicts: list[str], requires_note: bool | None
) -> bool:
    body = await gql(tokens.admin, DEFINE, code=code, verdicts=verdicts, requiresNote=requires_note)
    result = body["data"]["defineReasonCode"]
    assert result["__typename"] == "ReasonCodeDefined", body
    required: bool = result["reasonCode"]["requiresNote"]
    return required


async def test_the_setting_is_kept_until_it_is_given(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    assert await define(gql, tokens, "fraud", ["REJECT"], None) is False
    assert await define(gql, tokens, "fraud", ["REJECT"], True) is True
    # Redefining the label or verdicts without the setting leaves it as it was.
    assert await define(gql, tokens, "fraud", ["REJECT", "ESCALATE"], None) is True
    assert await define(gql, tokens, "fraud", ["REJECT"], False) is False

    codes = (await gql(tokens.reviewer, CATALOGUE))["data"]["queue"]["reasonCodes"]
    assert {"code": "fraud", "requiresNote": False} in codes
    assert {"code": "documents_ok", "requiresNote": False} in codes


async def refused_without_a_note(
    gql: GraphQL, token: str, mutation: str, field: str, entry: dict[str, Any]
) -> None:
    """`entry` sent with each way of giving no note is refused, naming `note`."""
    for no_note in NO_NOTES:
        refused = (await gql(token, mutation, input={**entry, **no_note}))["data"]
        assert refused[field] == {
            "__typename": "InvalidInput",
            "field": "note",
            "message": "reason code 'fraud' requires a note saying why",
        }, no_note


@pytest.fixture
async def fraud_requires_note(gql: GraphQL, tokens: Tokens, kyc: str) -> str:
    assert await define(gql, tokens, "fraud", ["REJECT"], True) is True
    return "fraud"


async def test_a_decision_without_a_note_is_refused_then_one_with_a_note_is_recorded(
    gql: GraphQL, tokens: Tokens, fraud_requires_note: str, owner_conn: asyncpg.Connection
) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    entry = decision_input(claim, "REJECT", fraud_requires_note)
    before = await snapshot(owner_conn)

    await refused_without_a_note(gql, tokens.reviewer, SUBMIT, "submitDecision", entry)
    # The reason code is checked first: an unknown one is said to be unknown.
    unknown = (await gql(tokens.reviewer, SUBMIT, input={**entry, "reasonCode": "nope"}))["data"]
    assert unknown["submitDecision"]["__typename"] == "InvalidReasonCode"
    assert await snapshot(owner_conn) == before

    recorded = (await gql(tokens.reviewer, SUBMIT, input={**entry, "note": "Forged ID."}))["data"]
    result = recorded["submitDecision"]
    assert result["__typename"] == "DecisionRecorded", result
    assert (result["decision"]["verdict"], result["decision"]["note"]) == ("REJECT", "Forged ID.")
    decided = await owner_conn.fetchval(
        "SELECT count(*) FROM review_decisions WHERE item_id = $1", int(item["id"])
    )
    assert decided == 1


async def test_an_overturn_without_a_note_is_refused_then_one_with_a_note_is_recorded(
    gql: GraphQL, tokens: Tokens, fraud_requires_note: str, owner_conn: asyncpg.Connection
) -> None:
    await enqueue(gql, tokens, "cust-1")
    claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    decided = await gql(
        tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
    )
    decision_id = decided["data"]["submitDecision"]["decision"]["id"]
    entry = {"decisionId": decision_id, "reasonCode": fraud_requires_note}
    before = await snapshot(owner_conn)

    await refused_without_a_note(gql, tokens.approver, OVERTURN_NOTED, "overturnDecision", entry)
    assert await snapshot(owner_conn) == before

    overturned = await gql(
        tokens.approver, OVERTURN, input={**entry, "note": "The ID was forged after all."}
    )
    result = overturned["data"]["overturnDecision"]
    assert result["__typename"] == "DecisionRecorded", result
    assert result["decision"]["supersedes"] == {"id": decision_id}
