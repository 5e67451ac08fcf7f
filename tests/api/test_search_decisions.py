"""Query.decisions: every filter, both orders, keyset paging while others decide, the caller's
scope, the scan bound (LIMIT_EXCEEDED with extensions.narrowBy) and bad input.

A small history is made over the API (claims and decisions as reviewers make them); what each
search must answer is worked out here from the decisions as `ReviewItem.decisions` shows them,
and compared in full, in order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from server.domain.model import Role
from server.domain.search import filters
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, OVERTURN, decision_input
from tests.conftest import token_maker

SEARCH = """
query($filter: DecisionSearch!, $first: Int! = 50, $after: String) {
  decisions(filter: $filter, first: $first, after: $after) {
    __typename
    ... on DecisionConnection {
      edges { cursor node { id queue reviewer verdict reasonCode status decidedAt } }
      pageInfo { hasNextPage endCursor }
    }
    ... on InvalidInput { message field }
  }
}
"""
SETUP = """
mutation {
  payouts: configureQueue(input: {name: "payouts"}) { __typename }
  ok: defineReasonCode(input: {queue: "payouts", code: "ok", label: "OK", verdicts: [APPROVE]})
    { __typename }
  unclear: defineReasonCode(input: {queue: "kyc", code: "unclear", label: "Unclear",
                                    verdicts: [ESCALATE]}) { __typename }
  review: configureQueue(input: {name: "kyc", escalationQueue: "kyc-senior",
                                 secondReview: {verdicts: [REJECT]}}) { __typename }
}
"""
ITEM_DECISIONS = """
query($id: ID!) {
  item(id: $id) { decisions { id queue reviewer verdict reasonCode status decidedAt } }
}
"""


@dataclass(frozen=True)
class History:
    decisions: list[dict[str, Any]]  # every decision, as ReviewItem.decisions shows it
    tokens: dict[str, str]  # by reviewer name: rob, rita, olga, ann


def key(decision: dict[str, Any]) -> tuple[datetime, int]:
    return (datetime.fromisoformat(decision["decidedAt"]), int(decision["id"]))


def expected(history: History, newest: bool = True, **where: Any) -> list[str]:
    """The ids a search with these GraphQL filters must answer, in its order."""

    def matches(d: dict[str, Any]) -> bool:
        at = datetime.fromisoformat(d["decidedAt"])
        return (
            ("queues" not in where or d["queue"] in where["queues"])
            and where.get("reviewer", d["reviewer"]) == d["reviewer"]
            and where.get("verdict", d["verdict"]) == d["verdict"]
            and where.get("reasonCode", d["reasonCode"]) == d["reasonCode"]
            and where.get("status", d["status"]) == d["status"]
            and ("decidedAfter" not in where or at >= datetime.fromisoformat(where["decidedAfter"]))
            and (
                "decidedBefore" not in where or at < datetime.fromisoformat(where["decidedBefore"])
            )
        )

    found = sorted((d for d in history.decisions if matches(d)), key=key, reverse=newest)
    return [d["id"] for d in found]


async def decide(gql: GraphQL, token: str, queue: str, verdict: str, reason: str) -> dict[str, Any]:
    claim = (await gql(token, CLAIM, queue=queue))["data"]["claimNext"]
    assert claim["__typename"] == "Claim", claim
    body = await gql(token, DECIDE, input=decision_input(claim, verdict, reason))
    decided: dict[str, Any] = body["data"]["submitDecision"]
    assert decided["__typename"] == "DecisionRecorded", body
    return decided


async def enqueue(gql: GraphQL, tokens: Tokens, queue: str, *keys: str) -> list[str]:
    items = [{"externalKey": k, "payload": {"applicant": k}} for k in keys]
    body = await gql(tokens.integration, ENQUEUE, queue=queue, items=items)
    assert body["data"]["enqueueItems"]["__typename"] == "EnqueuedItems", body
    return [entry["item"]["id"] for entry in body["data"]["enqueueItems"]["items"]]


@pytest.fixture
async def history(gql: GraphQL, tokens: Tokens, kyc: str, owner_db: Database) -> History:
    """kyc (REJECT needs a second review) escalating to kyc-senior, and payouts:
    an approval, a provisional rejection, an approval later overturned, an escalation and its
    approval in kyc-senior, an approval in payouts."""
    body = await gql(tokens.admin, SETUP)
    assert "errors" not in body, body
    make = token_maker(owner_db)
    people = {
        "rob": tokens.other_reviewer,
        "rita": tokens.reviewer,
        "olga": await make("olga", Role.REVIEWER, "payouts"),
        "ann": tokens.approver,
    }
    items = await enqueue(gql, tokens, "kyc", "k1", "k2", "k3", "k4")
    items += await enqueue(gql, tokens, "payouts", "p1")
    await decide(gql, people["rob"], "kyc", "APPROVE", "documents_ok")
    await decide(gql, people["rita"], "kyc", "REJECT", "name_mismatch")
    approved = await decide(gql, people["rita"], "kyc", "APPROVE", "documents_ok")
    await decide(gql, people["rob"], "kyc", "ESCALATE", "unclear")
    await decide(gql, people["rita"], "kyc-senior", "APPROVE", "documents_ok")
    await decide(gql, people["olga"], "payouts", "APPROVE", "ok")
    overturn = {"decisionId": approved["decision"]["id"], "reasonCode": "name_mismatch"}
    overturned = await gql(people["ann"], OVERTURN, input=overturn)
    assert overturned["data"]["overturnDecision"]["__typename"] == "DecisionRecorded"
    decisions = []
    for item in items:
        read = await gql(tokens.manager, ITEM_DECISIONS, id=item)
        decisions += read["data"]["item"]["decisions"]
    assert len(decisions) == 7
    assert {d["status"] for d in decisions} == {"EFFECTIVE", "PROVISIONAL", "SUPERSEDED"}
    return History(decisions, people)


async def search(
    gql: GraphQL, token: str, first: int = 50, after: str | None = None, **where: Any
) -> dict[str, Any]:
    body = await gql(token, SEARCH, filter=where, first=first, after=after)
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["decisions"]
    return result


def ids(result: dict[str, Any]) -> list[str]:
    assert result["__typename"] == "DecisionConnection", result
    return [edge["node"]["id"] for edge in result["edges"]]


def mid(history: History, index: int) -> str:
    """The decidedAt of the index-th decision in time, as a filter bound."""
    return sorted(history.decisions, key=key)[index]["decidedAt"]


FILTERS: list[dict[str, Any]] = [
    {},
    {"queues": ["kyc"]},
    {"queues": ["kyc-senior", "payouts"]},
    {"queues": ["nowhere"]},
    {"reviewer": "rita"},
    {"reviewer": "ann"},
    {"reviewer": "nobody"},
    {"verdict": "APPROVE"},
    {"verdict": "REJECT"},
    {"verdict": "ESCALATE"},
    {"reasonCode": "documents_ok"},
    {"reasonCode": "name_mismatch"},
    {"reasonCode": "no_such_code"},
    {"status": "EFFECTIVE"},
    {"status": "PROVISIONAL"},
    {"status": "SUPERSEDED"},
    {"reviewer": "rita", "verdict": "APPROVE"},
    {"reviewer": "rita", "status": "EFFECTIVE"},
    {"reviewer": "rita", "queues": ["kyc-senior"]},
    {"reasonCode": "name_mismatch", "status": "PROVISIONAL"},
    {"verdict": "APPROVE", "queues": ["kyc"], "status": "SUPERSEDED"},
    {"verdict": "REJECT", "status": "EFFECTIVE"},
    {"status": "SUPERSEDED", "reviewer": "rob"},
]


@pytest.mark.parametrize("order", ["NEWEST_FIRST", "OLDEST_FIRST"])
async def test_every_filter_and_combination_answers_exactly_its_decisions(
    gql: GraphQL, tokens: Tokens, history: History, order: str
) -> None:
    newest = order == "NEWEST_FIRST"
    for where in FILTERS:
        found = await search(gql, tokens.manager, order=order, **where)
        assert ids(found) == expected(history, newest, **where), where
        assert found["pageInfo"]["hasNextPage"] is False
    # A decision filter in time: half-open, after <= t < before.
    for low, high in ((1, 5), (0, 7 - 1), (3, 3)):
        where = {"decidedAfter": mid(history, low), "decidedBefore": mid(history, high)}
        found = await search(gql, tokens.manager, order=order, **where)
        assert ids(found) == expected(history, newest, **where), where
        assert len(ids(found)) == high - low
    where = {"decidedAfter": mid(history, 2), "reviewer": "rita"}
    assert ids(await search(gql, tokens.manager, order=order, **where)) == expected(
        history, newest, **where
    )


async def test_the_statuses_are_the_decisions_own(history: History) -> None:
    by_status = {d["status"]: d for d in history.decisions if d["status"] != "EFFECTIVE"}
    assert (by_status["PROVISIONAL"]["verdict"], by_status["PROVISIONAL"]["queue"]) == (
        "REJECT",
        "kyc",
    )
    assert by_status["SUPERSEDED"]["reviewer"] == "rita"


async def test_a_search_reads_only_the_callers_queues(
    gql: GraphQL, tokens: Tokens, history: History
) -> None:
    rob = history.tokens["rob"]  # kyc only
    assert ids(await search(gql, rob)) == expected(history, queues=["kyc"])
    # A queue outside the token matches nothing there: no error, nothing shown.
    assert ids(await search(gql, rob, queues=["payouts", "kyc-senior"])) == []
    assert ids(await search(gql, rob, reviewer="olga")) == []
    olga = history.tokens["olga"]
    assert ids(await search(gql, olga)) == expected(history, queues=["payouts"])
    rita = history.tokens["rita"]  # kyc and kyc-senior
    assert ids(await search(gql, rita, reviewer="rita")) == expected(history, reviewer="rita")
    assert ids(await search(gql, tokens.outsider, queues=["kyc"])) == []


@pytest.mark.parametrize("order", ["NEWEST_FIRST", "OLDEST_FIRST"])
async def test_paging_by_keyset_loses_and_repeats_nothing_while_others_decide(
    gql: GraphQL, tokens: Tokens, history: History, order: str
) -> None:
    """One task pages through kyc's decisions two at a time; after each page another task
    makes a new decision in kyc (each waits for the other's signal, so their requests
    interleave for certain). Newest first, the new decisions are all ahead of the first
    page: the pages hold exactly the decisions there were. Oldest first, each new one comes
    after every page read before it: the pages hold those, then the new ones made before
    the last page was read, each once."""
    newest = order == "NEWEST_FIRST"
    before = expected(history, newest, queues=["kyc"])
    new_items = await enqueue(gql, tokens, "kyc", "n1", "n2", "n3", "n4")
    page_read, decided = asyncio.Event(), asyncio.Event()
    made: list[tuple[str, int]] = []  # each new decision, and how many pages were read before
    pages = 0
    done = False

    async def decider() -> None:
        while True:
            await page_read.wait()
            page_read.clear()
            if done:
                return
            if len(made) < len(new_items):
                result = await decide(gql, history.tokens["rob"], "kyc", "APPROVE", "documents_ok")
                made.append((result["decision"]["id"], pages))
            decided.set()

    async def pager() -> list[str]:
        nonlocal done, pages
        shown: list[str] = []
        after = None
        while True:
            page = await search(
                gql, tokens.manager, first=2, after=after, queues=["kyc"], order=order
            )
            pages += 1
            shown += ids(page)
            if not page["pageInfo"]["hasNextPage"]:
                break
            page_read.set()
            await decided.wait()
            decided.clear()
            after = page["pageInfo"]["endCursor"]
        done = True
        page_read.set()
        return shown

    shown, _ = await asyncio.gather(pager(), decider())

    # A new decision after every page but the last: the requests did interleave.
    assert [read for _, read in made] == list(range(1, pages))
    assert pages >= 3
    if newest:
        assert shown == before
    else:
        assert shown == before + [decision for decision, _ in made]
    # Afterwards, one page holds exactly the old and the new.
    everything = set(before) | {decision for decision, _ in made}
    assert set(ids(await search(gql, tokens.manager, queues=["kyc"]))) == everything


async def test_a_too_broad_page_is_refused_with_the_filters_that_narrow_it(
    gql: GraphQL, tokens: Tokens, history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kyc, newest first: the overturn (EFFECTIVE), the escalation (EFFECTIVE), the
    # overturned approval (SUPERSEDED), the rejection (PROVISIONAL), the approval (EFFECTIVE).
    monkeypatch.setattr(filters, "SCAN_LIMIT", 2)
    where = {"queues": ["kyc"], "status": "EFFECTIVE"}
    effective = expected(history, queues=["kyc"], status="EFFECTIVE")

    # Two rows read, two matches: the first is shown, and the second proves there is more.
    first = await search(gql, tokens.manager, first=1, **where)
    assert ids(first) == effective[:1]
    assert first["pageInfo"]["hasNextPage"] is True
    # The next page reads the second match and a superseded one, and may read no more.
    body = await gql(
        tokens.manager, SEARCH, filter=where, first=1, after=first["pageInfo"]["endCursor"]
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert error["extensions"]["narrowBy"] == [
        "reviewer",
        "reasonCode",
        "decidedAfter",
        "decidedBefore",
        "verdict",
    ]
    assert "more than 2 decisions" in error["message"]
    # Two matches cannot fill a page of two and prove the end: refused too.
    body = await gql(tokens.manager, SEARCH, filter=where, first=2)
    assert body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    # The rejection's own index reads only provisional rows: one, the whole answer.
    provisional = await search(gql, tokens.manager, status="PROVISIONAL", queues=["kyc"])
    assert ids(provisional) == expected(history, status="PROVISIONAL")
    # Spread over every queue, the bound is shared: SCAN_LIMIT 2 over four queues.
    body = await gql(tokens.manager, SEARCH, filter={"status": "EFFECTIVE"}, first=5)
    assert body["errors"][0]["extensions"]["narrowBy"][0] == "queues"


async def test_superseded_decisions_come_in_their_own_order_and_page_by_keyset(
    gql: GraphQL, tokens: Tokens, history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found through the rows that supersede them, which are written later and in another
    order: three more approvals in kyc, overturned last first, list in the approvals' order."""
    await enqueue(gql, tokens, "kyc", "s1", "s2", "s3")
    approved = [
        (await decide(gql, history.tokens["rob"], "kyc", "APPROVE", "documents_ok"))["decision"]
        for _ in range(3)
    ]
    for decision in (approved[2], approved[0], approved[1]):
        overturn = {"decisionId": decision["id"], "reasonCode": "name_mismatch"}
        body = await gql(history.tokens["ann"], OVERTURN, input=overturn)
        assert body["data"]["overturnDecision"]["__typename"] == "DecisionRecorded", body
    # Decided one after another, after the history's one superseded decision.
    superseded = [d["id"] for d in approved[::-1]] + expected(
        history, status="SUPERSEDED", queues=["kyc"]
    )
    assert len(superseded) == 4

    # With a filter on the decisions themselves: rob's approvals, not rita's.
    mine = await search(gql, tokens.manager, status="SUPERSEDED", reviewer="rob", queues=["kyc"])
    assert ids(mine) == superseded[:3]
    # Each queue's walk reads at most two rows, a page is one: every page still comes in
    # order, and together they are the whole answer.
    monkeypatch.setattr(filters, "SCAN_LIMIT", 2)
    for order, wanted in (("NEWEST_FIRST", superseded), ("OLDEST_FIRST", superseded[::-1])):
        seen: list[str] = []
        after = None
        while True:
            page = await search(
                gql,
                tokens.manager,
                first=1,
                after=after,
                status="SUPERSEDED",
                queues=["kyc"],
                order=order,
            )
            seen += ids(page)
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        assert seen == wanted, order


@pytest.mark.parametrize(
    ("where", "field"),
    [
        (
            {"decidedAfter": "2026-10-02T00:00:00Z", "decidedBefore": "2026-10-01T00:00:00Z"},
            "decidedAfter",
        ),
        ({"reviewer": " "}, "reviewer"),
        ({"reasonCode": ""}, "reasonCode"),
        ({"queues": []}, "queues"),
    ],
)
async def test_bad_input_names_its_field(
    gql: GraphQL, tokens: Tokens, kyc: str, where: dict[str, Any], field: str
) -> None:
    found = await search(gql, tokens.manager, **where)
    assert found["__typename"] == "InvalidInput", found
    assert found["field"] == field


async def test_a_cursor_from_another_order_or_list_is_refused(
    gql: GraphQL, tokens: Tokens, history: History
) -> None:
    page = await search(gql, tokens.manager, first=1)
    cursor = page["pageInfo"]["endCursor"]
    # The same cursor goes on in its own order, and is refused in the other.
    assert ids(await search(gql, tokens.manager, first=1, after=cursor)) == expected(history)[1:2]
    for after in (cursor + "x", "bm90IGEgY3Vyc29y", cursor):
        order = "OLDEST_FIRST" if after == cursor else "NEWEST_FIRST"
        found = await search(gql, tokens.manager, first=1, after=after, order=order)
        assert (found["__typename"], found["field"]) == ("InvalidInput", "after"), after
    # A page size outside 1..200 is the client's error.
    body = await gql(tokens.manager, SEARCH, filter={}, first=0)
    assert "first must be between 1 and 200" in body["errors"][0]["message"]


async def test_times_without_a_zone_are_not_guessed(
    gql: GraphQL, tokens: Tokens, history: History
) -> None:
    later = datetime.fromisoformat(mid(history, 6)) + timedelta(days=1)
    where = {"decidedBefore": later.isoformat()}
    assert ids(await search(gql, tokens.manager, **where)) == expected(history, **where)
