"""A PostgreSQL failover under load loses no acknowledged decision (issue 26, section 1).

Two `casework serve` processes reach a Patroni cluster (two PostgreSQL 15 nodes, synchronous
mode) through a multi-host DSN. Reviewers claim and decide over HTTP, an integration follows
`decisionEvents` with its cursor, and the queue's effect posts each decision to a webhook
receiver. Mid-run the primary's postmaster is SIGKILLed (or, in the second run, stopped
`-m immediate`) and Patroni promotes the standby. Then, exactly:

- every decision a reviewer saw acknowledged is in the new primary's log with the same id;
- no item has two verdicts, and every item has one;
- every submission whose answer was lost was resolved by its retry: a replay of the same
  decision, or StaleLease with nothing recorded under that lease;
- the stream delivered every decision once, across its reconnects;
- the receiver saw every decision, keyed by its id, and each is applied once;
- /readyz was 503 while no writable primary answered, and 200 after.

The time from the fault to the first decision acknowledged on a request sent after it is
printed (docs/operations.md records it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from server.domain.identity.tokens import create_token
from server.domain.model import Role, Verdict
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.store.database import Database, create_pool
from server.store.queries import Queries
from tests import pg
from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.api.live_server import Served, casework_serve_process
from tests.apply.helpers import SECRET, webhook
from tests.apply.receiver import Receiver, webhook_receiver
from tests.conftest import ADMIN, INTEGRATION
from tests.ha import postgres
from tests.ha.failover import (
    Console,
    Observed,
    Readiness,
    Reviewer,
    Stream,
    follow_decisions,
    probe_readiness,
    watch_console,
)
from tests.ha.patroni import PatroniCluster, PatroniNode, patroni_cluster
from tests.live.helpers import wait_for_readiness

pytestmark = pytest.mark.ha

QUEUE = "kyc"
# A queue nobody works: a lease taken there after the failover lapses, and only the expiry
# timer can say so (in QUEUE, a reviewer could take the item over first).
SIDE_QUEUE = "kyc-side"
ITEMS = 160
REVIEWERS = 6
# Decisions acknowledged before the fault, so that it lands mid-run.
FAULT_AFTER = 50
# Short, so that the leases of claims whose answers were lost come back soon, and so that
# some retries after the failover find their lease lapsed (StaleLease).
LEASE_TTL_SECONDS = 5
# An attempt whose record was lost with the old primary is tried again once its worker's
# liveness row lapses (migration 0029), or at the latest when its lock does (2 x this + 10 s).
EFFECT_TIMEOUT_SECONDS = 1.0
FAILOVER_WITHIN_SECONDS = 30.0
FINISH_WITHIN_SECONDS = 90.0
POLL_SECONDS = 0.1


async def wait_until(check: Callable[[], Awaitable[bool]], *, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} within {within} s")
        await asyncio.sleep(POLL_SECONDS)


@asynccontextmanager
async def databases(cluster: PatroniCluster) -> AsyncIterator[tuple[Database, Database]]:
    """The owner's and the service role's pools on the multi-host DSN."""
    queries = Queries(pg.QUERIES_DIR)
    # No floor: a pool that keeps one would log each failed attempt to restore it.
    owner = await create_pool(cluster.owner_dsn, min_size=0, max_size=2)
    app = await create_pool(cluster.app_dsn, min_size=0, max_size=2)
    try:
        yield Database(owner, queries), Database(app, queries)
    finally:
        await app.close()
        await owner.close()


@dataclass(frozen=True)
class Tokens:
    integration: str
    reviewers: list[str]
    # A console that watches the queue, and a reviewer who claims and walks away.
    watcher: str
    walker: str


async def prepare(owner: Database, app: Database, receiver: Receiver) -> Tokens:
    """Queue, reason code, effect, items and tokens."""
    configured = await configure_queue(
        app,
        ADMIN,
        QueueSettings(
            QUEUE,
            lease_ttl_seconds=LEASE_TTL_SECONDS,
            max_abandons=100,
            effect=webhook(receiver.url),
            effect_timeout_seconds=EFFECT_TIMEOUT_SECONDS,
            effect_max_attempts=100,
        ),
    )
    assert not hasattr(configured, "message"), configured
    side = await configure_queue(app, ADMIN, QueueSettings(SIDE_QUEUE, lease_ttl_seconds=2))
    assert not hasattr(side, "message"), side
    code = await define_reason_code(
        app, ADMIN, queue=QUEUE, code="documents_ok", label="ok", verdicts=[Verdict.APPROVE]
    )
    assert not hasattr(code, "message"), code
    enqueued = await enqueue_items(
        app, INTEGRATION, QUEUE, [NewItem(f"c-{n}", {"n": n}) for n in range(ITEMS + 1)]
    )
    assert isinstance(enqueued, list), enqueued
    aside = await enqueue_items(app, INTEGRATION, SIDE_QUEUE, [NewItem("aside", {"n": 0})])
    assert isinstance(aside, list), aside
    integration = await create_token(owner, user="kyc-provider", role=Role.INTEGRATION, queues=[])
    reviewers = [
        await create_token(owner, user=f"reviewer-{n}", role=Role.REVIEWER, queues=[QUEUE])
        for n in range(REVIEWERS + 1)
    ]
    walker = await create_token(owner, user="walker", role=Role.REVIEWER, queues=[SIDE_QUEUE])
    return Tokens(integration, reviewers[:REVIEWERS], reviewers[-1], walker)


async def first_decision(client: httpx.AsyncClient, token: str) -> str:
    """One decision before the run: the integration's cursor."""
    headers = {"Authorization": f"Bearer {token}"}
    claim = (
        await client.post(
            "/graphql", json={"query": CLAIM, "variables": {"queue": QUEUE}}, headers=headers
        )
    ).json()["data"]["claimNext"]
    entry = decision_input(claim, "APPROVE", "documents_ok")
    recorded = (
        await client.post(
            "/graphql", json={"query": DECIDE, "variables": {"input": entry}}, headers=headers
        )
    ).json()["data"]["submitDecision"]
    assert recorded["__typename"] == "DecisionRecorded", recorded
    decision_id: str = recorded["decision"]["id"]
    return decision_id


async def fault(cluster: PatroniCluster, primary: PatroniNode, kind: str) -> None:
    if kind == "sigkill":
        cluster.kill_postmaster(primary)
    else:
        await cluster.stop_immediate(primary)


def served_logs(processes: list[Served]) -> str:
    """What each process logged, but for the access lines."""
    return "\n".join(
        f"--- casework serve {p.url}:\n"
        + "".join(line for line in p.log if "casework.access" not in line)[-20000:]
        for p in processes
    )


def tracebacks(processes: list[Served]) -> list[str]:
    """Each traceback the processes logged, from the line before it to its exception."""
    found = []
    for process in processes:
        lines = process.log
        for n, line in enumerate(lines):
            if line.startswith("Traceback"):
                end = n + 1
                while end < len(lines) and lines[end].startswith((" ", "\t")):
                    end += 1
                found.append("".join(lines[max(0, n - 1) : end + 1]))
    return found


@pytest.mark.parametrize("kind", ["sigkill", "stop-immediate"])
async def test_a_failover_loses_no_acknowledged_decision(kind: str) -> None:
    postgres.require("patroni", "etcd")
    began = time.monotonic()
    phases: dict[str, float] = {}
    observed, stream, readiness = Observed(), Stream(), Readiness()
    console, side = Console(), Console()
    async with AsyncExitStack() as stack:
        cluster = await stack.enter_async_context(patroni_cluster())
        receiver = await stack.enter_async_context(webhook_receiver(SECRET))
        owner, app = await stack.enter_async_context(databases(cluster))
        checks = await stack.enter_async_context(
            contextlib.aclosing(OwnerChecks(cluster.owner_dsn))
        )
        tokens = await prepare(owner, app, receiver)
        env = {
            **os.environ,
            "DATABASE_URL": cluster.owner_dsn,
            "CASEWORK_APPLY_BACKOFF_SECONDS": "0.05",
        }
        served = list(
            await asyncio.gather(
                *(stack.enter_async_context(casework_serve_process(env)) for _ in range(2))
            )
        )
        clients = [
            await stack.enter_async_context(httpx.AsyncClient(base_url=s.url, timeout=10))
            for s in served
        ]
        cursor = await first_decision(clients[0], tokens.reviewers[0])
        phases["ready"] = time.monotonic() - began

        stop, console_started, side_started = asyncio.Event(), asyncio.Event(), asyncio.Event()
        background = [
            asyncio.create_task(
                follow_decisions(
                    [s.url for s in served], tokens.integration, QUEUE, cursor, stream, stop
                )
            ),
            asyncio.create_task(probe_readiness(clients, readiness, stop)),
            asyncio.create_task(
                watch_console(served[1].url, tokens.watcher, QUEUE, console, console_started, stop)
            ),
            asyncio.create_task(
                watch_console(served[0].url, tokens.walker, SIDE_QUEUE, side, side_started, stop)
            ),
        ]
        reviewing = asyncio.gather(
            *(
                Reviewer(
                    f"reviewer-{n}", token, clients[n % 2 :] + clients[: n % 2], observed, QUEUE
                ).run(checks.finished)
                for n, token in enumerate(tokens.reviewers)
            )
        )
        try:
            await asyncio.wait_for(console_started.wait(), 30)
            await asyncio.wait_for(side_started.wait(), 30)

            async def mid_run() -> bool:
                assert not reviewing.done() or reviewing.exception() is None
                return len(observed.acknowledged) >= FAULT_AFTER

            await wait_until(mid_run, within=60, what=f"{FAULT_AFTER} decisions before the fault")
            primary = await cluster.leader(within=5)
            faulted_at = time.monotonic()
            phases["fault"] = faulted_at - began
            await fault(cluster, primary, kind)
            promoted = await cluster.leader(within=FAILOVER_WITHIN_SECONDS, exclude=primary)
            promoted_after = time.monotonic() - faulted_at

            # The expiry timer, back: a lease taken after the failover and left to lapse is
            # announced as EXPIRED on the console (which learnt of the claim by a hint).
            walker = Reviewer("walker", tokens.walker, clients, observed, SIDE_QUEUE)
            abandoned = await walker.walk_away_with_a_claim()

            async def expired() -> bool:
                return any(
                    event["kind"] == "EXPIRED" and event["itemId"] == abandoned
                    for event in side.lease_events_after(faulted_at)
                )

            await wait_until(expired, within=LEASE_TTL_SECONDS + 20, what="the lapse announced")

            await asyncio.wait_for(reviewing, FINISH_WITHIN_SECONDS)
            phases["decided"] = time.monotonic() - began
            first = observed.first_success_after(faulted_at)
            assert first is not None, "no decision acknowledged after the fault"
            recovered_after = first.answered_at - faulted_at

            log = await cluster_log(cluster, promoted)
            expected = {row["id"] for row in log} - {cursor}

            async def applied() -> bool:
                return await checks.applied() == len(log)

            await wait_until(applied, within=FINISH_WITHIN_SECONDS, what="every decision applied")
            phases["applied"] = time.monotonic() - began

            async def streamed() -> bool:
                return set(stream.received) >= expected

            await wait_until(streamed, within=30, what="every decision streamed")
            for client in clients:
                await wait_for_readiness(client, 200, within=30)
            health = [(await client.get("/healthz")).json() for client in clients]
            applied_rows = await checks.applied_ids()
            phases["checked"] = time.monotonic() - began
        except BaseException:
            print(cluster.describe_logs())
            print(served_logs(served))
            print("console:", console.ended, console.lease_events[-30:], console.backlogs[-5:])
            print("side console:", side.ended, side.lease_events)
            print("stream:", stream.endings, len(stream.received))
            raise
        finally:
            stop.set()
            reviewing.cancel()
            await asyncio.gather(*background, return_exceptions=True)

    lost = [s for s in observed.submissions if s.losses]
    print(
        f"\n{kind}: {primary.name} -> {promoted.name}; promoted after {promoted_after:.2f} s; "
        f"first decision acknowledged {recovered_after:.2f} s after the fault; "
        f"{len(observed.submissions)} submissions, {len(lost)} with lost answers "
        f"({dict(Counter(s.answer + (' replay' if s.replay else '') for s in lost))}), "
        f"{len(observed.lost_claims)} lost claims; stream reconnects {len(stream.endings)}; "
        f"webhook requests {len(receiver.requests)} for {len(log)} decisions; "
        + ", ".join(f"{name} at {at:.1f} s" for name, at in phases.items())
    )
    check_log(log, observed, ITEMS + 1)
    # The stream: every decision once, across reconnects.
    assert len(stream.received) == len(set(stream.received)), "a decision was streamed twice"
    assert set(stream.received) == expected
    # The receiver, keyed by decision id: each decision applied, and once.
    assert receiver.keys == {row["id"] for row in log}
    assert receiver.bad_signatures == []
    assert sorted(applied_rows) == sorted(row["id"] for row in log)
    # /readyz: 503 while no writable primary answered, 200 again after.
    for client in clients:
        statuses = readiness.after(str(client.base_url), faulted_at)
        assert 503 in statuses, (str(client.base_url), statuses)
        assert statuses[-1] == 200, (str(client.base_url), statuses)
    # Each listener reconnected (to the new primary: LISTEN fails on a standby), and the
    # console kept its socket and was resynced.
    for body in health:
        assert body["listener"]["connected"] is True, body
        assert body["listener"]["reconnects"] >= 1, body
    assert (console.ended, side.ended) == ([], [])
    assert any(figure["resync"] for figure in console.backlogs_after(faulted_at))
    assert any(event["kind"] == "RESYNC" for event in console.lease_events_after(faulted_at))
    # No client saw anything but UNAVAILABLE for the outage, and no process logged a
    # traceback for it.
    found = tracebacks(served)
    assert (observed.unexpected, found) == ([], []), "\n".join(observed.unexpected + found)


class OwnerChecks:
    """The test's own reads, as the owner, through the multi-host DSN: None while no node
    answers (mid-failover)."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._pool: asyncpg.Pool | None = None

    async def _value(self, query: str) -> Any:
        try:
            if self._pool is None:
                self._pool = await asyncpg.create_pool(self._dsn, min_size=0, max_size=2)
            return await self._pool.fetchval(query)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            return None

    async def finished(self) -> bool:
        """Every item decided: the reviewers stop."""
        pending: int | None = await self._value(
            f"SELECT count(*) FROM review_items WHERE state = 'pending' AND queue = '{QUEUE}'"
        )
        return pending == 0

    async def applied(self) -> int | None:
        count: int | None = await self._value("SELECT count(*) FROM applied_decisions")
        return count

    async def applied_ids(self) -> list[str]:
        ids: list[str] = await self._value(
            "SELECT coalesce(array_agg(decision_id::text), '{}') FROM applied_decisions"
        )
        return ids

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()


async def cluster_log(cluster: PatroniCluster, primary: PatroniNode) -> list[dict[str, str]]:
    """The decisions of the queue as the new primary has them (directly, not via the DSN)."""
    conn = await asyncpg.connect(cluster.node_dsn(primary))
    try:
        assert await conn.fetchval("SELECT NOT pg_is_in_recovery()")
        rows = await conn.fetch(
            "SELECT id::text, item_id::text, lease_token::text FROM review_decisions"
            " WHERE queue = $1 ORDER BY id",
            QUEUE,
        )
    finally:
        await conn.close()
    return [dict(row) for row in rows]


def check_log(log: list[dict[str, str]], observed: Observed, items: int) -> None:
    by_id = {row["id"]: row for row in log}
    # One verdict per item, and every item decided.
    per_item = Counter(row["item_id"] for row in log)
    assert [item for item, count in per_item.items() if count > 1] == []
    assert len(per_item) == items
    for submission in observed.submissions:
        if submission.answer == "DecisionRecorded":
            # Acknowledged (first time or as a replay): in the log, same id, same lease.
            row = by_id.get(submission.decision_id or "")
            assert row is not None, f"acknowledged but not in the new primary: {submission}"
            assert (row["item_id"], row["lease_token"]) == (
                submission.item_id,
                submission.lease_token,
            ), submission
        else:
            # StaleLease: nothing is recorded under that lease.
            assert submission.answer == "StaleLease", submission
            assert submission.decided_under_this_lease is False, submission
            recorded = [row for row in log if row["lease_token"] == submission.lease_token]
            assert recorded == [], submission
