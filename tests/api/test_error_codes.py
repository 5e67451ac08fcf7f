"""Every error in `errors[]` carries `extensions.code`, set before an unexpected one is masked.

Where Strawberry lets the code be set before masking (server/graphql/error_coding.py) is
proved on a small schema of the test's own; the codes themselves through the application.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any

import asyncpg
import httpx
import pytest
import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaskErrors, ParserCache, SchemaExtension
from strawberry.types import ExecutionContext, ExecutionResult

from server.domain.review.items import NewItem, enqueue_items
from server.graphql.operation import UNAVAILABLE_MESSAGE, MaskUnexpectedErrors, is_unexpected
from server.graphql.schema import CaseworkSchema, build_schema
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.conftest import INTEGRATION, TestDatabase
from tests.live.helpers import ITEM_UPDATES, create_live_tokens, serve_casework
from tests.live.wsclient import graphql_socket

# --- the order of hooks, on a schema of the test's own --------------------------------------

SECRET = "a secret the client must not see"


@strawberry.type
class ToyQuery:
    @strawberry.field
    def broken(self) -> str:
        raise ValueError(SECRET)

    @strawberry.field
    def unreachable(self) -> str:
        raise ConnectionRefusedError("the database went away")


@strawberry.type
class ToySubscription:
    @strawberry.subscription
    async def broken(self) -> AsyncGenerator[str, None]:
        raise ValueError(SECRET)
        yield "never"  # pragma: no cover


class RecordingSchema(strawberry.Schema):
    """Notes what process_errors sees, and (below) what each on_operation exit sees."""

    def __init__(self, events: list[str], *extensions: Callable[[], SchemaExtension]) -> None:
        super().__init__(query=ToyQuery, subscription=ToySubscription, extensions=list(extensions))
        self.events = events

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            self.events.append(f"process_errors: {error.message}")


def probe(events: list[str]) -> type[SchemaExtension]:
    class Probe(SchemaExtension):
        def on_operation(self) -> Iterator[None]:
            yield
            result = self.execution_context.result
            messages = [error.message for error in (result.errors or [])] if result else None
            events.append(f"on_operation exit: {messages}")

    return Probe


async def first_streamed(schema: strawberry.Schema, query: str) -> ExecutionResult:
    stream = await schema.subscribe(query)
    assert not isinstance(stream, ExecutionResult), stream
    async for result in stream:
        assert isinstance(result, ExecutionResult), result
        return result
    raise AssertionError("the subscription yielded nothing")


async def test_process_errors_sees_every_error_before_the_masking_and_extensions_do_not() -> None:
    events: list[str] = []
    schema = RecordingSchema(events, ParserCache, probe(events), MaskErrors)

    result = await schema.execute("{ broken }")
    assert result.errors is not None
    assert [e.message for e in result.errors] == ["Unexpected error."]
    # on_operation exits run in reverse order of the list: the probe, listed before
    # MaskErrors, already sees the masked error. process_errors saw the original first.
    assert events == [f"process_errors: {SECRET}", "on_operation exit: ['Unexpected error.']"]

    events.clear()
    streamed = await first_streamed(schema, "subscription { broken }")
    assert streamed.errors is not None
    assert [e.message for e in streamed.errors] == ["Unexpected error."]
    assert events == [f"process_errors: {SECRET}"], events

    # ParserCache raises a syntax error in its on_parse hook: it unwinds every on_operation
    # hook (their code after `yield` never runs) and becomes a result only then, so no
    # extension could give it a code.
    events.clear()
    result = await schema.execute("{ broken ")
    assert result.errors is not None
    assert events == [f"process_errors: {result.errors[0].message}"], events


def masking() -> SchemaExtension:
    return MaskUnexpectedErrors(should_mask_error=is_unexpected)


def toy_casework_schema() -> CaseworkSchema:
    return CaseworkSchema(
        query=ToyQuery, subscription=ToySubscription, extensions=[ParserCache, masking]
    )


async def test_each_error_is_coded_and_an_unexpected_one_keeps_its_code_when_masked() -> None:
    schema = toy_casework_schema()
    expected = {
        "{ broken }": ("Unexpected error.", {"code": "INTERNAL"}),
        "{ unreachable }": (UNAVAILABLE_MESSAGE, {"code": "UNAVAILABLE"}),
        "{ broken ": ("Syntax Error: Expected Name, found <EOF>.", {"code": "BAD_REQUEST"}),
    }
    for query, (message, extensions) in expected.items():
        result = await schema.execute(query)
        assert result.errors is not None
        assert [(e.message, e.extensions) for e in result.errors] == [(message, extensions)]
    streamed = await first_streamed(schema, "subscription { broken }")
    assert streamed.errors is not None
    assert [(e.message, e.extensions) for e in streamed.errors] == [
        ("Unexpected error.", {"code": "INTERNAL"})
    ]


def test_the_schema_masks_with_the_subclass_that_keeps_codes() -> None:
    extensions = build_schema().get_extensions()
    assert any(isinstance(extension, MaskUnexpectedErrors) for extension in extensions)
    assert not any(type(extension) is MaskErrors for extension in extensions)


# --- the codes, through the application -----------------------------------------------------


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body["errors"]]


@pytest.mark.parametrize(
    "query",
    [
        "{ me { user ",
        "{ nope }",
        '{ item(id: "abc") { id } }',
        '{ queue(name: "kyc") { items(after: "%%%") { edges { cursor } } } }',
        '{ queue(name: "kyc") { items(first: 100000) { edges { cursor } } } }',
        '{ queue(name: "kyc") { items(state: SOMETIMES) { edges { cursor } } } }',
    ],
    ids=["syntax", "unknown-field", "malformed-id", "malformed-cursor", "page-size", "enum"],
)
async def test_a_malformed_request_is_bad_request(
    gql: GraphQL, tokens: Tokens, kyc: str, query: str
) -> None:
    body = await gql(tokens.manager, query)
    assert codes(body) == ["BAD_REQUEST"], body


async def test_a_variable_of_the_wrong_type_is_bad_request(gql: GraphQL, tokens: Tokens) -> None:
    body = await gql(tokens.manager, "query($id: ID!) { item(id: $id) { id } }", id=[1, 2])
    assert codes(body) == ["BAD_REQUEST"], body


async def test_an_unexpected_error_is_internal_and_masked(
    gql: GraphQL, tokens: Tokens, owner_conn: asyncpg.Connection
) -> None:
    # A real fault of the server's: the service role lost a grant it needs.
    await owner_conn.execute("REVOKE SELECT ON queues FROM casework_app")
    body = await gql(tokens.admin, "{ queues { name } }")
    assert body["errors"] == [
        {
            "message": "Unexpected error.",
            "locations": [{"line": 1, "column": 3}],
            "path": ["queues"],
            "extensions": {"code": "INTERNAL"},
        }
    ], body


async def test_no_token_is_a_json_401_that_names_the_scheme(
    client: httpx.AsyncClient, tokens: Tokens
) -> None:
    for headers in ({}, {"Authorization": "Bearer cw_not-a-real-token"}, {"Authorization": "x"}):
        response = await client.post("/graphql", json={"query": "{ me { user } }"}, headers=headers)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.headers["content-type"] == "application/json"
        body = response.json()
        assert codes(body) == ["UNAUTHENTICATED"], body
        assert "bearer token" in body["errors"][0]["message"]


async def test_strawberrys_own_refusals_are_json_bad_request(
    client: httpx.AsyncClient, tokens: Tokens
) -> None:
    auth = {"Authorization": f"Bearer {tokens.manager}"}
    not_json = await client.post(
        "/graphql", content=b"{not json", headers=auth | {"Content-Type": "application/json"}
    )
    over_get = await client.get("/graphql", params={"query": "{ me { user } }"}, headers=auth)
    no_query = await client.post("/graphql", json={"variables": {}}, headers=auth)
    wrong_method = await client.put("/graphql", json={"query": "{ me { user } }"}, headers=auth)
    assert wrong_method.headers["allow"] == "GET, POST"
    for response, status in (
        (not_json, 400),
        (over_get, 400),
        (no_query, 400),
        (wrong_method, 405),
    ):
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/json"
        assert codes(response.json()) == ["BAD_REQUEST"], response.text


async def test_an_empty_selection_set_is_a_syntax_error_not_an_internal_one(
    client: httpx.AsyncClient, tokens: Tokens
) -> None:
    """graphql-core 3.3 parses `{}`; the grammar does not allow it, and Strawberry's depth
    limiter failed on it with an unexpected error whose message reached the client."""
    auth = {"Authorization": f"Bearer {tokens.manager}"}
    for text in ("{}", "{ me { } }"):
        answered = await client.post("/graphql", json={"query": text}, headers=auth)
        body = answered.json()
        assert answered.status_code == 200, answered.text
        assert codes(body) == ["BAD_REQUEST"], answered.text
        assert body["errors"][0]["message"] == "Syntax Error: Expected Name, found '}'."


async def test_a_subscription_over_http_is_the_clients_mistake(
    client: httpx.AsyncClient, tokens: Tokens, caplog: pytest.LogCaptureFixture
) -> None:
    """Strawberry ran it as a query, failed on its stream and answered INTERNAL with a
    traceback in the log; it is a request for the wrong transport."""
    auth = {"Authorization": f"Bearer {tokens.manager}"}
    text = 'subscription { queueBacklog(queue: "kyc") { pending } }'
    answered = await client.post("/graphql", json={"query": text}, headers=auth)
    body = answered.json()
    assert answered.status_code == 200, answered.text
    assert codes(body) == ["BAD_REQUEST"], answered.text
    assert body["data"] is None
    assert "websocket" in body["errors"][0]["message"]
    assert not [record for record in caplog.records if record.exc_info]


async def test_a_subscription_next_payload_carries_the_code(
    test_database: TestDatabase,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    db: Database,
    kyc_queue: str,
) -> None:
    tokens = await create_live_tokens(owner_db)
    enqueued = await enqueue_items(db, INTEGRATION, kyc_queue, [NewItem("cust-1", {})])
    assert isinstance(enqueued, list), enqueued
    async with (
        serve_casework(test_database) as casework,
        graphql_socket(casework.url, tokens.rita) as socket,
    ):
        # The subscription's first read fails for a reason of the server's.
        await owner_conn.execute("REVOKE SELECT ON review_items FROM casework_app")
        operation = await socket.subscribe(ITEM_UPDATES, itemId=str(enqueued[0].item.id))
        message = await socket.message(operation)
    assert message["type"] == "next", message
    assert message["payload"]["errors"] == [
        {"message": "Unexpected error.", "extensions": {"code": "INTERNAL"}}
    ], message
