"""A dashboard of N queues costs the same statements as one: every queue's page of decisions
comes from one statement (it was one per queue)."""

from __future__ import annotations

import pytest

from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, decision_input, statements_of
from tests.conftest import token_maker

QUEUES = ("q1", "q2", "q3", "q4")
DECISIONS_PER_QUEUE = 3
DECISION_PAGES = "decisions_get_pages"

QUEUE_DECISIONS = """
{ queues { name decisions(first: 2) {
    edges { cursor node { id queue reasonCode } } pageInfo { hasNextPage endCursor } } } }
"""
NEXT_PAGE = """
query($name: String!, $after: String!) {
  queue(name: $name) { decisions(first: 2, after: $after) { edges { node { id queue } } } }
}
"""


async def decided_in(gql: GraphQL, tokens: Tokens, reviewer: str, queue: str) -> list[str]:
    """DECISIONS_PER_QUEUE items enqueued in `queue` and approved; their decision ids."""
    configured = await gql(
        tokens.admin,
        """mutation($q: String!) {
          c: configureQueue(input: {name: $q}) { __typename }
          r: defineReasonCode(input: {queue: $q, code: "ok", label: "OK", verdicts: [APPROVE]})
            { __typename }
        }""",
        q=queue,
    )
    assert "errors" not in configured, configured
    items = [{"externalKey": f"{queue}-{n}", "payload": {}} for n in range(DECISIONS_PER_QUEUE)]
    enqueued = await gql(tokens.integration, ENQUEUE, queue=queue, items=items)
    assert enqueued["data"]["enqueueItems"]["__typename"] == "EnqueuedItems", enqueued
    ids = []
    for _ in items:
        claim = (await gql(reviewer, CLAIM, queue=queue))["data"]["claimNext"]
        decided = await gql(reviewer, DECIDE, input=decision_input(claim, "APPROVE", "ok"))
        ids.append(decided["data"]["submitDecision"]["decision"]["id"])
    return ids


async def test_every_queues_decisions_come_from_one_statement(
    gql: GraphQL, tokens: Tokens, owner_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    reviewer = await token_maker(owner_db)("dana", Role.REVIEWER, *QUEUES)
    scoped = await token_maker(owner_db)("mo", Role.MANAGER, *QUEUES[:2])
    decided = {queue: await decided_in(gql, tokens, reviewer, queue) for queue in QUEUES}

    for token, shown in ((scoped, QUEUES[:2]), (tokens.manager, QUEUES)):
        data, calls = await statements_of(gql, token, QUEUE_DECISIONS, monkeypatch)
        assert calls.count(DECISION_PAGES) == 1, calls
        pages = {queue["name"]: queue["decisions"] for queue in data["queues"]}
        assert set(shown) <= set(pages)
        for queue in shown:
            page = pages[queue]
            assert [edge["node"]["id"] for edge in page["edges"]] == decided[queue][:2]
            assert {edge["node"]["queue"] for edge in page["edges"]} == {queue}
            assert page["pageInfo"]["hasNextPage"] is True
            rest = await gql(token, NEXT_PAGE, name=queue, after=page["pageInfo"]["endCursor"])
            after = rest["data"]["queue"]["decisions"]["edges"]
            assert [edge["node"]["id"] for edge in after] == decided[queue][2:]
