"""The bulk actions over HTTP, as a manager's dashboard sends them: each answer a member of
its mutation's result union, skipped items listed with why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, enqueue

ITEM = "id queue state hold { until reason } assignment { reviewer until }"
ANSWER = f"""
    __typename ... on Error {{ message }} ... on InvalidInput {{ field }} ... on NotFound {{ id }}
    ... on InvalidHoldReason {{ queue code }}
    ... on BulkApplied {{ more changed {{ {ITEM} }} skipped {{ reason leaseOwner item {{ id }} }} }}
"""


def bulk(name: str, input_type: str) -> str:
    return f"mutation($input: {input_type}!) {{ {name}(input: $input) {{ {ANSWER} }} }}"


RELEASE = bulk("bulkRelease", "BulkReleaseInput")
ASSIGN = bulk("bulkAssign", "BulkAssignInput")
MOVE = bulk("bulkMove", "BulkMoveInput")
HOLD = bulk("bulkHold", "BulkHoldInput")
DEFINE_HOLD_REASON = """
mutation { defineHoldReason(input: {queue: "kyc", code: "waiting", label: "Waiting"}) {
  __typename } }
"""


def later(hours: float = 1) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat()


async def result(gql: GraphQL, token: str, query: str, **variables: Any) -> dict[str, Any]:
    body = await gql(token, query, **variables)
    assert "errors" not in body, body
    data: dict[str, Any] = next(iter(body["data"].values()))
    return data


@pytest.fixture
async def holdable(gql: GraphQL, tokens: Tokens, kyc: str) -> str:
    defined = await result(gql, tokens.admin, DEFINE_HOLD_REASON)
    assert defined["__typename"] == "HoldReasonDefined", defined
    return kyc


async def test_a_manager_holds_assigns_moves_and_releases_in_bulk(
    gql: GraphQL, tokens: Tokens, holdable: str
) -> None:
    first, second, third = await enqueue(gql, tokens, "cust-1", "cust-2", "cust-3")
    claimed = await result(gql, tokens.other_reviewer, CLAIM, queue=holdable)
    assert claimed["item"]["id"] == first["id"]
    every = {"itemIds": [first["id"], second["id"], third["id"]]}

    held = await result(
        gql, tokens.manager, HOLD, input={"items": every, "until": later(), "reason": "waiting"}
    )
    assert held["__typename"] == "BulkApplied", held
    assert [item["id"] for item in held["changed"]] == [second["id"], third["id"]]
    assert {item["hold"]["reason"] for item in held["changed"]} == {"waiting"}
    assert held["skipped"] == [
        {"reason": "LEASED", "leaseOwner": "rob", "item": {"id": first["id"]}}
    ]
    assert held["more"] is False

    released = await result(
        gql,
        tokens.manager,
        RELEASE,
        input={"items": every, "revokeLeases": True, "reason": "End of shift."},
    )
    assert [item["id"] for item in released["changed"]] == [first["id"], second["id"], third["id"]]
    assert all(item["state"] == "PENDING" and item["hold"] is None for item in released["changed"])

    by_filter = {"filter": {"queue": holdable, "state": "PENDING"}}
    assigned = await result(
        gql, tokens.manager, ASSIGN, input={"items": by_filter, "reviewer": "rita"}
    )
    assert [item["assignment"]["reviewer"] for item in assigned["changed"]] == ["rita"] * 3

    moved = await result(
        gql, tokens.manager, MOVE, input={"items": by_filter, "toQueue": "kyc-senior"}
    )
    assert {(item["queue"], item["assignment"]) for item in moved["changed"]} == {
        ("kyc-senior", None)
    }
    assert (await result(gql, tokens.reviewer, CLAIM, queue="kyc-senior"))["__typename"] == "Claim"


async def test_refusals_are_members_of_the_union(
    gql: GraphQL, tokens: Tokens, holdable: str
) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    one = {"itemIds": [item["id"]]}

    answers = {
        "reviewer": await result(gql, tokens.reviewer, RELEASE, input={"items": one}),
        "unknown": await result(
            gql, tokens.manager, RELEASE, input={"items": {"itemIds": [item["id"], "987654"]}}
        ),
        "both": await result(
            gql,
            tokens.manager,
            RELEASE,
            input={"items": {**one, "filter": {"queue": holdable}}},
        ),
        "too many": await result(
            gql,
            tokens.manager,
            RELEASE,
            input={"items": {"itemIds": [str(n) for n in range(1, 502)]}},
        ),
        "decided state": await result(
            gql,
            tokens.manager,
            RELEASE,
            input={"items": {"filter": {"queue": holdable, "state": "DECIDED"}}},
        ),
        "hold reason": await result(
            gql,
            tokens.manager,
            HOLD,
            input={"items": one, "until": later(), "reason": "nope"},
        ),
        "destination": await result(
            gql, tokens.manager, MOVE, input={"items": one, "toQueue": "nowhere"}
        ),
        "reviewer name": await result(
            gql, tokens.manager, ASSIGN, input={"items": one, "reviewer": "nobody"}
        ),
    }

    assert {name: answer["__typename"] for name, answer in answers.items()} == {
        "reviewer": "NotPermitted",
        "unknown": "NotFound",
        "both": "InvalidInput",
        "too many": "InvalidInput",
        "decided state": "InvalidInput",
        "hold reason": "InvalidHoldReason",
        "destination": "InvalidInput",
        "reviewer name": "InvalidInput",
    }
    assert answers["unknown"]["id"] == "987654"
    assert [answers[name]["field"] for name in ("both", "too many", "decided state")] == [
        "items",
        "itemIds",
        "state",
    ]
    assert (answers["hold reason"]["queue"], answers["hold reason"]["code"]) == (holdable, "nope")
    assert answers["destination"]["field"] == "toQueue"
    assert answers["reviewer name"]["field"] == "reviewer"
