"""Bounded input, decided before any work: body size, JSON nesting, document length, cost,
the limiters' codes, the number and size of items per call, and suggestions outside --dev."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, cast

import asyncpg
import httpx
import pytest
from starlette.applications import Starlette
from starlette.types import Message
from strawberry.extensions.parser_cache import DEFAULT_MAXSIZE, _get_parse_cache

from server.app import create_app
from server.config import DEFAULT_MAX_BODY_BYTES, Settings
from server.domain.failures import InvalidInput
from server.domain.parsing import MAX_VALUE_DEPTH
from server.domain.review.evidence import MAX_PAYLOAD_BYTES, canonical_json
from server.domain.review.items import (
    MAX_BATCH,
    MAX_BATCH_PAYLOAD_BYTES,
    MAX_EXTERNAL_KEY,
    NewItem,
    enqueue_items,
)
from server.graphql.cost import HEAVY_SCALARS, LIST_WEIGHT, MAX_COST
from server.graphql.guards import MAX_DOCUMENT_CHARS
from server.graphql.input_strings import MAX_JSON_VALUE_DEPTH
from server.http_limits import MAX_JSON_DEPTH, json_nesting_within
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens, in_process_client
from tests.api.helpers import data_tables
from tests.conftest import INTEGRATION, TestDatabase
from tests.live.helpers import serve_casework

ENQUEUE = """
mutation($queue: String!, $items: [NewItemInput!]!) {
  enqueueItems(queue: $queue, items: $items) {
    __typename ... on EnqueuedItems { items { created } } ... on InvalidInput { message field }
  }
}
"""
SMALL_LIMIT = 4096


async def table_rows(owner: asyncpg.Connection) -> dict[str, int]:
    """Rows in every data table: a refused call writes none."""
    return {
        name: await owner.fetchval(f'SELECT count(*) FROM "{name}"')
        for name in await data_tables(owner)
    }


@asynccontextmanager
async def started_app(test_database: TestDatabase, **settings: Any) -> AsyncIterator[Starlette]:
    app = create_app(
        test_database.app_dsn, dev=False, settings=replace(Settings.from_env(), **settings)
    )
    async with app.router.lifespan_context(app):
        yield app


class Exchange:
    """One HTTP request driven through the app's ASGI interface, chunk by chunk, recording
    how much of the body the app asked for: the only way to see where reading stopped."""

    def __init__(self, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> None:
        self.chunks = chunks
        self.headers = headers
        self.received = 0
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        if self.received < len(self.chunks):
            self.received += 1
            return {
                "type": "http.request",
                "body": self.chunks[self.received - 1],
                "more_body": self.received < len(self.chunks),
            }
        await asyncio.Event().wait()  # a client that sent everything, waiting for an answer
        raise AssertionError("unreachable")

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    async def run(self, app: Starlette, token: str) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/graphql",
            "raw_path": b"/graphql",
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"casework"),
                (b"content-type", b"application/json"),
                (b"authorization", f"Bearer {token}".encode()),
                *self.headers,
            ],
            "client": ("127.0.0.1", 1),
            "server": ("casework", 80),
            "state": {},
        }
        await app(scope, self.receive, self.send)

    @property
    def status(self) -> int:
        status: int = self.sent[0]["status"]
        return status

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(
            b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")
        )
        return body


async def post_body(client: httpx.AsyncClient, token: str, body: bytes) -> httpx.Response:
    """POSTs `body` to /graphql as JSON, with a bearer token."""
    return await client.post(
        "/graphql",
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )


def chunked(body: bytes, size: int) -> list[bytes]:
    return [body[start : start + size] for start in range(0, len(body), size)]


async def test_a_declared_length_above_the_limit_is_refused_unread(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    body = json.dumps({"query": "{ me { user } }", "pad": "x" * SMALL_LIMIT}).encode()
    exchange = Exchange(chunked(body, 1024), [(b"content-length", str(len(body)).encode())])
    async with started_app(test_database, max_body_bytes=SMALL_LIMIT) as app:
        await exchange.run(app, tokens.manager)
    assert exchange.received == 0
    assert exchange.status == 413
    assert exchange.body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert str(SMALL_LIMIT) in exchange.body["errors"][0]["message"]


async def test_an_undeclared_length_stops_being_read_at_the_limit(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    body = json.dumps({"query": "{ me { user } }", "pad": "x" * (4 * SMALL_LIMIT)}).encode()
    exchange = Exchange(chunked(body, 1024), [])
    async with started_app(test_database, max_body_bytes=SMALL_LIMIT) as app:
        await exchange.run(app, tokens.manager)
    assert exchange.status == 413
    assert exchange.body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    # The chunk that passed the limit was the last one read.
    assert exchange.received == SMALL_LIMIT // 1024 + 1 < len(exchange.chunks)


async def test_a_body_within_the_limit_is_served_whatever_its_chunks(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    body = json.dumps({"query": "{ me { user role } }"}).encode()
    exchange = Exchange(chunked(body, 7), [])
    async with started_app(test_database, max_body_bytes=len(body)) as app:
        await exchange.run(app, tokens.manager)
    assert exchange.status == 200
    assert exchange.body == {"data": {"me": {"user": "max", "role": "manager"}}}


def nested(depth: int, leaf: Any = 1) -> Any:
    """`depth` levels of objects and arrays, alternating, an object outermost."""
    value = leaf
    for level in range(depth):
        value = {"k": value} if (depth - level) % 2 else [value]
    return value


@pytest.mark.parametrize(
    "body",
    [
        b'{"query": "{ me { user } }", "variables": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b"[" * 100_000,
        # Over a megabyte: scanned in a worker thread.
        b'{"query": "{ me { user } }", "v": ' + b"[" * (2 * 1024 * 1024) + b"}",
        b'{"query": "{ me { user } }", "variables": {"v": '
        + json.dumps(nested(MAX_JSON_DEPTH)).encode()
        + b"}}",
    ],
    ids=["100k deep", "100k unbalanced", "2 MB deep", "just too deep"],
)
async def test_deep_json_bodies_are_a_400(
    client: httpx.AsyncClient,
    tokens: Tokens,
    body: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR):
        response = await post_body(client, tokens.manager, body)
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert str(MAX_JSON_DEPTH) in response.json()["errors"][0]["message"]
    assert not caplog.records


def reference_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((reference_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((reference_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        nested(5),
        {"a": nested(7), "b": [nested(3), nested(9)], "s": '"[[[{{{\\"', "t": "]]]}"},
        [[[], [[]]], {"x": [[[[1]]]]}],
        {"brackets in keys [[[[": {"]]": []}},
    ],
)
def test_the_depth_scanner_agrees_with_the_json_module(value: Any) -> None:
    body = json.dumps(value).encode()
    depth = reference_depth(value)
    assert json_nesting_within(body, depth)
    if depth > 0:
        assert not json_nesting_within(body, depth - 1)


async def test_json_values_deeper_than_their_limit_are_invalid_input(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    before = await table_rows(owner_conn)
    deep = nested(MAX_JSON_VALUE_DEPTH + 1)
    ok = nested(MAX_JSON_VALUE_DEPTH)
    body = await gql(
        tokens.integration,
        ENQUEUE,
        queue=kyc,
        items=[{"externalKey": "ok", "payload": ok}, {"externalKey": "deep", "payload": deep}],
    )
    result = body["data"]["enqueueItems"]
    assert result["__typename"] == "InvalidInput", result
    assert result["field"].startswith("items[1].payload")
    assert str(MAX_JSON_VALUE_DEPTH) in result["message"]
    assert await table_rows(owner_conn) == before


def largest_legal_call(queue: str) -> dict[str, Any]:
    """MAX_BATCH items with the longest keys and payloads adding up to the per-call budget,
    in characters that take the most bytes once escaped to ASCII (as json.dumps does)."""
    wide = "\U0001f600"  # 4 bytes in UTF-8, 12 as the escapes of its surrogate pair
    per_item = MAX_BATCH_PAYLOAD_BYTES // MAX_BATCH
    overhead = len(canonical_json({"blob": ""}))
    payload = {"blob": wide * ((per_item - overhead) // 4)}
    assert len(canonical_json(payload)) <= min(per_item, MAX_PAYLOAD_BYTES)
    digits = len(str(MAX_BATCH))
    items = [
        {
            "externalKey": wide * (MAX_EXTERNAL_KEY - digits) + f"{n:0{digits}d}",
            "priority": -1_000_000,
            "payload": payload,
        }
        for n in range(MAX_BATCH)
    ]
    return {"query": ENQUEUE, "variables": {"queue": queue, "items": items}}


async def test_the_largest_legal_enqueue_fits_the_default_body_limit(
    client: httpx.AsyncClient, tokens: Tokens, kyc: str
) -> None:
    body = json.dumps(largest_legal_call(kyc)).encode()
    assert Settings.from_env().max_body_bytes == DEFAULT_MAX_BODY_BYTES
    assert len(body) <= DEFAULT_MAX_BODY_BYTES
    response = await post_body(client, tokens.integration, body)
    assert response.status_code == 200, response.text[:500]
    result = response.json()["data"]["enqueueItems"]
    assert result["__typename"] == "EnqueuedItems", result
    assert len(result["items"]) == MAX_BATCH


async def test_too_many_items_or_bytes_per_call_are_refused_before_any_write(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    before = await table_rows(owner_conn)
    many = [{"externalKey": f"k{n}", "payload": {}} for n in range(MAX_BATCH + 1)]
    blob = "x" * (MAX_PAYLOAD_BYTES - len(canonical_json({"blob": ""})))
    heavy = [
        {"externalKey": f"k{n}", "payload": {"blob": blob}}
        for n in range(MAX_BATCH_PAYLOAD_BYTES // MAX_PAYLOAD_BYTES + 1)
    ]
    refused = [
        (await gql(tokens.integration, ENQUEUE, queue=kyc, items=items))["data"]["enqueueItems"]
        for items in (many, heavy)
    ]
    assert [(r["__typename"], r["field"]) for r in refused] == [("InvalidInput", "items")] * 2
    assert str(MAX_BATCH) in refused[0]["message"]
    assert str(MAX_BATCH_PAYLOAD_BYTES) in refused[1]["message"]
    assert await table_rows(owner_conn) == before


async def test_a_document_over_its_length_is_refused_and_not_cached(
    gql: GraphQL, tokens: Tokens
) -> None:
    # The lru_cache around graphql-core's parse that every ParserCache shares.
    cache = cast("functools._lru_cache_wrapper[Any]", _get_parse_cache(DEFAULT_MAXSIZE))
    query = "{ me { user } }" + " " * MAX_DOCUMENT_CHARS
    kept = cache.cache_info().currsize
    for _ in range(2):
        body = await gql(tokens.manager, query)
        assert body["data"] is None
        [error] = body["errors"]
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
        assert str(MAX_DOCUMENT_CHARS) in error["message"]
    assert cache.cache_info().currsize == kept
    at_limit = "{ me { user } }" + " " * (MAX_DOCUMENT_CHARS - len("{ me { user } }"))
    assert (await gql(tokens.manager, at_limit))["data"] == {"me": {"user": "max"}}


@pytest.mark.parametrize(
    "query",
    [
        '{ queue(name: "kyc") { decisions { edges { node { item { decisions { item {'
        " decisions { item { decisions { item { id } } } } } } } } } } } }",
        "{ " + " ".join(f"a{n}: me {{ user }}" for n in range(40)) + " }",
        "{ me { " + "user " * 3000 + "} }",
        "{ me(x: " + "[" * 300 + "]" * 300 + ") { user } }",
    ],
    ids=["depth", "aliases", "tokens", "parser nesting"],
)
async def test_the_limiters_say_limit_exceeded(gql: GraphQL, tokens: Tokens, query: str) -> None:
    for _ in range(2):  # the second answer comes through the caches
        body = await gql(tokens.manager, query)
        assert body.get("data") is None, body
        assert body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED", body


ITEMS_WITH_DECISIONS = "items(first: 200) { edges { node { decisions { id } } } }"


async def test_thirty_aliases_of_nested_connections_cost_too_much(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    query = (
        "{ "
        + " ".join(f'q{n}: queue(name: "kyc") {{ {ITEMS_WITH_DECISIONS} }}' for n in range(30))
        + " }"
    )
    cost = 30 * (200 + 200 * LIST_WEIGHT)
    body = await gql(tokens.manager, query)
    assert body.get("data") is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert str(MAX_COST) in error["message"].replace(",", "")
    assert str(cost) in error["message"]


def queues(count: int, selection: str) -> str:
    return " ".join(f'q{n}: queue(name: "kyc") {{ {selection} }}' for n in range(count))


@pytest.mark.parametrize(
    ("query", "variables", "cost"),
    [
        # A variable counts as the largest page, whatever its value.
        (
            "query($n: Int!) { "
            + queues(5, "items(first: $n) { edges { node { decisions { id } } } }")
            + " }",
            {"n": 1},
            5 * (200 + 200 * LIST_WEIGHT),
        ),
        # Without `first`, a connection counts its default, 50.
        (
            "{ " + queues(20, "items { edges { node { decisions { id } } } }") + " }",
            {},
            20 * (50 + 50 * LIST_WEIGHT),
        ),
        # Fragments count once per spread.
        (
            "{ "
            + queues(5, "...Rows")
            + " } fragment Rows on Queue { "
            + ITEMS_WITH_DECISIONS
            + " }",
            {},
            5 * (200 + 200 * LIST_WEIGHT),
        ),
        # Inline fragments and nested connections multiply.
        (
            '{ queue(name: "kyc") { ... on Queue { items(first: 100) { edges { node { id } } } '
            "decisions(first: 100) { edges { node { item { decisions { id } } } } } } } }",
            {},
            100 + 100 + 100 * LIST_WEIGHT,
        ),
        # An audit pack stands for an item's whole story (HEAVY_SCALARS): 200 items with
        # theirs are refused, 50 are served.
        (
            '{ queue(name: "kyc") { items(first: 200) { edges { node { auditPack } } } } }',
            {},
            200 + 200 * HEAVY_SCALARS[("ReviewItem", "auditPack")],
        ),
        (
            '{ queue(name: "kyc") { items(first: 50) { edges { node { auditPack } } } } }',
            {},
            50 + 50 * HEAVY_SCALARS[("ReviewItem", "auditPack")],
        ),
    ],
    ids=[
        "variable first",
        "default first",
        "fragments",
        "inline fragment",
        "audit packs refused",
        "audit packs served",
    ],
)
async def test_the_cost_counts_variables_defaults_and_fragments(
    gql: GraphQL, tokens: Tokens, kyc: str, query: str, variables: dict[str, Any], cost: int
) -> None:
    body = await gql(tokens.manager, query, **variables)
    if cost > MAX_COST:
        assert body.get("data") is None, body
        assert f"costs {cost} rows" in body["errors"][0]["message"]
        assert body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    else:
        assert "errors" not in body, body


async def test_a_document_within_the_cost_is_served(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    count = MAX_COST // (200 + 200 * LIST_WEIGHT)
    body = await gql(tokens.manager, "{ " + queues(count, ITEMS_WITH_DECISIONS) + " }")
    assert "errors" not in body, body


@pytest.fixture
async def dev_client(test_database: TestDatabase) -> AsyncIterator[httpx.AsyncClient]:
    async with in_process_client(test_database, dev=True) as c:
        yield c


SUGGESTED = [
    ("{ queu { name } }", {}, "Did you mean 'queue'"),
    ('{ queue(nam: "kyc") { name } }', {}, "Did you mean 'name'"),
    (
        "mutation($input: OverturnDecisionInput!) { "
        "overturnDecision(input: $input) { __typename } }",
        {"input": {"decisionId": "1", "reasonCod": "x"}},
        "Did you mean 'reasonCode'",
    ),
    (
        'query($s: ItemState) { queue(name: "kyc") { items(state: $s) { edges { cursor } } } }',
        {"s": "PENDIN"},
        "Did you mean the enum value",
    ),
]


@pytest.mark.parametrize(("query", "variables", "suggestion"), SUGGESTED)
async def test_suggestions_only_in_dev(
    client: httpx.AsyncClient,
    dev_client: httpx.AsyncClient,
    tokens: Tokens,
    query: str,
    variables: dict[str, Any],
    suggestion: str,
) -> None:
    answers = []
    for c in (dev_client, client):
        response = await c.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {tokens.manager}"},
        )
        answers.append(" ".join(e["message"] for e in response.json()["errors"]))
    dev, production = answers
    assert suggestion in dev
    assert "Did you mean" not in production, production
    assert production  # still refused, with the rest of the message


async def test_a_huge_body_against_a_real_server(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    """`casework serve`: a 50 MB document is refused by its Content-Length, and a body that
    streams past the limit is cut off, while /healthz, asked in between, answers."""
    async with serve_casework(test_database) as casework:
        client = casework.api.client
        headers = {"Authorization": f"Bearer {tokens.manager}"}
        huge = {"query": "{ me { user } }" + " " * (50 * 1024 * 1024)}
        response = await client.post("/graphql", json=huge, headers=headers)
        assert response.status_code == 413
        assert response.json()["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"

        healthz_answered = asyncio.Event()

        async def streamed() -> AsyncIterator[bytes]:
            yield b'{"query": "{ me { user } }", "pad": "'
            chunk = b"x" * (1024 * 1024)
            sent = 0
            while sent <= DEFAULT_MAX_BODY_BYTES // 2:
                yield chunk
                sent += len(chunk)
            # Half the limit is in the server's hands: it must still answer others.
            health = await client.get("/healthz")
            assert health.status_code == 200
            healthz_answered.set()
            # Twice the limit in all: a server without one reads it all and answers 400.
            while sent <= 2 * DEFAULT_MAX_BODY_BYTES:
                yield chunk
                sent += len(chunk)
            yield b'"}'

        status: int | None = None
        # The server may answer 413 and close the socket while the client is still sending.
        with contextlib.suppress(httpx.TransportError):
            status = (
                await client.post("/graphql", content=streamed(), headers=headers)
            ).status_code
        assert healthz_answered.is_set()
        assert status in (None, 413)
        ok = await client.post("/graphql", json={"query": "{ me { user } }"}, headers=headers)
        assert ok.json() == {"data": {"me": {"user": "max"}}}
    casework.assert_no_traceback()


async def test_the_domain_bounds_payload_nesting_too(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    """Callers of the domain that are not the API (the CLI, benches) get the same bound."""
    before = await table_rows(owner_conn)
    for depth in (MAX_VALUE_DEPTH + 1, 100_000):
        refused = await enqueue_items(db, INTEGRATION, kyc_queue, [NewItem("deep", nested(depth))])
        assert refused == InvalidInput(
            f"items[0].payload nests deeper than {MAX_VALUE_DEPTH} levels", "items[0].payload"
        )
    assert await table_rows(owner_conn) == before
    accepted = await enqueue_items(
        db, INTEGRATION, kyc_queue, [NewItem("ok", nested(MAX_VALUE_DEPTH))]
    )
    assert isinstance(accepted, list)
