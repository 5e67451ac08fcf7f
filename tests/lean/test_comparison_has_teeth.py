"""The comparison flags what a client would see differ: a wrapper application changes one
thing in an answer, and the pair must then be reported different. Without these, a gate
that compared nothing would pass just as well."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.lean.apps import Pair, bearer, graphql_body
from tests.lean.state import State
from tests.lean.wire import Answer, differences, members

Rewrite = Callable[[bytes], bytes]


def rewriting(app: ASGIApp, rewrite: Rewrite, status: int | None = None) -> ASGIApp:
    """`app`, with its body passed through `rewrite` (and its status replaced)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        body: list[bytes] = []
        start: Message = {}

        async def keep(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            else:
                body.append(message.get("body", b""))

        await app(scope, receive, keep)
        new = rewrite(b"".join(body))
        headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(new)).encode()))
        await send({**start, "headers": headers, "status": status or start["status"]})
        await send({"type": "http.response.body", "body": new})

    return wrapped


def _reorder_error_fields(body: bytes) -> bytes:
    parsed = json.loads(body)
    parsed["errors"] = [dict(reversed(list(error.items()))) for error in parsed["errors"]]
    return json.dumps(parsed, separators=(",", ":")).encode()


def _data_after_errors(body: bytes) -> bytes:
    parsed = json.loads(body)
    return json.dumps(
        {"errors": parsed["errors"], "data": parsed["data"]}, separators=(",", ":")
    ).encode()


BAD_QUEUE = "query { queue(name: 7) { name } }"
ME = "query Me { me { user role } }"


@pytest.mark.parametrize(
    ("query", "rewrite", "status", "flagged"),
    [
        (ME, lambda body: body.replace(b'"me":', b'"me": ', 1), None, "data"),
        (ME, lambda body: body.replace(b'"user"', b'"user" ', 1), None, "data"),
        (ME, lambda body: body.replace(b"}}}", b'}},"errors":[]}'), None, "members"),
        (BAD_QUEUE, _reorder_error_fields, None, "errors"),
        (BAD_QUEUE, lambda body: body.replace(b"BAD_REQUEST", b"INTERNAL"), None, "errors"),
        (ME, lambda body: body, 503, "status"),
    ],
    ids=[
        "space-in-data",
        "space-after-a-key",
        "empty-errors",
        "error-fields-reordered",
        "another-code",
        "status",
    ],
)
async def test_a_different_answer_is_flagged(
    query: str, rewrite: Rewrite, status: int | None, flagged: str, pair: Pair, world: State
) -> None:
    altered = Pair(rewriting(pair.lean, rewrite, status), pair.general)
    lean, found = await altered.compare(graphql_body(query, None), bearer(world.tokens["admin"]))
    assert any(difference.startswith(flagged) for difference in found), (found, lean.body)


async def test_member_order_alone_is_no_difference(pair: Pair, world: State) -> None:
    """What GraphQL over HTTP leaves to the encoder is not flagged: `errors` before `data`."""
    altered = Pair(rewriting(pair.lean, _data_after_errors), pair.general)
    lean, found = await altered.compare(
        graphql_body(BAD_QUEUE, None), bearer(world.tokens["admin"])
    )
    assert lean.body.startswith(b'{"errors"'), lean.body
    assert found == []


def test_fresh_values_may_differ_only_in_a_mutation_and_consistently() -> None:
    def answer(data: str) -> Answer:
        return Answer(200, {"content-type": "application/json"}, f'{{"data":{data}}}'.encode())

    one, two = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    first = answer(f'{{"a":"{one}","b":"{one}","at":"2026-12-06T23:00:00.123456+00:00"}}')
    again = answer(f'{{"a":"{two}","b":"{two}","at":"2026-12-06T23:00:01.654321+00:00"}}')
    mixed = answer(f'{{"a":"{two}","b":"{one}","at":"2026-12-06T23:00:01.654321+00:00"}}')
    shorter = answer(f'{{"a":"{two}","b":"{two}","at":"2026-12-06T23:00:01+00:00"}}')
    assert differences(first, again, fresh_values=True) == []
    assert differences(first, again) != []
    assert differences(first, mixed, fresh_values=True) != []
    assert differences(first, shorter, fresh_values=True) != []
    ages = answer('{"oldestPendingAgeSeconds":22.5,"pending":3}')
    later = answer('{"oldestPendingAgeSeconds":22.51,"pending":3}')
    more = answer('{"oldestPendingAgeSeconds":22.5,"pending":4}')
    assert differences(ages, later) == []
    assert differences(ages, more) != []
    spaced = answer('{"oldestPendingAgeSeconds": 22.5,"pending":3}')
    assert differences(ages, spaced, fresh_values=True) != []


def test_members_are_the_exact_text_sent() -> None:
    assert members('{"data" : {"a": 1} ,"errors":[ ]}') == {"data": '{"a": 1}', "errors": "[ ]"}
