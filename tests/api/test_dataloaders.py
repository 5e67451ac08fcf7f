"""A dashboard query costs the same number of SQL round trips for 3 items as for 30."""

from __future__ import annotations

from typing import Any

import pytest

from server.store.database import Database
from server.store.queries import Query
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, decision_input, enqueue

DASHBOARD = """
{
  queue(name: "kyc") {
    reasonCodes { code }
    items(first: 100) {
      edges { node {
        id state lease { owner }
        decisions { id verdict supersedes { id } supersededBy { id } item { id } }
        currentDecision { id reviewer }
      } }
    }
    decisions(first: 100) { edges { node { id item { id decisions { id } } } } }
  }
}
"""


async def decided_items(gql: GraphQL, tokens: Tokens, prefix: str, count: int) -> None:
    await enqueue(gql, tokens, *(f"{prefix}-{n}" for n in range(count)))
    for _ in range(count):
        claim = (await gql(tokens.reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
        decided = await gql(
            tokens.reviewer, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
        )
        assert decided["data"]["submitDecision"]["__typename"] == "DecisionRecorded"


async def round_trips(gql: GraphQL, tokens: Tokens, monkeypatch: pytest.MonkeyPatch) -> int:
    calls: list[str] = []
    original_fetch = Database.fetch

    async def counting_fetch(self: Database, query: Query[...], **kwargs: Any) -> Any:
        calls.append(query.name)
        return await original_fetch(self, query, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Database, "fetch", counting_fetch)
        body = await gql(tokens.manager, DASHBOARD)
    assert "errors" not in body, body
    return len(calls)


async def test_nested_reads_cost_constant_round_trips(
    gql: GraphQL, tokens: Tokens, kyc: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await decided_items(gql, tokens, "first", 3)
    few = await round_trips(gql, tokens, monkeypatch)
    await decided_items(gql, tokens, "more", 27)
    many = await round_trips(gql, tokens, monkeypatch)
    assert few == many
    assert many <= 8
