"""JSON in and out of /graphql: orjson where it agrees with the standard library, the
standard library where it does not (server/graphql/wire_json.py), and Content-Type read
without Strawberry's parser but to the same effect."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from server.graphql import wire_json
from tests.api.conftest import Tokens
from tests.api.helpers import CLAIM, ENQUEUE

# Beyond 64 bits, at the edge of 64 bits, and a float: jsonb keeps each exactly.
BIG = 123456789012345678901234567890
EDGE = 2**63 - 1


def raw_operation(query: str, variables: dict[str, object]) -> bytes:
    return json.dumps({"query": query, "variables": variables}).encode()


async def post(
    client: httpx.AsyncClient, token: str, body: bytes, content_type: str = "application/json"
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    return await client.post("/graphql", content=body, headers=headers)


async def test_a_payload_beyond_64_bits_comes_back_digit_for_digit(
    client: httpx.AsyncClient, tokens: Tokens, kyc: str
) -> None:
    payload = {"big": BIG, "negative": -BIG, "edge": EDGE, "ratio": 0.1, "id": "9" * 25}
    items = [{"externalKey": "wide-1", "payload": payload}]
    enqueued = await post(
        client, tokens.integration, raw_operation(ENQUEUE, {"queue": kyc, "items": items})
    )
    assert enqueued.status_code == 200, enqueued.text
    assert enqueued.json()["data"]["enqueueItems"]["__typename"] == "EnqueuedItems"

    claimed = await post(client, tokens.reviewer, raw_operation(CLAIM, {"queue": kyc}))
    # Read with the standard library, which keeps every digit of what was sent.
    claim = json.loads(claimed.content)["data"]["claimNext"]
    assert claim["__typename"] == "Claim", claim
    assert claim["item"]["payload"] == payload


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
async def test_json_content_types_are_read(
    client: httpx.AsyncClient, tokens: Tokens, kyc: str, content_type: str
) -> None:
    response = await post(
        client, tokens.reviewer, raw_operation(CLAIM, {"queue": kyc}), content_type
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["claimNext"]["__typename"] in {"Claim", "QueueEmpty"}


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b'{"query": "{ me { user } }"}', "text/plain", "Unsupported content type"),
        (b'{"query": 5}', "application/json", "`query` must be a string or null"),
        (b'{"query": "{ me { user } }", "variables": []}', "application/json", "`variables`"),
        (b'{"query": "{ me { user } }", "extensions": 1}', "application/json", "`extensions`"),
        (b'{"query": "{ me { user } }"', "application/json", "Unable to parse request body"),
        (b'[{"query": "{ me { user } }"}]', "application/json", "Batching is not enabled"),
    ],
)
async def test_bodies_strawberry_refuses_are_refused_as_before(
    client: httpx.AsyncClient, tokens: Tokens, body: bytes, content_type: str, message: str
) -> None:
    response = await post(client, tokens.reviewer, body, content_type)
    assert response.status_code == 400, response.text
    error = response.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert message in error["message"]


def test_wire_json_agrees_with_the_standard_library_where_orjson_would_not() -> None:
    for text in (f'{{"a": {BIG}}}', f"[{-BIG}, {EDGE}]", '"\\ud800"', '{"id": "' + "1" * 30 + '"}'):
        assert wire_json.loads(text) == json.loads(text)
        assert wire_json.loads(text.encode()) == json.loads(text)
    assert math.isnan(wire_json.loads("NaN"))  # type: ignore[arg-type]
    with pytest.raises(json.JSONDecodeError):
        wire_json.loads(b"[1, 2")
    assert json.loads(wire_json.dumps({"a": BIG, "b": [EDGE, "é", None]})) == {
        "a": BIG,
        "b": [EDGE, "é", None],
    }
