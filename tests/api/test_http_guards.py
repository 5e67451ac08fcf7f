"""What a hostile or careless client gets: a clear refusal, never a 500, nothing written."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.domain.review import leases
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens, in_process_client
from tests.conftest import TestDatabase

CLAIM = 'mutation { claimNext(queue: "kyc") { __typename ... on Error { message } } }'


async def test_no_token_or_a_bad_one_is_401(client: httpx.AsyncClient, tokens: Tokens) -> None:
    for headers in ({}, {"Authorization": "Bearer cw_not-a-real-token"}, {"Authorization": "x"}):
        response = await client.post("/graphql", json={"query": CLAIM}, headers=headers)
        assert response.status_code == 401
        assert "bearer token" in response.text


async def test_queries_over_get_are_refused(client: httpx.AsyncClient, tokens: Tokens) -> None:
    response = await client.get(
        "/graphql",
        params={"query": "{ me { user } }"},
        headers={"Authorization": f"Bearer {tokens.manager}"},
    )
    assert response.status_code == 400
    assert "data" not in response.text


async def test_introspection_is_off_outside_dev(gql: GraphQL, tokens: Tokens) -> None:
    body = await gql(tokens.manager, "{ __schema { types { name } } }")
    assert body.get("data") is None
    assert "introspection" in body["errors"][0]["message"].lower()


@pytest.fixture
async def dev_client(test_database: TestDatabase) -> AsyncIterator[httpx.AsyncClient]:
    async with in_process_client(test_database, dev=True) as c:
        yield c


async def test_dev_mode_serves_graphiql_and_introspection(
    dev_client: httpx.AsyncClient, client: httpx.AsyncClient, tokens: Tokens
) -> None:
    page = await dev_client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert "graphiql" in page.text.lower()
    assert (await client.get("/graphql", headers={"Accept": "text/html"})).status_code == 404
    introspection = await dev_client.post(
        "/graphql",
        json={"query": "{ __schema { queryType { name } } }"},
        headers={"Authorization": f"Bearer {tokens.manager}"},
    )
    assert introspection.json()["data"]["__schema"]["queryType"]["name"] == "Query"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('{ item(id: "abc") { id } }', "positive integer id"),
        ('{ item(id: "-4") { id } }', "positive integer id"),
        ('{ decision(id: "99999999999999999999999") { id } }', "positive integer id"),
        ('{ queue(name: "kyc") { items(first: 100000) { edges { cursor } } } }', "first must be"),
        ('{ queue(name: "kyc") { items(after: "%%%") { edges { cursor } } } }', "malformed cursor"),
        ('{ queue(name: "kyc") { items(state: SOMETIMES) { edges { cursor } } } }', "ItemState"),
        ("{ nope }", "Cannot query field"),
        ("{ me { user ", "Syntax Error"),
    ],
)
async def test_bad_reads_get_a_readable_error(
    gql: GraphQL, tokens: Tokens, kyc: str, query: str, expected: str
) -> None:
    body = await gql(tokens.manager, query)
    assert expected in body["errors"][0]["message"]


BAD_MUTATIONS = [
    (
        'mutation { claimNext(queue: "no-such-queue") { __typename ... on Error { message } } }',
        "claimNext",
        "reviewer_of_missing",
        "InvalidInput",
    ),
    (
        'mutation { renewLease(itemId: "x1", leaseToken: "t") { __typename } }',
        "renewLease",
        "reviewer",
        "InvalidInput",
    ),
    (
        'mutation { releaseLease(itemId: "1", leaseToken: "not-a-uuid") { __typename } }',
        "releaseLease",
        "reviewer",
        "InvalidInput",
    ),
    (
        'mutation { submitDecision(input: {itemId: "1", leaseToken: "00000000-0000-0000-0000-'
        '000000000000", verdict: APPROVE, reasonCode: "documents_ok", evidenceHash: "zz"}) '
        "{ __typename }}",
        "submitDecision",
        "reviewer",
        "InvalidInput",
    ),
    (
        'mutation { enqueueItems(queue: "nowhere", items: [{externalKey: "a", payload: {}}]) '
        "{ __typename } }",
        "enqueueItems",
        "integration",
        "InvalidInput",
    ),
    (
        'mutation { enqueueItems(queue: "kyc", items: [{externalKey: "a", payload: [1, 2]}]) '
        "{ __typename } }",
        "enqueueItems",
        "integration",
        "InvalidInput",
    ),
    (
        'mutation { configureQueue(input: {name: "Bad Name!"}) { __typename } }',
        "configureQueue",
        "admin",
        "InvalidInput",
    ),
    (
        'mutation { configureQueue(input: {name: "kyc"}) { __typename } }',
        "configureQueue",
        "reviewer",
        "NotPermitted",
    ),
    (
        'mutation { defineReasonCode(input: {queue: "ghost", code: "x", label: "x", '
        "verdicts: [APPROVE]}) { __typename } }",
        "defineReasonCode",
        "admin",
        "InvalidInput",
    ),
    (
        'mutation { overturnDecision(input: {decisionId: "12", reasonCode: "x"}) { __typename } }',
        "overturnDecision",
        "approver",
        "InvalidInput",
    ),
]


@pytest.mark.parametrize(("mutation", "field", "who", "typename"), BAD_MUTATIONS)
async def test_bad_mutations_get_a_typed_result(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    owner_db_token: str,
    mutation: str,
    field: str,
    who: str,
    typename: str,
) -> None:
    token = owner_db_token if who == "reviewer_of_missing" else getattr(tokens, who)
    body = await gql(token, mutation)
    assert "errors" not in body, body
    assert body["data"][field]["__typename"] == typename


@pytest.fixture
async def owner_db_token(owner_db: Database) -> str:
    """A reviewer whose token names a queue that does not exist."""
    return await create_token(owner_db, user="rev", role=Role.REVIEWER, queues=["no-such-queue"])


async def test_wrong_enum_value_is_a_validation_error(gql: GraphQL, tokens: Tokens) -> None:
    body = await gql(
        tokens.reviewer,
        'mutation { submitDecision(input: {itemId: "1", leaseToken: "t", verdict: MAYBE, '
        'reasonCode: "x", evidenceHash: "x"}) { __typename } }',
    )
    assert body["data"] is None
    assert "MAYBE" in body["errors"][0]["message"]


async def test_oversized_payload_is_refused_whole(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    big = {"blob": "x" * (64 * 1024)}
    body = await gql(
        tokens.integration,
        """mutation($items: [NewItemInput!]!) {
             enqueueItems(queue: "kyc", items: $items) {
               __typename ... on InvalidInput { message field }
             }
           }""",
        items=[{"externalKey": "small", "payload": {}}, {"externalKey": "big", "payload": big}],
    )
    result = body["data"]["enqueueItems"]
    assert result["__typename"] == "InvalidInput"
    assert result["field"] == "items[1].payload"
    assert "65536" in result["message"]
    listing = await gql(tokens.manager, '{ queue(name: "kyc") { items { edges { cursor } } } }')
    assert listing["data"]["queue"]["items"]["edges"] == []


async def test_unexpected_errors_are_masked_and_logged(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("connection string postgresql://secret@db leaked")

    monkeypatch.setattr(leases, "claim_next", broken)
    with caplog.at_level(logging.ERROR, logger="casework.graphql"):
        body = await gql(tokens.reviewer, CLAIM)
    assert body["errors"][0]["message"] == "Unexpected error."
    assert "secret" not in str(body)
    assert any("secret" in str(record.exc_info) for record in caplog.records)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            '{ queue(name: "kyc") { decisions { edges { node { item { decisions { item {'
            " decisions { item { decisions { item { id } } } } } } } } } } } }",
            "exceeds maximum operation depth",
        ),
        ("{ " + " ".join(f"a{n}: me {{ user }}" for n in range(40)) + " }", "aliases"),
        ("{ me { " + "user " * 3000 + "} }", "token"),
    ],
    ids=["depth", "aliases", "tokens"],
)
async def test_guards_refuse_expensive_documents_every_time(
    gql: GraphQL, tokens: Tokens, query: str, expected: str
) -> None:
    # Twice: the second answer comes through the parser and validation caches.
    for _ in range(2):
        body = await gql(tokens.manager, query)
        assert body.get("data") is None, body
        assert expected in body["errors"][0]["message"].lower()
