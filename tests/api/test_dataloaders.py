"""A dashboard query costs the same number of SQL round trips for 3 items as for 30."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, decision_input, enqueue, statements_of

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
    _, calls = await statements_of(gql, tokens.manager, DASHBOARD, monkeypatch)
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


DECISIONS_BY_ITEM = "decisions_get_by_item_ids"

# The same fields of a page's items, asked for plainly, through an aliased connection and
# a named fragment, and through an inline fragment: each must find the decisions loaded.
PAGE_PLAIN = """
{ queue(name: "kyc") { items(first: 10) { edges { node {
  id decisions { id verdict } currentDecision { id }
} } } } }
"""
PAGE_FRAGMENT = """
{ queue(name: "kyc") { items(first: 10) { rows: edges { row: node { ...shown } } } } }
fragment shown on ReviewItem { id decisions { id verdict } currentDecision { id } }
"""
PAGE_INLINE = """
{ queue(name: "kyc") { items(first: 10) { edges { node {
  id ... on ReviewItem { decisions { id verdict } } ... { currentDecision { id } }
} } } } }
"""
PAGE_WITHOUT_DECISIONS = """
{ queue(name: "kyc") { items(first: 10) { edges { node { id state } } } } }
"""


def page_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    connection = data["queue"]["items"]
    edges = connection.get("edges") or connection["rows"]
    return [edge.get("node") or edge["row"] for edge in edges]


async def test_a_page_loads_its_decisions_in_one_statement_when_any_spelling_asks(
    gql: GraphQL, tokens: Tokens, kyc: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await decided_items(gql, tokens, "seen", 3)
    answers = []
    for document in (PAGE_PLAIN, PAGE_FRAGMENT, PAGE_INLINE):
        data, calls = await statements_of(gql, tokens.manager, document, monkeypatch)
        assert calls.count(DECISIONS_BY_ITEM) == 1, (document, calls)
        answers.append(page_rows(data))
    plain = answers[0]
    assert len(plain) == 3
    for row in plain:
        assert [d["verdict"] for d in row["decisions"]] == ["APPROVE"]
        assert row["currentDecision"] == {"id": row["decisions"][0]["id"]}
    assert answers[1] == plain
    assert answers[2] == plain

    data, calls = await statements_of(gql, tokens.manager, PAGE_WITHOUT_DECISIONS, monkeypatch)
    assert DECISIONS_BY_ITEM not in calls, calls
    assert [row["id"] for row in page_rows(data)] == [row["id"] for row in plain]
