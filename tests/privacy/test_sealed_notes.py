"""Notes on items under a privacy policy: sealed under the subject's data key, never stored
as text, read back by the roles the policy shows personal values to, withheld from the
others and from everyone while the subject is restricted (but compliance), erased with it."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from cryptography.exceptions import InvalidTag

from server.config import Settings
from server.domain.model import Role
from server.domain.privacy.keys import Keyring
from server.domain.privacy.records import note_path
from server.domain.privacy.sealing import open_sealed
from server.store.database import Database
from tests.api.conftest import SETUP_QUEUES, GraphQL, Tokens, graphql_caller, in_process_client
from tests.conftest import TestDatabase, token_maker
from tests.privacy.canaries import CANARY_NAME, applicant
from tests.privacy.conftest import attach_policy

NOTE = f"Spoke to {CANARY_NAME}: the utility bill is in a maiden name."

ENQUEUE = """
mutation($items: [NewItemInput!]!) {
  enqueueItems(queue: "kyc", items: $items) {
    __typename
    ... on EnqueuedItems { items { item { id } } }
    ... on Error { message }
  }
}
"""
ADD_NOTE = """
mutation($input: AddNoteInput!) {
  addNote(input: $input) {
    __typename
    ... on NoteAdded { event { kind actor body noteState } }
    ... on Error { message }
  }
}
"""
EVENTS = """
query($id: ID!) {
  item(id: $id) { events { edges { node { kind actor body noteState } } } }
}
"""


@pytest.fixture
async def client(test_database: TestDatabase, key_file: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The app, with the test's own key file."""
    settings = Settings.from_env()
    settings = dataclasses.replace(
        settings, privacy=dataclasses.replace(settings.privacy, key_file=key_file)
    )
    async with in_process_client(test_database, dev=False, settings=settings) as c:
        yield c


@pytest.fixture
async def tokens(owner_db: Database) -> Tokens:
    """tests/api's callers, and a compliance officer of `kyc`."""
    make = token_maker(owner_db)
    return Tokens(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        reviewer=await make("rita", Role.REVIEWER, "kyc", "kyc-senior"),
        other_reviewer=await make("rob", Role.REVIEWER, "kyc"),
        outsider=await make("olga", Role.REVIEWER, "payouts"),
        approver=await make("ann", Role.APPROVER),
        manager=await make("max", Role.MANAGER),
    )


@pytest.fixture
def gql(client: httpx.AsyncClient) -> GraphQL:
    return graphql_caller(client)


@pytest.fixture
async def kyc(gql: GraphQL, tokens: Tokens, db: Database) -> str:
    body = await gql(tokens.admin, SETUP_QUEUES)
    assert {r["__typename"] for r in body["data"].values()} == {
        "QueueConfigured",
        "ReasonCodeDefined",
    }
    await attach_policy(db, "kyc")
    return "kyc"


async def enqueue(gql: GraphQL, tokens: Tokens, key: str, subject: str) -> str:
    items = [{"externalKey": key, "payload": applicant(), "subjectRef": subject}]
    result = (await gql(tokens.integration, ENQUEUE, items=items))["data"]["enqueueItems"]
    assert result["__typename"] == "EnqueuedItems", result
    item_id: str = result["items"][0]["item"]["id"]
    return item_id


async def add_note(gql: GraphQL, token: str, item_id: str, body: str) -> dict[str, Any]:
    answer = (await gql(token, ADD_NOTE, input={"itemId": item_id, "body": body}))["data"]
    added: dict[str, Any] = answer["addNote"]
    assert added["__typename"] == "NoteAdded", added
    return added


async def notes_seen(gql: GraphQL, token: str, item_id: str) -> list[dict[str, Any]]:
    body = await gql(token, EVENTS, id=item_id)
    assert "errors" not in body, body
    edges = body["data"]["item"]["events"]["edges"]
    return [edge["node"] for edge in edges if edge["node"]["kind"] == "NOTED"]


async def test_a_note_on_a_policy_item_is_stored_sealed_and_opens_with_its_event(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    owner_conn: asyncpg.Connection,
    keyring: Keyring,
    db: Database,
) -> None:
    item_id = await enqueue(gql, tokens, "app-1", "cust-1")
    added = await add_note(gql, tokens.reviewer, item_id, NOTE)
    # The writer (a reviewer: the default policy shows them personal values) reads it back.
    assert added["event"] == {
        "kind": "NOTED",
        "actor": "rita",
        "body": NOTE,
        "noteState": "VISIBLE",
    }

    [event] = await owner_conn.fetch(
        "SELECT * FROM item_events WHERE item_id = $1 AND kind = 'noted'", int(item_id)
    )
    assert event["body"] is None
    [sealed] = await owner_conn.fetch("SELECT * FROM sealed_notes")
    assert (sealed["event_id"], sealed["item_id"], sealed["subject_ref"]) == (
        event["id"],
        int(item_id),
        "cust-1",
    )
    assert sealed["erased_at"] is None
    assert CANARY_NAME.encode() not in bytes(sealed["ciphertext"])
    key = await keyring.version(db, "cust-1", sealed["key_version"])
    assert key is not None
    opened = open_sealed(
        key.key,
        item_id=int(item_id),
        path=note_path(event["id"]),
        key_version=sealed["key_version"],
        nonce=sealed["nonce"],
        ciphertext=sealed["ciphertext"],
    )
    assert opened == NOTE
    # Under another event's path (a sealed body moved to another note) it does not open.
    with pytest.raises(InvalidTag):
        open_sealed(
            key.key,
            item_id=int(item_id),
            path=note_path(event["id"] + 1),
            key_version=sealed["key_version"],
            nonce=sealed["nonce"],
            ciphertext=sealed["ciphertext"],
        )


async def test_who_reads_a_sealed_note(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    owner_conn: asyncpg.Connection,
    owner_db: Database,
) -> None:
    item_id = await enqueue(gql, tokens, "app-1", "cust-1")
    await add_note(gql, tokens.manager, item_id, NOTE)
    compliance = await token_maker(owner_db)("cora", Role.COMPLIANCE, "kyc")
    visible = [{"kind": "NOTED", "actor": "max", "body": NOTE, "noteState": "VISIBLE"}]
    withheld = [{"kind": "NOTED", "actor": "max", "body": None, "noteState": "WITHHELD"}]

    # The default policy shows personal values to reviewers, approvers and compliance, not
    # to managers (whose own note it is) or admins.
    assert await notes_seen(gql, tokens.reviewer, item_id) == visible
    assert await notes_seen(gql, compliance, item_id) == visible
    assert await notes_seen(gql, tokens.manager, item_id) == withheld
    assert await notes_seen(gql, tokens.admin, item_id) == withheld

    # A restricted subject (an erasure deferred): compliance only.
    await owner_conn.execute(
        "UPDATE privacy_subjects SET restricted_at = now() WHERE subject_ref = 'cust-1'"
    )
    assert await notes_seen(gql, tokens.reviewer, item_id) == withheld
    assert await notes_seen(gql, compliance, item_id) == visible

    # Erased (as the erasure function leaves the row): nobody reads it.
    await owner_conn.execute(
        "UPDATE sealed_notes SET nonce = NULL, ciphertext = NULL, erased_at = now()"
    )
    erased = [{"kind": "NOTED", "actor": "max", "body": None, "noteState": "ERASED"}]
    assert await notes_seen(gql, compliance, item_id) == erased
    assert await notes_seen(gql, tokens.reviewer, item_id) == erased


async def test_a_note_on_an_item_without_a_policy_stays_as_it_was(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    await gql(tokens.admin, 'mutation { configureQueue(input: {name: "plain"}) { __typename } }')
    body = await gql(
        tokens.integration,
        ENQUEUE.replace('queue: "kyc"', 'queue: "plain"'),
        items=[{"externalKey": "p-1", "payload": {"x": 1}}],
    )
    item_id = body["data"]["enqueueItems"]["items"][0]["item"]["id"]
    added = await add_note(gql, tokens.admin, item_id, "plain words")
    assert added["event"] == {
        "kind": "NOTED",
        "actor": "ada",
        "body": "plain words",
        "noteState": None,
    }
    assert await owner_conn.fetchval(
        "SELECT body FROM item_events WHERE item_id = $1 AND kind = 'noted'", int(item_id)
    ) == ("plain words")
    assert await owner_conn.fetchval("SELECT count(*) FROM sealed_notes") == 0


async def test_a_note_refused_by_the_fence_is_refused_on_a_policy_item_too(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    item_id = await enqueue(gql, tokens, "app-1", "cust-1")
    answer = await gql(tokens.outsider, ADD_NOTE, input={"itemId": item_id, "body": NOTE})
    assert answer["data"]["addNote"]["__typename"] == "NotFound", answer
    assert await owner_conn.fetchval("SELECT count(*) FROM sealed_notes") == 0
    assert await owner_conn.fetchval("SELECT count(*) FROM item_events WHERE kind = 'noted'") == 0
