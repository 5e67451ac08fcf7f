"""`Decision.item` answers as anything outside the reader's queues does: null. A decision
stays in the queue it was made in, but an escalation moves its item on, to a queue the
reader's token may not cover."""

from __future__ import annotations

import pytest

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, decision_input, enqueue

NEEDS_SENIOR = """
mutation {
  defineReasonCode(input: {queue: "kyc", code: "needs_senior", label: "Needs a senior",
                           verdicts: [ESCALATE]}) { __typename }
}
"""
DECISION = """
query($id: ID!) { decision(id: $id) { id queue verdict item { id queue } } }
"""
QUEUE_DECISIONS = """
{ queue(name: "kyc") { decisions { edges { node { id item { id queue } } } } } }
"""


@pytest.fixture
async def escalated(gql: GraphQL, tokens: Tokens, kyc: str) -> tuple[str, str]:
    """(decision id, item id): rita escalated the item from kyc to kyc-senior."""
    defined = await gql(tokens.admin, NEEDS_SENIOR)
    assert defined["data"]["defineReasonCode"]["__typename"] == "ReasonCodeDefined", defined
    [item] = await enqueue(gql, tokens, "cust-1")
    claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    decided = await gql(
        tokens.reviewer, DECIDE, input=decision_input(claim, "ESCALATE", "needs_senior")
    )
    recorded = decided["data"]["submitDecision"]
    assert recorded["__typename"] == "DecisionRecorded", decided
    return recorded["decision"]["id"], item["id"]


async def test_an_escalated_item_reads_as_null_to_a_reader_of_the_first_queue_only(
    gql: GraphQL, tokens: Tokens, escalated: tuple[str, str]
) -> None:
    decision_id, item_id = escalated

    # rob covers kyc only: the decision is his to read, the item now is not.
    seen = (await gql(tokens.other_reviewer, DECISION, id=decision_id))["data"]["decision"]
    assert seen == {"id": decision_id, "queue": "kyc", "verdict": "ESCALATE", "item": None}
    listed = (await gql(tokens.other_reviewer, QUEUE_DECISIONS))["data"]["queue"]
    assert [edge["node"] for edge in listed["decisions"]["edges"]] == [
        {"id": decision_id, "item": None}
    ]
    # As the item itself reads to him.
    direct = await gql(
        tokens.other_reviewer, "query($id: ID!) { item(id: $id) { id } }", id=item_id
    )
    assert direct["data"]["item"] is None


async def test_a_reader_covering_the_items_queue_sees_it(
    gql: GraphQL, tokens: Tokens, escalated: tuple[str, str]
) -> None:
    decision_id, item_id = escalated
    for token in (tokens.reviewer, tokens.manager):
        seen = (await gql(token, DECISION, id=decision_id))["data"]["decision"]
        assert seen["item"] == {"id": item_id, "queue": "kyc-senior"}
