"""Notes: anyone whose token covers the item's queue may add one, lease or not; every refusal
writes nothing."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from server.domain.model import Role
from server.domain.text import MAX_TEXT
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, enqueue
from tests.conftest import token_maker

ADD_NOTE = """
mutation($input: AddNoteInput!) {
  addNote(input: $input) {
    __typename
    ... on NoteAdded {
      event { kind actor actorRole body queue lease { owner } recordedAt at }
      item { id state }
    }
    ... on NotFound { id }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}
"""
NOTES = """
query($id: ID!) {
  item(id: $id) { events { edges { node { kind actor actorRole body } } } }
}
"""


async def note(gql: GraphQL, token: str, item_id: str, body: str) -> dict[str, Any]:
    answer: dict[str, Any] = (await gql(token, ADD_NOTE, input={"itemId": item_id, "body": body}))[
        "data"
    ]["addNote"]
    return answer


async def note_rows(owner: asyncpg.Connection) -> list[tuple[Any, ...]]:
    return [
        tuple(row)
        for row in await owner.fetch("SELECT * FROM item_events WHERE kind = 'noted' ORDER BY id")
    ]


@pytest.fixture
async def item_id(gql: GraphQL, tokens: Tokens, kyc: str) -> str:
    [item] = await enqueue(gql, tokens, "cust-1")
    item_id: str = item["id"]
    return item_id


async def test_every_role_covering_the_queue_may_note(
    gql: GraphQL, tokens: Tokens, item_id: str
) -> None:
    writers = [
        (tokens.reviewer, "rita", "reviewer"),
        (tokens.approver, "ann", "approver"),
        (tokens.admin, "ada", "admin"),
        (tokens.manager, "max", "manager"),
        (tokens.integration, "kyc-provider", "integration"),
    ]
    for token, user, role in writers:
        added = await note(gql, token, item_id, f"A word from {user}.")
        assert added["__typename"] == "NoteAdded", added
        assert added["event"]["kind"] == "NOTED"
        assert (added["event"]["actor"], added["event"]["actorRole"]) == (user, role)
        assert added["event"]["recordedAt"] == added["event"]["at"]
        assert added["item"] == {"id": item_id, "state": "PENDING"}

    events = (await gql(tokens.manager, NOTES, id=item_id))["data"]["item"]["events"]
    assert [e["node"] for e in events["edges"]][1:] == [
        {"kind": "NOTED", "actor": user, "actorRole": role, "body": f"A word from {user}."}
        for _, user, role in writers
    ]


async def test_a_note_needs_no_lease_and_leaves_one_alone(
    gql: GraphQL, tokens: Tokens, item_id: str
) -> None:
    claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    assert claim["item"]["id"] == item_id

    added = await note(gql, tokens.other_reviewer, item_id, "I saw this one yesterday.")

    assert added["__typename"] == "NoteAdded", added
    assert added["event"]["lease"] is None
    assert added["event"]["queue"] == "kyc"
    assert added["item"]["state"] == "LEASED"


async def test_outside_the_token_s_queues_is_answered_as_no_such_item(
    gql: GraphQL, tokens: Tokens, item_id: str, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    payouts_manager = await token_maker(owner_db)("pat", Role.MANAGER, "payouts")
    before = await note_rows(owner_conn)

    for token in (tokens.outsider, payouts_manager):
        theirs = await note(gql, token, item_id, "Not my queue.")
        missing = await note(gql, token, "987654321", "Not my queue.")
        assert theirs == {
            "__typename": "NotFound",
            "id": item_id,
            "message": f"no item with id {item_id}",
        }
        assert missing == {
            "__typename": "NotFound",
            "id": "987654321",
            "message": "no item with id 987654321",
        }

    assert await note_rows(owner_conn) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("", "body"),
        ("  \n\t ", "body"),
        ("x" * (MAX_TEXT + 1), "body"),
    ],
    ids=["empty", "blank", "too-long"],
)
async def test_a_bad_body_is_refused_naming_it(
    gql: GraphQL,
    tokens: Tokens,
    item_id: str,
    owner_conn: asyncpg.Connection,
    body: str,
    field: str,
) -> None:
    before = await note_rows(owner_conn)

    refused = await note(gql, tokens.reviewer, item_id, body)

    assert (refused["__typename"], refused["field"]) == ("InvalidInput", field)
    assert await note_rows(owner_conn) == before


async def test_a_bad_item_id_is_refused_naming_it(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    refused = await note(gql, tokens.reviewer, "not-an-id", "Hello.")

    assert (refused["__typename"], refused["field"]) == ("InvalidInput", "itemId")
    assert await note_rows(owner_conn) == []


async def test_the_longest_note_is_kept_whole(gql: GraphQL, tokens: Tokens, item_id: str) -> None:
    body = "y" * MAX_TEXT

    added = await note(gql, tokens.reviewer, item_id, body)

    assert added["event"]["body"] == body
