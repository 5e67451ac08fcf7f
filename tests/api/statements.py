"""Counting the statements a request sends: what a read costs, by statement name."""

from __future__ import annotations

from typing import Any

import pytest

from server.store.database import Database
from server.store.queries import Query
from tests.api.conftest import GraphQL


async def statements_of(
    gql: GraphQL, token: str, query: str, monkeypatch: pytest.MonkeyPatch, **variables: Any
) -> tuple[dict[str, Any], list[str]]:
    """The answer, and the names of the statements sent (Database.fetch) while it resolved."""
    calls: list[str] = []
    original_fetch = Database.fetch

    async def counting_fetch(self: Database, query: Query[...], **kwargs: Any) -> Any:
        calls.append(query.name)
        return await original_fetch(self, query, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Database, "fetch", counting_fetch)
        body = await gql(token, query, **variables)
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data, calls
