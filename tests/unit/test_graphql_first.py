"""GraphQLFirst hands an HTTP request for /graphql to the GraphQL app, with the scope the
router's match would give it, and every other request to the router."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from server.lean_graphql import GraphQLFirst


class Recorder:
    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(scope)


async def _nothing() -> Any:
    raise AssertionError("not read")


async def _ignore(message: Any) -> None:
    raise AssertionError("not sent")


@pytest.mark.parametrize(
    ("scope_type", "path", "root_path", "to_graphql"),
    [
        ("http", "/graphql", "", True),
        ("http", "/api/graphql", "/api", True),
        ("http", "/graphql/", "", False),
        ("http", "/graphqlx", "", False),
        ("http", "/healthz", "", False),
        ("websocket", "/graphql", "", False),
    ],
)
def test_only_http_requests_for_graphql_skip_the_router(
    scope_type: str, path: str, root_path: str, to_graphql: bool
) -> None:
    router, graphql = Recorder(), Recorder()
    first = GraphQLFirst(router, graphql=graphql)
    scope: Scope = {"type": scope_type, "path": path, "root_path": root_path, "method": "POST"}
    asyncio.run(first(scope, _nothing, _ignore))
    assert (graphql.scopes, router.scopes) == (([scope], []) if to_graphql else ([], [scope]))
    if to_graphql:
        assert scope["endpoint"] is graphql
        assert scope["path_params"] == {}
