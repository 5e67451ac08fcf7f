"""An item id that names nothing, or an item outside the token's queues, is NotFound with the
id for every claim control, single-item and bulk alike (the single-item ones used to answer
InvalidInput). A malformed id stays InvalidInput: that is the argument's shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import enqueue
from tests.conftest import token_maker

NO_ITEM = "987654321"
ANSWER = "__typename ... on Error { message } ... on NotFound { id } ... on InvalidInput { field }"
LATER = (datetime.now(UTC) + timedelta(days=1)).isoformat()
LEASE = "00000000-0000-4000-8000-000000000000"


def mutation(name: str, input_type: str) -> str:
    return f"mutation($input: {input_type}!) {{ {name}(input: $input) {{ {ANSWER} }} }}"


# (mutation, input with the item id left out, who may call it)
SINGLE = {
    "assignItem": (
        mutation("assignItem", "AssignItemInput"),
        {"reviewer": "rita", "until": LATER},
        "manager",
    ),
    "unassignItem": (mutation("unassignItem", "UnassignItemInput"), {}, "manager"),
    "revokeLease": (
        mutation("revokeLease", "RevokeLeaseInput"),
        {"reason": "Reassigned"},
        "manager",
    ),
    "holdItem": (
        mutation("holdItem", "HoldItemInput"),
        {"leaseToken": LEASE, "until": LATER, "reason": "waiting"},
        "reviewer",
    ),
    "resumeItem": (mutation("resumeItem", "ResumeItemInput"), {}, "manager"),
}
BULK_RELEASE = mutation("bulkRelease", "BulkReleaseInput")


async def answer(gql: GraphQL, token: str, name: str, item_id: str) -> dict[str, Any]:
    document, rest, _ = SINGLE[name]
    body = await gql(token, document, input={"itemId": item_id, **rest})
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"][name]
    return found


@pytest.fixture
async def payouts_tokens(owner_db: Database) -> dict[str, str]:
    """A manager and a reviewer whose tokens cover `payouts` only, not kyc."""
    make = token_maker(owner_db)
    return {
        "manager": await make("mia", Role.MANAGER, "payouts"),
        "reviewer": await make("olga", Role.REVIEWER, "payouts"),
    }


@pytest.mark.parametrize("name", SINGLE)
async def test_an_unknown_id_is_not_found_for_each_single_item_control(
    gql: GraphQL, tokens: Tokens, kyc: str, name: str
) -> None:
    token = getattr(tokens, SINGLE[name][2])
    assert await answer(gql, token, name, NO_ITEM) == {
        "__typename": "NotFound",
        "message": f"no item with id {NO_ITEM}",
        "id": NO_ITEM,
    }


@pytest.mark.parametrize("name", SINGLE)
async def test_an_item_outside_the_tokens_queues_answers_as_an_unknown_one(
    gql: GraphQL, tokens: Tokens, kyc: str, payouts_tokens: dict[str, str], name: str
) -> None:
    [item] = await enqueue(gql, tokens, "cust-1")
    token = payouts_tokens[SINGLE[name][2]]
    assert await answer(gql, token, name, item["id"]) == {
        "__typename": "NotFound",
        "message": f"no item with id {item['id']}",
        "id": item["id"],
    }


async def test_single_and_bulk_controls_agree_on_an_unknown_id(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    bulk = await gql(tokens.manager, BULK_RELEASE, input={"items": {"itemIds": [NO_ITEM]}})
    single = await answer(gql, tokens.manager, "unassignItem", NO_ITEM)
    assert bulk["data"]["bulkRelease"] == single


@pytest.mark.parametrize("name", SINGLE)
async def test_a_malformed_id_is_still_invalid_input(
    gql: GraphQL, tokens: Tokens, kyc: str, name: str
) -> None:
    token = getattr(tokens, SINGLE[name][2])
    found = await answer(gql, token, name, "not-a-number")
    assert (found["__typename"], found["field"]) == ("InvalidInput", "itemId")
