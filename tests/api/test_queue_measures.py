"""Queue.measures through GraphQL: the capacity example, who sees which figures, and a
dashboard of many queues at a constant number of round trips."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from server.domain.model import Role
from server.store import sql
from server.store.database import Database
from server.store.queries import Query
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, decision_input, enqueue
from tests.conftest import token_maker

MEASURES = """
query($queue: String!, $since: Int!) {
  queue(name: $queue) {
    measures(sinceSeconds: $since) {
      arrivals decided backlog
      handlingSeconds { samples p50 }
      reviewers { reviewer decided handlingSeconds { samples } }
      capacity {
        arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog backlogMinutesPerDay
        availableMinutesPerDay headroomMinutesPerDay enough
      }
    }
  }
}
"""
DAY = 86400


async def decide_one(
    gql: GraphQL, token: str, owner_conn: asyncpg.Connection, handling_seconds: float = 0
) -> None:
    """Claims and approves the next kyc item; its lease began `handling_seconds` ago."""
    claim = (await gql(token, CLAIM, queue="kyc"))["data"]["claimNext"]
    assert claim["__typename"] == "Claim", claim
    if handling_seconds:
        await owner_conn.execute(
            "UPDATE review_items SET lease_started_at = now() - make_interval(secs => $2) "
            "WHERE id = $1",
            int(claim["item"]["id"]),
            handling_seconds,
        )
    decided = await gql(token, DECIDE, input=decision_input(claim, "APPROVE", "documents_ok"))
    assert decided["data"]["submitDecision"]["__typename"] == "DecisionRecorded", decided


async def measures(gql: GraphQL, token: str, since: int = DAY) -> dict[str, Any]:
    body = await gql(token, MEASURES, queue="kyc", since=since)
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]["queue"]["measures"]
    return found


async def test_the_worked_example_through_the_queue_setting(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    # 24 arrivals in a day; 9 decided at 8 minutes each, so 15 wait; 240 minutes available.
    configured = await gql(
        tokens.admin,
        'mutation { configureQueue(input: {name: "kyc", reviewerMinutesPerDay: 240}) '
        "{ __typename ... on QueueConfigured { queue { reviewerMinutesPerDay } } } }",
    )
    assert configured["data"]["configureQueue"]["queue"]["reviewerMinutesPerDay"] == 240
    await enqueue(gql, tokens, *(f"cust-{n}" for n in range(24)))
    for _ in range(9):
        await decide_one(gql, tokens.reviewer, owner_conn, handling_seconds=8 * 60)

    found = await measures(gql, tokens.manager)

    assert (found["arrivals"], found["decided"], found["backlog"]) == (24, 9, 15)
    figures = found["capacity"]
    # The decision's own clock runs a few milliseconds past the moved lease start.
    close = pytest.approx
    assert figures["arrivalsPerDay"] == 24
    assert figures["handlingMinutesMean"] == close(8, abs=0.01)
    assert figures["demandMinutesPerDay"] == close(192, abs=0.3)
    assert figures["backlog"] == 15
    assert figures["backlogMinutesPerDay"] == close(24, abs=0.05)
    assert figures["availableMinutesPerDay"] == 240
    assert figures["headroomMinutesPerDay"] == close(24, abs=0.35)
    assert figures["enough"] is True


async def test_the_argument_overrides_the_setting_and_bad_ones_are_refused(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    await enqueue(gql, tokens, "cust-1")
    await decide_one(gql, tokens.reviewer, owner_conn, handling_seconds=600)
    query = """
    query($days: Int!, $minutes: Float) { queue(name: "kyc") { measures {
      capacity(availableReviewerMinutesPerDay: $minutes, clearBacklogInDays: $days) {
        availableMinutesPerDay enough } } } }
    """

    given = await gql(tokens.manager, query, days=5, minutes=10.0)
    unset = await gql(tokens.manager, query, days=5, minutes=None)
    refused = await gql(tokens.manager, query, days=0, minutes=None)

    assert given["data"]["queue"]["measures"]["capacity"] == {
        "availableMinutesPerDay": 10.0,
        "enough": True,
    }
    # No setting and no argument: the available minutes, and so the verdict, are unknown.
    assert unset["data"]["queue"]["measures"]["capacity"] == {
        "availableMinutesPerDay": None,
        "enough": None,
    }
    assert refused["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "clearBacklogInDays" in refused["errors"][0]["message"]


async def test_a_reviewer_sees_its_own_row_and_its_own_work(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_conn: asyncpg.Connection
) -> None:
    await enqueue(gql, tokens, "cust-1", "cust-2", "cust-3", "cust-4")
    await decide_one(gql, tokens.reviewer, owner_conn, handling_seconds=60)
    await decide_one(gql, tokens.other_reviewer, owner_conn, handling_seconds=120)
    await decide_one(gql, tokens.other_reviewer, owner_conn, handling_seconds=180)

    manager = await measures(gql, tokens.manager)
    rita = await measures(gql, tokens.reviewer)

    assert [(r["reviewer"], r["decided"]) for r in manager["reviewers"]] == [
        ("rob", 2),
        ("rita", 1),
    ]
    assert manager["decided"] == 3
    assert [(r["reviewer"], r["decided"]) for r in rita["reviewers"]] == [("rita", 1)]
    # Decisions and their times are the reviewer's own; what waits belongs to nobody.
    assert (rita["decided"], rita["handlingSeconds"]["samples"]) == (1, 1)
    assert (rita["arrivals"], rita["backlog"]) == (4, 1)


async def test_a_scoped_manager_sees_its_queue_only_and_integrations_none(
    gql: GraphQL, tokens: Tokens, kyc: str, owner_db: Database
) -> None:
    scoped = await token_maker(owner_db)("mia", Role.MANAGER, "kyc")
    listing = "{ queues { name measures { decided } } }"
    senior = '{ queue(name: "kyc-senior") { measures { decided } } }'

    mine = await gql(scoped, listing)
    other = await gql(scoped, senior)
    everything = await gql(tokens.manager, listing)
    refused = await gql(tokens.integration, '{ queue(name: "kyc") { measures { decided } } }')

    assert mine["data"]["queues"] == [{"name": "kyc", "measures": {"decided": 0}}]
    assert other == {"data": {"queue": None}}
    assert {q["name"] for q in everything["data"]["queues"]} >= {"kyc", "kyc-senior"}
    assert refused["data"] == {"queue": None}
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"


# --- a dashboard of many queues --------------------------------------------------------

DASHBOARD = """
{
  queues {
    name
    stats { pending leased oldestPendingAgeSeconds unappliedDecisions failedApplications }
    measures {
      arrivals decided escalated overturned backlog lapsedLeaseShare
      leaseCountAtDecision { leaseCount items }
      leaseCountPending { leaseCount items }
      handlingSeconds { samples p50 p90 p99 max }
      timeToDecisionSeconds { samples p50 p99 }
      recommendedLeaseTtlSeconds leaseTtlAdvice
      reasons { code verdict count share }
      reviewers { reviewer decided overturned lapsedLeases handlingSeconds { p50 p99 } }
      capacity(availableReviewerMinutesPerDay: 480) {
        arrivalsPerDay demandMinutesPerDay backlogMinutesPerDay headroomMinutesPerDay enough
      }
      quality {
        decided sampled checked agreementRate overturnRate
        byReasonCode { key decided agreementRate }
        byReviewer { key decided sampled checked agreed overturned }
      }
    }
    items(first: 20) {
      edges { node { id state decisions { id verdict reviewer sampledForQa qaResult { agrees } } } }
    }
  }
}
"""

SEED_QUEUES = """
WITH queues AS (
    INSERT INTO queues (name) SELECT 'dash-' || n FROM generate_series($1::int, $2::int) AS n
    RETURNING name
),
codes AS (
    INSERT INTO reason_codes (queue, code, label, verdicts)
    SELECT q.name, 'ok', 'ok', ARRAY['approve'] FROM queues AS q
),
items AS (
    INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash,
                              state, decided_at, lease_count, lease_started_at)
    SELECT q.name, q.name, 'item-' || k, '{}', repeat('0', 64),
           CASE WHEN k <= 3 THEN 'decided' ELSE 'pending' END,
           CASE WHEN k <= 3 THEN now() END, 1, now() - interval '2 minutes'
    FROM queues AS q, generate_series(1, 5) AS k
    RETURNING id, queue, state, evidence_hash, lease_started_at
)
INSERT INTO review_decisions (item_id, queue, verdict, outcome, reason_code, reviewer,
                              reviewer_role, evidence_hash, lease_token, lease_started_at,
                              lease_count)
SELECT i.id, i.queue, 'approve', 'approve', 'ok', 'rev-' || (i.id % 3), 'reviewer',
       i.evidence_hash, gen_random_uuid(), i.lease_started_at, 1
FROM items AS i
WHERE i.state = 'decided'
"""


CREDENTIAL_LOOKUPS: tuple[Query[...], ...] = (
    sql.tokens.TOKEN_GET_ACTIVE,
    sql.identity.AUTHENTICATION_RECORD,
)


async def statements_sent(
    gql: GraphQL, token: str, document: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], list[str]]:
    """The answer, and the statements sent while it resolved (the bearer token's lookup and
    the record of how it authenticated, cached for a few seconds, are not the document's)."""
    calls: list[str] = []
    with monkeypatch.context() as patch:
        for method in ("fetch", "fetchrow"):
            original = getattr(Database, method)

            def counting(original: Any = original) -> Any:
                async def call(self: Database, query: Query[...], **kwargs: Any) -> Any:
                    if query not in CREDENTIAL_LOOKUPS:
                        calls.append(query.name)
                    return await original(self, query, **kwargs)

                return call

            patch.setattr(Database, method, counting())
        body = await gql(token, document)
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data, calls


async def dashboard_round_trips(
    gql: GraphQL, token: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, dict[str, Any], list[str]]:
    data, calls = await statements_sent(gql, token, DASHBOARD, monkeypatch)
    return len(calls), data, calls


async def test_a_dashboard_of_50_queues_costs_what_5_cost(
    gql: GraphQL,
    tokens: Tokens,
    owner_conn: asyncpg.Connection,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await owner_conn.execute(SEED_QUEUES, 1, 5)
    few, small, small_calls = await dashboard_round_trips(gql, tokens.manager, monkeypatch)
    await owner_conn.execute(SEED_QUEUES, 6, 50)
    many, large, calls = await dashboard_round_trips(gql, tokens.manager, monkeypatch)

    dashboards = [q for q in large["queues"] if q["name"].startswith("dash-")]
    assert len([q for q in small["queues"] if q["name"].startswith("dash-")]) == 5
    assert len(dashboards) == 50
    for queue in dashboards:
        assert queue["measures"]["decided"] == 3
        assert queue["measures"]["backlog"] == 2
        assert queue["stats"]["pending"] == 2
        assert len(queue["items"]["edges"]) == 5
    # queues, backlog, application lag, items, their decisions, their QA checks, and five
    # measure statements (summary, lease counts, reasons, reviewers, quality), however many
    # queues.
    assert (few, many) == (11, 11), (small_calls, calls)
    for queue in dashboards:
        assert queue["measures"]["quality"]["decided"] == 3


# --- what a measures selection reads ---------------------------------------------------

SUMMARY, LEASE_COUNTS, REASONS, REVIEWERS, QUALITY = (
    "queue_measures_summary",
    "queue_measures_lease_counts",
    "queue_measures_reasons",
    "queue_measures_reviewers",
    "queue_measures_quality",
)
FIGURES = """
fragment figures on QueueMeasures {
  decided capacity(availableReviewerMinutesPerDay: 60) { enough }
}
"""


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ("sinceSeconds __typename", []),
        ("reasons { code count }", [REASONS]),
        ("r: reviewers { reviewer }", [REVIEWERS]),
        ("... on QueueMeasures { leaseCountPending { items } }", [LEASE_COUNTS]),
        ("...figures", [SUMMARY]),
        ("leaseTtlAdvice ... { reasons { code } } ...figures", [SUMMARY, REASONS]),
        ("quality { agreementRate byReviewer { key } }", [QUALITY]),
    ],
)
async def test_measures_read_the_figures_their_selection_shows(
    gql: GraphQL,
    tokens: Tokens,
    kyc: str,
    owner_conn: asyncpg.Connection,
    monkeypatch: pytest.MonkeyPatch,
    selection: str,
    expected: list[str],
) -> None:
    """A group of figures is read, once, when a field of it is selected under any alias or
    fragment, and only then."""
    await enqueue(gql, tokens, "cust-1", "cust-2")
    await decide_one(gql, tokens.reviewer, owner_conn)
    document = '{ queue(name: "kyc") { measures { ' + selection + " } } }"
    if "...figures" in selection:
        document += FIGURES
    data, calls = await statements_sent(gql, tokens.manager, document, monkeypatch)
    assert sorted(c for c in calls if c.startswith("queue_measures_")) == sorted(expected)
    assert data["queue"]["measures"]
