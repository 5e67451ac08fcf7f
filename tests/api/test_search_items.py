"""Item search across queues (Query.items): every filter, both orders, keyset paging, the
caller's scope, the scan bound and bad input."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import enqueue

SEARCH = """
query($filter: ItemSearch!, $first: Int! = 50, $after: String) {
  items(filter: $filter, first: $first, after: $after) {
    __typename
    ... on ItemConnection {
      edges { cursor node { id queue externalKey state } }
      pageInfo { hasNextPage endCursor }
    }
    ... on InvalidInput { message field }
  }
}
"""


async def search(gql: GraphQL, token: str, **filter: Any) -> list[str]:
    body = await gql(token, SEARCH, filter=filter)
    result = body["data"]["items"]
    assert result["__typename"] == "ItemConnection", body
    return [edge["node"]["externalKey"] for edge in result["edges"]]


async def test_a_queue_newest_first(gql: GraphQL, tokens: Tokens, kyc: str) -> None:
    await enqueue(gql, tokens, "k-1", "k-2", "k-3")
    assert await search(gql, tokens.manager, queues=["kyc"]) == ["k-3", "k-2", "k-1"]
