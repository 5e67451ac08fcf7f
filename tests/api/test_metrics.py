"""/metrics: after a scripted run (N decisions, M stale refusals, one failed application) the
counters, histograms and database figures say exactly that, read with prometheus-client's
own parser; access needs a manager or admin token; labels never take a client's input;
the database figures are one snapshot shared by every process for a few seconds.

Counters are per process and a test process serves many tests, so counters are compared
as differences between a scrape before and a scrape after; database figures are absolute
(each test has its own database).
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from server.config import Settings
from server.domain.model import EffectKind, Role, Verdict
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.queues import Effect, QueueSettings, configure_queue, define_reason_code
from server.signatures import new_secret
from server.store.database import Database
from tests.api.conftest import SETUP_QUEUES, Tokens, graphql_caller, in_process_client
from tests.api.helpers import decision_input
from tests.conftest import ADMIN, INTEGRATION, TestDatabase, token_maker

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

CLAIM = """mutation($q: String!) { claimNext(queue: $q) { __typename
  ... on Claim { leaseToken evidenceHash item { id } } } }"""
DECIDE = """mutation($i: SubmitDecisionInput!) { submitDecision(input: $i) { __typename } }"""
APPLIED_WITHIN_SECONDS = 30.0
# The failing queue's webhook points outside the allow-list the app runs with: the worker
# refuses to send it, a permanent failure on the first attempt.
ALLOWED_HOST = "receiver.example"
REFUSED_TARGET = "http://elsewhere.example/hook"


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def grown(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def app_settings(**changes: Any) -> Settings:
    """The environment's settings with in-process events, and `changes`."""
    return replace(Settings.from_env(), events_transport="memory", **changes)


def serving(
    test_database: TestDatabase, settings: Settings, *, run_worker: bool = False
) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    return in_process_client(test_database, dev=False, settings=settings, run_worker=run_worker)


async def scrape(client: httpx.AsyncClient, token: str) -> Samples:
    response = await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return parse(response.text)


async def enqueue(db: Database, queue: str, count: int) -> None:
    items = [NewItem(f"{queue}-{n}", {"n": n}, 0) for n in range(count)]
    result = await enqueue_items(db, INTEGRATION, queue, items)
    assert isinstance(result, list), result


async def failing_queue(db: Database) -> str:
    queue = await configure_queue(
        db,
        ADMIN,
        QueueSettings("payouts", effect=Effect(EffectKind.WEBHOOK, REFUSED_TARGET, new_secret())),
    )
    assert not hasattr(queue, "message"), queue
    code = await define_reason_code(
        db, ADMIN, queue="payouts", code="documents_ok", label="ok", verdicts=[Verdict.APPROVE]
    )
    assert not hasattr(code, "message"), code
    return "payouts"


async def test_a_scripted_run_is_counted_exactly(
    test_database: TestDatabase, db: Database, owner_db: Database, tokens: Tokens
) -> None:
    settings = app_settings(metrics_cache_seconds=0, effect_allowed_hosts=frozenset({ALLOWED_HOST}))
    payouts = await failing_queue(db)
    reviewer = await token_maker(owner_db)("pia", Role.REVIEWER, "kyc", payouts)
    async with serving(test_database, settings, run_worker=True) as client:
        gql = graphql_caller(client)
        assert "errors" not in await gql(tokens.admin, SETUP_QUEUES)
        await enqueue(db, "kyc", 5)
        await enqueue(db, payouts, 1)
        before = await scrape(client, tokens.manager)

        async def decide(queue: str, *, lease_token: str | None = None) -> str:
            claim = (await gql(reviewer, CLAIM, q=queue))["data"]["claimNext"]
            answer = await gql(
                reviewer,
                DECIDE,
                i={
                    **decision_input(claim, "APPROVE", "documents_ok"),
                    "leaseToken": lease_token or claim["leaseToken"],
                },
            )
            typename: str = answer["data"]["submitDecision"]["__typename"]
            return typename

        # N = 4 decisions: three in kyc, one in payouts whose effect fails for good.
        assert [await decide("kyc") for _ in range(3)] == ["DecisionRecorded"] * 3
        assert await decide(payouts) == "DecisionRecorded"
        # M = 2 stale refusals: a claimed item decided under a lease token that is not its own.
        assert [await decide("kyc", lease_token=str(uuid.uuid4())) for _ in range(2)] == [
            "StaleLease"
        ] * 2

        after = before
        for _ in range(int(APPLIED_WITHIN_SECONDS / 0.05)):
            after = await scrape(client, tokens.manager)
            done = grown(before, after, "casework_apply_attempts_total", outcome="applied")
            failed = grown(before, after, "casework_apply_attempts_total", outcome="failed")
            # The database figures are a snapshot up to a few seconds old: wait until one
            # taken after both queues' last writes, as a scraper would see it next.
            unapplied = [
                value(after, "casework_decisions_unapplied", queue=queue)
                for queue in ("kyc", payouts)
            ]
            if (done, failed) == (3, 1) and unapplied == [0, 0]:
                break
            await asyncio.sleep(0.05)

    assert grown(before, after, "casework_decisions_total", queue="kyc", verdict="approve") == 3
    assert grown(before, after, "casework_decisions_total", queue=payouts, verdict="approve") == 1
    assert grown(before, after, "casework_stale_lease_refusals_total", queue="kyc") == 2
    assert grown(before, after, "casework_apply_attempts_total", outcome="applied") == 3
    assert grown(before, after, "casework_apply_attempts_total", outcome="failed") == 1
    assert grown(before, after, "casework_apply_attempts_total", outcome="retried") == 0
    # Every item was decided under its first lease.
    assert grown(before, after, "casework_lease_count_at_decision_count") == 4
    assert grown(before, after, "casework_lease_count_at_decision_bucket", le="1.0") == 4
    assert grown(before, after, "casework_decision_handling_seconds_count", queue="kyc") == 3
    assert grown(before, after, "casework_decision_handling_seconds_count", queue=payouts) == 1
    operation = {"type": "mutation", "field": "submitDecision"}
    assert grown(before, after, "casework_graphql_operation_seconds_count", **operation) == 6
    claims = {"type": "mutation", "field": "claimNext"}
    assert grown(before, after, "casework_graphql_operation_seconds_count", **claims) == 6

    # The database figures: five kyc items, three decided, two claimed (the stale
    # refusals' leases are live); the payouts decision failed for good.
    assert value(after, "casework_queue_pending", queue="kyc") == 0
    assert value(after, "casework_queue_leased", queue="kyc") == 2
    assert value(after, "casework_queue_pending", queue=payouts) == 0
    assert value(after, "casework_decisions_unapplied", queue="kyc") == 0
    assert value(after, "casework_decisions_unapplied", queue=payouts) == 0
    assert value(after, "casework_applications_failed", queue=payouts) == 1
    assert value(after, "casework_applications_failed", queue="kyc") == 0
    # Configured queues are listed with zeros, not left out.
    assert ("casework_queue_pending", frozenset({("queue", "kyc-senior")})) in after


async def test_waiting_items_and_unapplied_decisions_are_figures(
    test_database: TestDatabase, db: Database, tokens: Tokens, owner_db: Database
) -> None:
    settings = app_settings(metrics_cache_seconds=0, metrics_unapplied_threshold_seconds=0)
    reviewer = await token_maker(owner_db)("pia", Role.REVIEWER, "kyc")
    # No worker: recorded decisions stay unapplied.
    async with serving(test_database, settings) as client:
        gql = graphql_caller(client)
        assert "errors" not in await gql(tokens.admin, SETUP_QUEUES)
        await enqueue(db, "kyc", 4)
        claim = (await gql(reviewer, CLAIM, q="kyc"))["data"]["claimNext"]
        decided = await gql(
            reviewer,
            DECIDE,
            i=decision_input(claim, "APPROVE", "documents_ok"),
        )
        assert decided["data"]["submitDecision"]["__typename"] == "DecisionRecorded"
        await gql(reviewer, CLAIM, q="kyc")
        samples = await scrape(client, tokens.admin)
    assert value(samples, "casework_queue_pending", queue="kyc") == 2
    assert value(samples, "casework_queue_leased", queue="kyc") == 1
    assert value(samples, "casework_queue_oldest_pending_age_seconds", queue="kyc") > 0
    assert value(samples, "casework_decisions_unapplied", queue="kyc") == 1
    assert value(samples, "casework_decisions_unapplied_older_than_threshold", queue="kyc") == 1
    assert value(samples, "casework_queue_oldest_pending_age_seconds", queue="kyc-senior") == 0


async def test_the_figures_are_one_snapshot_for_every_process(
    test_database: TestDatabase, db: Database, tokens: Tokens
) -> None:
    """Two apps on one database stand for two processes: within the cache window, the
    second one's scrape answers with the snapshot the first one computed."""
    settings = app_settings(metrics_cache_seconds=3600)
    async with (
        serving(test_database, settings) as first,
        serving(test_database, settings) as second,
    ):
        assert "errors" not in await graphql_caller(first)(tokens.admin, SETUP_QUEUES)
        await enqueue(db, "kyc", 2)
        computed = await scrape(first, tokens.manager)
        await enqueue(db, "kyc-senior", 3)
        shared = await scrape(second, tokens.manager)
    assert value(computed, "casework_queue_pending", queue="kyc") == 2
    assert value(shared, "casework_queue_pending", queue="kyc") == 2
    # Enqueued after the snapshot: not in it.
    assert value(shared, "casework_queue_pending", queue="kyc-senior") == 0
    fresh = replace(settings, metrics_cache_seconds=0)
    async with serving(test_database, fresh) as third:
        recomputed = await scrape(third, tokens.manager)
    assert value(recomputed, "casework_queue_pending", queue="kyc-senior") == 3


async def test_only_manager_and_admin_tokens_for_all_queues_may_scrape(
    test_database: TestDatabase, owner_db: Database, tokens: Tokens
) -> None:
    scoped_manager = await token_maker(owner_db)("mia", Role.MANAGER, "kyc")
    settings = app_settings()
    async with serving(test_database, settings) as client:
        anonymous = await client.get("/metrics")
        answers = {
            name: (
                await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
            ).status_code
            for name, token in (
                ("manager", tokens.manager),
                ("admin", tokens.admin),
                ("reviewer", tokens.reviewer),
                ("integration", tokens.integration),
                ("scoped manager", scoped_manager),
                ("unknown", "not-a-token"),
            )
        }
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert anonymous.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert answers == {
        "manager": 200,
        "admin": 200,
        "reviewer": 403,
        "integration": 403,
        "scoped manager": 403,
        "unknown": 401,
    }
    public = replace(settings, metrics_public=True)
    async with serving(test_database, public) as client:
        response = await client.get("/metrics")
    assert response.status_code == 200
    assert "casework_decisions_total" in response.text or "casework_decisions " in response.text


async def test_labels_never_take_a_clients_input(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    """An unknown queue, a made-up operation name and a field the schema lacks appear in no
    label: queues come from the catalogue, fields from the schema."""
    settings = app_settings(metrics_cache_seconds=0)
    marker = "zz-client-chosen"
    async with serving(test_database, settings) as client:
        gql = graphql_caller(client)
        assert "errors" not in await gql(tokens.admin, SETUP_QUEUES)
        await gql(
            tokens.reviewer,
            f"mutation {marker.replace('-', '_')} {{ claimNext(queue: "
            f'"{marker}") {{ __typename }} }}',
        )
        await client.post(
            "/graphql",
            json={"query": f"{{ {marker.replace('-', '_')} }}"},
            headers={"Authorization": f"Bearer {tokens.reviewer}"},
        )
        text = (
            await client.get("/metrics", headers={"Authorization": f"Bearer {tokens.manager}"})
        ).text
    assert marker not in text
    assert marker.replace("-", "_") not in text
    labels: set[str] = {f"{key}={label}" for (_, pairs) in parse(text) for key, label in pairs}
    assert all(marker not in label for label in labels)


def test_metric_names_are_the_contract() -> None:
    """Every name the issue lists is exposed by this process (the database figures by a
    scrape, tested above)."""
    from prometheus_client import REGISTRY, generate_latest

    names = {
        family.name for family in text_string_to_metric_families(generate_latest(REGISTRY).decode())
    }
    assert {
        "casework_decisions",
        "casework_stale_lease_refusals",
        "casework_lease_count_at_decision",
        "casework_decision_handling_seconds",
        "casework_apply_attempts",
        "casework_graphql_operation_seconds",
        "casework_websocket_connections",
        "casework_subscriptions",
        "casework_listener_connected",
        "casework_listener_reconnects",
    } <= names, names
