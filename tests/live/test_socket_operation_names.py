"""An `operationName` the document does not define, or a document with no operation at all, is
the client's mistake over a websocket as over HTTP: an `error` message coded BAD_REQUEST
that says so, the socket goes on, and no traceback is logged (it was INTERNAL, "Unexpected
error.", with a traceback)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import serve_kyc, subscriptions_started
from tests.live.wsclient import GraphQLSocket, graphql_socket

NAMED = 'subscription Backlog { queueBacklog(queue: "kyc") { pending } } query Me { me { user } }'


async def subscribe(socket: GraphQLSocket, operation: str, payload: dict[str, Any]) -> None:
    message = {"id": operation, "type": "subscribe", "payload": payload}
    await socket.connection.send(json.dumps(message))


@pytest.mark.parametrize(
    ("query", "operation_name", "message"),
    [
        (NAMED, "Nope", 'Unknown operation named "Nope".'),
        ("fragment F on Query { __typename }", None, "Can't get GraphQL operation type"),
    ],
    ids=["unknown-name", "no-operation"],
)
async def test_an_operation_the_document_lacks_is_a_bad_request(
    test_database: TestDatabase,
    owner_db: Database,
    query: str,
    operation_name: str | None,
    message: str,
) -> None:
    async with (
        serve_kyc(test_database, owner_db) as (casework, tokens),
        graphql_socket(casework.url, tokens.rita) as socket,
    ):
        await subscribe(socket, "named", {"query": query, "operationName": operation_name})
        errors = await socket.error("named")
        assert errors == [{"message": message, "extensions": {"code": "BAD_REQUEST"}}]

        # Only that operation was refused; the socket and a well-named one go on.
        await subscribe(socket, "me", {"query": NAMED, "operationName": "Me"})
        answer = await socket.message("me")
        assert answer["type"] == "next", answer
        assert answer["payload"] == {"data": {"me": {"user": "rita"}}}
        await subscriptions_started(socket, "kyc")
    casework.assert_no_traceback()
