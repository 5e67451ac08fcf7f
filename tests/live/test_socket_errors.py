"""Errors over a websocket a client can act on: each carries `extensions.code`, a document
the server refuses gets an `error` message (not a bare `complete`, not a closed socket), and
the log has one line for it, not a traceback. Real server, real websockets."""

from __future__ import annotations

import pytest

from server.app import MAX_SUBSCRIPTIONS_PER_CONNECTION
from server.graphql.codes import ErrorCode
from server.graphql.operation import MAX_ALIASES, MAX_DEPTH, MAX_TOKENS
from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import serve_kyc, subscriptions_started
from tests.live.wsclient import graphql_socket


def _too_deep() -> str:
    selection = "id"
    for _ in range(MAX_DEPTH):
        selection = f"supersedes {{ {selection} }}"
    return f'subscription {{ decisionEvents(queue: "kyc") {{ {selection} }} }}'


REFUSED_DOCUMENTS = [
    pytest.param(
        'subscription { queueBacklog(queue: "kyc" ', "BAD_REQUEST", "Syntax Error", id="syntax"
    ),
    pytest.param(
        "subscription { nope }", "BAD_REQUEST", "Cannot query field 'nope'", id="unknown-field"
    ),
    pytest.param(
        "subscription { queueBacklog(queue: 1) { pending } }",
        "BAD_REQUEST",
        "String cannot represent",
        id="argument-type",
    ),
    pytest.param(
        "query { " + " ".join(["__typename"] * (MAX_TOKENS + 1)) + " }",
        "LIMIT_EXCEEDED",
        "Document contains more than",
        id="tokens",
    ),
    pytest.param(_too_deep(), "LIMIT_EXCEEDED", "exceeds maximum operation depth", id="depth"),
    pytest.param(
        "query { " + " ".join(f"a{n}: __typename" for n in range(MAX_ALIASES + 1)) + " }",
        "LIMIT_EXCEEDED",
        "aliases",
        id="aliases",
    ),
]


@pytest.mark.parametrize(("document", "code", "message"), REFUSED_DOCUMENTS)
async def test_a_refused_document_gets_an_error_message_with_its_code(
    test_database: TestDatabase, owner_db: Database, document: str, code: str, message: str
) -> None:
    async with (
        serve_kyc(test_database, owner_db) as (casework, tokens),
        graphql_socket(casework.url, tokens.rita) as socket,
    ):
        refused = await socket.subscribe(document)
        errors = await socket.error(refused)
        assert errors, errors
        for error in errors:
            assert error["extensions"]["code"] == code, error
        assert message in errors[0]["message"], errors
        # Only the operation was refused: the socket goes on.
        await subscriptions_started(socket, "kyc")
    # A client's mistake is not the server's: no traceback in the log.
    casework.assert_no_traceback()


async def test_errors_inside_next_payloads_carry_a_code(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with (
        serve_kyc(test_database, owner_db) as (casework, tokens),
        graphql_socket(casework.url, tokens.olga) as socket,
    ):
        operation = await socket.subscribe(
            'subscription { queueBacklog(queue: "kyc") { pending } }'
        )
        refused = await socket.message(operation)
        assert refused["type"] == "next", refused
        [error] = refused["payload"]["errors"]
        assert error["extensions"]["code"] in {code.value for code in ErrorCode}, error
        assert error["extensions"]["code"] != "INTERNAL", error
        assert (await socket.message(operation))["type"] == "complete"

        # A mutation over the socket refused by its resolver: coded too.
        operation = await socket.subscribe(
            'mutation { claimNext(queue: "kyc") { __typename ... on Error { message } } }'
        )
        answer = await socket.message(operation)
        assert answer["type"] == "next", answer
        for error in answer["payload"].get("errors", []):
            assert error["extensions"]["code"] in {code.value for code in ErrorCode}, error
    casework.assert_no_traceback()


async def test_an_operation_beyond_the_socket_limit_is_refused_with_limit_exceeded(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with (
        serve_kyc(test_database, owner_db) as (casework, tokens),
        graphql_socket(casework.url, tokens.rita) as socket,
    ):
        backlog = 'subscription { queueBacklog(queue: "kyc") { pending } }'
        for _ in range(MAX_SUBSCRIPTIONS_PER_CONNECTION):
            # Each answers its snapshot, so each is running before the next starts.
            await socket.next(await socket.subscribe(backlog))
        [error] = await socket.error(await socket.subscribe(backlog))
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
    casework.assert_no_traceback()
