"""Item search across queues (Query.items): every filter, both orders, keyset paging (also
while others claim and decide), the caller's scope, the scan bound and bad input."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from server.domain.search import filters
from server.domain.search.filters import ItemPage, ItemSearch, SearchOrder
from server.domain.search.items import search_items
from server.domain.search.keyset import Keyset, encode_keyset
from server.store import sql
from server.store.database import Database, Row, create_pool
from server.store.queries import P, Queries, Query
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, OVERTURN, decision_input
from tests.conftest import ADMIN, TestDatabase

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
WORLD_SETUP = """
mutation {
  payouts: configureQueue(input: {name: "payouts"}) { __typename }
  senior: defineReasonCode(input: {queue: "kyc", code: "needs_senior", label: "Senior",
                                   verdicts: [ESCALATE]}) { __typename }
  hold: defineHoldReason(input: {queue: "kyc", code: "waiting", label: "Waiting"}) {
    __typename }
}
"""
HOLD = """
mutation($input: HoldItemInput!) { holdItem(input: $input) { __typename } }
"""
ASSIGN = """
mutation($input: AssignItemInput!) { assignItem(input: $input) { __typename } }
"""
NOTE = """
mutation($input: AddNoteInput!) { addNote(input: $input) { __typename } }
"""


async def page(
    gql: GraphQL, token: str, first: int = 50, after: str | None = None, **filter: Any
) -> dict[str, Any]:
    body = await gql(token, SEARCH, filter=filter, first=first, after=after)
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["items"]
    return result


async def keys(gql: GraphQL, token: str, **filter: Any) -> list[str]:
    result = await page(gql, token, **filter)
    assert result["__typename"] == "ItemConnection", result
    assert result["pageInfo"]["hasNextPage"] is False
    return [edge["node"]["externalKey"] for edge in result["edges"]]


async def every_page(gql: GraphQL, token: str, first: int, **filter: Any) -> list[str]:
    """Every page of the search in turn, by its cursors."""
    seen: list[str] = []
    after = None
    while True:
        result = await page(gql, token, first=first, after=after, **filter)
        assert result["__typename"] == "ItemConnection", result
        assert len(result["edges"]) <= first
        seen += [edge["node"]["externalKey"] for edge in result["edges"]]
        if not result["pageInfo"]["hasNextPage"]:
            return seen
        after = result["pageInfo"]["endCursor"]


async def in_order(conn: asyncpg.Connection, newest: bool, *queues: str) -> list[str]:
    """The database's own activity order of the queues' items: what the search must give."""
    direction = "DESC" if newest else "ASC"
    rows = await conn.fetch(
        f"SELECT external_key FROM review_items WHERE queue = ANY ($1::text[]) "
        f"ORDER BY updated_at {direction}, id {direction}",
        list(queues),
    )
    return [row["external_key"] for row in rows]


async def enqueue(gql: GraphQL, tokens: Tokens, queue: str, *keys: str, priority: int = 0) -> None:
    items = [{"externalKey": key, "payload": {}, "priority": priority} for key in keys]
    body = await gql(tokens.integration, ENQUEUE, queue=queue, items=items)
    assert body["data"]["enqueueItems"]["__typename"] == "EnqueuedItems", body


async def claim(gql: GraphQL, token: str, queue: str = "kyc") -> dict[str, Any]:
    claimed: dict[str, Any] = (await gql(token, CLAIM, queue=queue))["data"]["claimNext"]
    assert claimed["__typename"] == "Claim", claimed
    return claimed


async def decide(
    gql: GraphQL, token: str, claimed: dict[str, Any], verdict: str, reason: str
) -> str:
    body = await gql(token, DECIDE, input=decision_input(claimed, verdict, reason))
    recorded = body["data"]["submitDecision"]
    assert recorded["__typename"] == "DecisionRecorded", body
    decision_id: str = recorded["decision"]["id"]
    return decision_id


async def ok(gql: GraphQL, token: str, document: str, **variables: Any) -> None:
    body = await gql(token, document, **variables)
    assert "errors" not in body, body
    (result,) = body["data"].values()
    assert result["__typename"] in {"ItemHeld", "ItemAssigned", "NoteAdded"}, body


@dataclass(frozen=True)
class World:
    everything: frozenset[str]
    # Between the first items (decided, leased, held) and the rest.
    middle: datetime
    start: datetime


@pytest.fixture
async def world(gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection) -> World:
    """One item per thing a filter can tell apart, in kyc (and one each in kyc-senior and
    payouts). Claims take the only waiting item of kyc at each step."""
    setup = await gql(tokens.admin, WORLD_SETUP)
    assert "errors" not in setup, setup
    start = await owner_conn.fetchval("SELECT clock_timestamp()")
    await enqueue(gql, tokens, "payouts", "p-1")
    await enqueue(gql, tokens, kyc, "w-approved")
    await decide(gql, tokens.reviewer, await claim(gql, tokens.reviewer), "APPROVE", "documents_ok")
    await enqueue(gql, tokens, kyc, "w-rejected")
    rejected = await decide(
        gql,
        tokens.other_reviewer,
        await claim(gql, tokens.other_reviewer),
        "REJECT",
        "name_mismatch",
    )
    overturned = await gql(
        tokens.approver, OVERTURN, input={"decisionId": rejected, "reasonCode": "documents_ok"}
    )
    assert overturned["data"]["overturnDecision"]["__typename"] == "DecisionRecorded", overturned
    await enqueue(gql, tokens, kyc, "w-escalated")
    await decide(
        gql, tokens.reviewer, await claim(gql, tokens.reviewer), "ESCALATE", "needs_senior"
    )
    await enqueue(gql, tokens, kyc, "w-held")
    held = await claim(gql, tokens.reviewer)
    until = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    hold = {"itemId": held["item"]["id"], "leaseToken": held["leaseToken"]}
    await ok(gql, tokens.reviewer, HOLD, input={**hold, "until": until, "reason": "waiting"})
    await enqueue(gql, tokens, kyc, "w-leased")
    await claim(gql, tokens.reviewer)
    middle = await owner_conn.fetchval("SELECT clock_timestamp()")
    await enqueue(gql, tokens, kyc, "w-assigned", "w-noted", "w-overdue", "w-subject")
    await enqueue(gql, tokens, kyc, "w-pending", priority=5)
    ids = dict(await owner_conn.fetch("SELECT external_key, id FROM review_items"))
    assign = {"itemId": str(ids["w-assigned"]), "reviewer": "rob"}
    await ok(gql, tokens.manager, ASSIGN, input=assign)
    await ok(gql, tokens.reviewer, NOTE, input={"itemId": str(ids["w-noted"]), "body": "Called"})
    # No mutation sets a due time in the past, nor a subject without a privacy policy.
    await owner_conn.execute(
        "UPDATE review_items SET due_at = now() - interval '1 hour' "
        "WHERE external_key = 'w-overdue'"
    )
    await owner_conn.execute(
        "UPDATE review_items SET subject_ref = 'subject-1' WHERE external_key = 'w-subject'"
    )
    return World(frozenset(ids), middle, start)


async def test_each_filter_matches_what_it_says_and_nothing_else(
    gql: GraphQL, tokens: Tokens, world: World
) -> None:
    everything = world.everything
    long_ago = "2000-01-01T00:00:00Z"
    cases: list[tuple[dict[str, Any], set[str]]] = [
        ({}, set(everything)),
        ({"queues": ["kyc-senior"]}, {"w-escalated"}),
        ({"queues": ["payouts", "nowhere"]}, {"p-1"}),
        (
            {"states": ["PENDING"]},
            {"w-escalated", "w-held", "w-assigned", "w-noted", "w-overdue", "w-subject"}
            | {"w-pending", "p-1"},
        ),
        ({"states": ["LEASED"]}, {"w-leased"}),
        ({"states": ["DECIDED"]}, {"w-approved", "w-rejected"}),
        ({"states": ["PARKED"]}, set()),
        ({"states": ["LEASED", "DECIDED"]}, {"w-leased", "w-approved", "w-rejected"}),
        ({"externalKeyPrefix": "w-a"}, {"w-approved", "w-assigned"}),
        ({"externalKeyPrefix": "W-"}, set()),
        ({"subjectRef": "subject-1"}, {"w-subject"}),
        ({"subjectRef": "subject-2"}, set()),
        ({"priorityAtLeast": 5}, {"w-pending", "w-escalated"}),
        ({"priorityAtLeast": 5, "priorityAtMost": 50}, {"w-pending"}),
        ({"priorityAtMost": -1}, set()),
        (
            {"enqueuedAfter": world.middle.isoformat()},
            {"w-assigned", "w-noted", "w-overdue", "w-subject", "w-pending"},
        ),
        (
            {"enqueuedBefore": world.middle.isoformat()},
            {"p-1", "w-approved", "w-rejected", "w-escalated", "w-held", "w-leased"},
        ),
        ({"decidedAfter": world.start.isoformat()}, {"w-approved", "w-rejected", "w-escalated"}),
        ({"decidedBefore": long_ago}, set()),
        ({"decidedBy": "rita"}, {"w-approved", "w-escalated"}),
        ({"decidedBy": "ann"}, {"w-rejected"}),
        # rob's rejection was overturned: the current decision is ann's.
        ({"decidedBy": "rob"}, set()),
        ({"verdict": "APPROVE"}, {"w-approved", "w-rejected"}),
        ({"verdict": "REJECT"}, set()),
        ({"verdict": "ESCALATE"}, {"w-escalated"}),
        ({"reasonCode": "documents_ok"}, {"w-approved", "w-rejected"}),
        ({"reasonCode": "name_mismatch"}, set()),
        ({"decisionStatus": "EFFECTIVE"}, {"w-approved", "w-rejected", "w-escalated"}),
        ({"decisionStatus": "PROVISIONAL"}, set()),
        ({"overturned": True}, {"w-rejected"}),
        ({"overturned": False}, {"w-approved", "w-escalated"}),
        ({"assignedTo": "rob"}, {"w-assigned"}),
        ({"assignedTo": "rita"}, set()),
        ({"held": True}, {"w-held"}),
        ({"held": False}, everything - {"w-held"}),
        ({"overdue": True}, {"w-overdue"}),
        ({"overdue": False}, everything - {"w-overdue"}),
        ({"hasNotes": True}, {"w-noted"}),
        ({"hasNotes": False}, everything - {"w-noted"}),
        # Combined: every filter must hold.
        (
            {
                "queues": ["kyc"],
                "states": ["PENDING"],
                "priorityAtMost": 0,
                "held": False,
                "hasNotes": False,
            },
            {"w-assigned", "w-overdue", "w-subject"},
        ),
        ({"decidedBy": "rita", "verdict": "ESCALATE", "queues": ["kyc-senior"]}, {"w-escalated"}),
        ({"decidedBy": "rita", "queues": ["kyc"]}, {"w-approved"}),
        ({"externalKeyPrefix": "w-", "states": ["DECIDED"], "overturned": False}, {"w-approved"}),
        ({"verdict": "APPROVE", "enqueuedAfter": world.middle.isoformat()}, set()),
        ({"hasNotes": True, "assignedTo": "rob"}, set()),
        ({"held": True, "decidedBy": "rita"}, set()),
    ]
    for filter, expected in cases:
        assert set(await keys(gql, tokens.manager, **filter)) == expected, filter


async def test_both_orders_page_through_every_item_once(
    gql: GraphQL, tokens: Tokens, world: World, owner_conn: asyncpg.Connection
) -> None:
    for order, newest in (("NEWEST_FIRST", True), ("OLDEST_FIRST", False)):
        expected = await in_order(owner_conn, newest, "kyc", "kyc-senior")
        for first in (1, 3, 50):
            seen = await every_page(
                gql, tokens.manager, first, queues=["kyc", "kyc-senior"], order=order
            )
            assert seen == expected, (order, first)
        # A filter that drives the search by its own index pages the same way.
        seen = await every_page(gql, tokens.manager, 2, externalKeyPrefix="w-", order=order)
        assert seen == expected


async def test_the_caller_sees_only_their_queues(
    gql: GraphQL, tokens: Tokens, world: World
) -> None:
    # olga works in payouts only; rob in kyc only (not kyc-senior).
    assert await keys(gql, tokens.outsider) == ["p-1"]
    assert await keys(gql, tokens.outsider, queues=["kyc"]) == []
    assert await keys(gql, tokens.outsider, externalKeyPrefix="w-") == []
    assert await keys(gql, tokens.outsider, decidedBy="rita") == []
    assert await keys(gql, tokens.other_reviewer, queues=["kyc-senior"]) == []
    mine = set(await keys(gql, tokens.other_reviewer))
    assert mine == world.everything - {"p-1", "w-escalated"}
    assert set(await keys(gql, tokens.other_reviewer, queues=["kyc", "payouts"])) == mine


async def test_paging_newest_first_while_others_claim_and_decide(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    # The claims take the hot items (higher priority) only; the cold ones are never touched.
    hot = [f"hot-{n:02}" for n in range(12)]
    cold = [f"cold-{n:02}" for n in range(20)]
    await enqueue(gql, tokens, kyc, *cold[:10])
    await enqueue(gql, tokens, kyc, *hot, priority=9)
    await enqueue(gql, tokens, kyc, *cold[10:])
    untouched = [key for key in await in_order(owner_conn, True, kyc) if key in cold]
    decided: list[str] = []

    async def claim_and_decide() -> None:
        for _ in hot:
            claimed = await claim(gql, tokens.other_reviewer)
            await decide(gql, tokens.other_reviewer, claimed, "APPROVE", "documents_ok")
            decided.append(claimed["item"]["id"])

    pages, _ = await asyncio.gather(
        every_page(gql, tokens.manager, 2, queues=[kyc]), claim_and_decide()
    )
    assert len(decided) == len(hot)
    # An item that changes moves ahead of the cursor: never shown twice, and every item
    # that did not change is shown once, in order.
    assert len(pages) == len(set(pages))
    assert [key for key in pages if key in cold] == untouched
    assert set(pages) <= set(hot) | set(cold)
    assert await every_page(gql, tokens.manager, 5, queues=[kyc]) == await in_order(
        owner_conn, True, kyc
    )


async def test_a_search_that_would_read_too_much_is_refused_with_what_narrows_it(
    gql: GraphQL, tokens: Tokens, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filters, "SCAN_LIMIT", 3)
    # Walked in activity order: the queues' items run out of budget before a match.
    body = await gql(tokens.manager, SEARCH, filter={"priorityAtLeast": 1000})
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert error["extensions"]["narrowBy"][:3] == ["queues", "enqueuedAfter", "enqueuedBefore"]
    assert "more than 3 items" in error["message"]
    # One queue given: more queues would not narrow it.
    body = await gql(tokens.manager, SEARCH, filter={"queues": ["kyc"], "priorityAtLeast": 1000})
    assert "queues" not in body["errors"][0]["extensions"]["narrowBy"]
    # Driven by the reviewer's decisions, which are more than 3 without a window.
    monkeypatch.setattr(filters, "SCAN_LIMIT", 1)
    body = await gql(tokens.manager, SEARCH, filter={"decidedBy": "rita"})
    assert body["errors"][0]["extensions"]["narrowBy"] == ["decidedAfter", "decidedBefore"]
    # A page filled within the bound is answered.
    monkeypatch.setattr(filters, "SCAN_LIMIT", 3)
    assert await keys(gql, tokens.manager, subjectRef="subject-1") == ["w-subject"]


async def test_bad_input_names_the_field(gql: GraphQL, tokens: Tokens, world: World) -> None:
    at = "2026-10-01T00:00:00Z"
    cases = [
        ({"priorityAtLeast": 5, "priorityAtMost": 1}, "priorityAtLeast"),
        ({"enqueuedAfter": at, "enqueuedBefore": at}, "enqueuedAfter"),
        ({"decidedAfter": at, "decidedBefore": "2026-09-01T00:00:00Z"}, "decidedAfter"),
        ({"externalKeyPrefix": ""}, "externalKeyPrefix"),
        ({"decisionStatus": "SUPERSEDED"}, "decisionStatus"),
    ]
    for filter, field in cases:
        result = await page(gql, tokens.manager, **filter)
        assert (result["__typename"], result["field"]) == ("InvalidInput", field), filter
    newest = await page(gql, tokens.manager, first=1)
    cursor = newest["pageInfo"]["endCursor"]
    for after, filter in (
        ("not-a-cursor", {}),
        ("Zm9v", {}),  # base64 of "foo"
        (encode_keyset("decisions", SearchOrder.NEWEST_FIRST, Keyset(datetime.now(UTC), 1)), {}),
        (cursor, {"order": "OLDEST_FIRST"}),
    ):
        result = await page(gql, tokens.manager, after=after, **filter)
        assert result["__typename"] == "InvalidInput", (after, filter, result)
        assert result["field"] == "after"


class ClaimingDuringTheWalk(Database):
    """The service's Database, running `between` (once) after the next walk of the activity
    order has read its chunk and before the page is read from it: a change made at exactly
    the moment a concurrent claim could make it."""

    between: Callable[[], Awaitable[object]] | None = None

    async def fetch(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> list[Row]:
        rows = await super().fetch(query, *args, **kwargs)
        if query is sql.search.ITEM_IDS_WALK_NEWEST and self.between is not None:
            between, self.between = self.between, None
            await between()
        return rows


async def test_an_item_claimed_between_the_walk_and_its_page_is_not_shown_out_of_place(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    test_database: TestDatabase,
    queries: Queries,
    owner_conn: asyncpg.Connection,
) -> None:
    """The walk reads an item under its old time; a claim moves it to the front before the
    page reads it. It is not shown there, under a time that would send the next page's
    cursor back to the start: every page goes on from where the last one ended."""
    await enqueue(gql, tokens, kyc, "moving", priority=5)
    await enqueue(gql, tokens, kyc, *(f"calm-{n}" for n in range(5)))
    search = ItemSearch(queues=(kyc,))
    pool = await create_pool(test_database.app_dsn, min_size=1, max_size=2)
    walking = ClaimingDuringTheWalk(pool, queries)

    async def claim_the_urgent_one() -> None:
        claimed = await claim(gql, tokens.other_reviewer)
        moving = await owner_conn.fetchval(
            "SELECT id FROM review_items WHERE external_key = 'moving'"
        )
        assert claimed["item"]["id"] == str(moving), claimed

    seen: list[str] = []
    after: str | None = None
    try:
        for number in range(10):
            if number == 1:
                walking.between = claim_the_urgent_one
            found = await search_items(walking, ADMIN, search, 1, after)
            assert isinstance(found, ItemPage), found
            seen += [item.external_key for item in found.items]
            if not found.has_next_page:
                break
            after = found.cursors[-1]
    finally:
        await pool.close()
    assert walking.between is None, "the claim did not run"
    # Claimed after the first page, the item moved ahead of every cursor from then on.
    assert seen == [f"calm-{n}" for n in range(4, -1, -1)]
