"""Reads that may lag go to a real streaming replica (tests/ha/replica.py); everything a
fence, a claim, a decision or a reviewer's own item depends on reads the primary; the
replica is left when it stops or falls behind CASEWORK_READ_MAX_LAG_SECONDS, and read again
when it is back (server/store/routing.py, server/store/replica_lag.py)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import asyncpg
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server.app import create_app
from server.config import Settings
from server.domain.model import Role
from server.store.database import Database, create_pool
from server.store.queries import Queries
from server.store.routing import replica_for_export
from tests.conftest import token_maker
from tests.ha.postgres import require
from tests.ha.replica import ReplicaPair, started_pair
from tests.pg import QUERIES_DIR

pytestmark = [
    pytest.mark.ha,
    pytest.mark.xdist_group("ha_replica"),
]

SETUP = """
mutation($name: String!) {
  q: configureQueue(input: {name: $name}) { __typename }
  ok: defineReasonCode(input: {queue: $name, code: "documents_ok", label: "Documents match",
                               verdicts: [APPROVE]}) { __typename }
}
"""
ENQUEUE = """
mutation($queue: String!, $items: [NewItemInput!]!) {
  enqueueItems(queue: $queue, items: $items) { __typename }
}
"""
CLAIM = """
mutation($queue: String!) {
  claimNext(queue: $queue) { __typename ... on Claim { item { id state } } }
}
"""
DASHBOARD = """
query($queue: String!) {
  queue(name: $queue) { name measures(sinceSeconds: 3600) { arrivals backlog } }
}
"""
ITEM = "query($id: ID!) { item(id: $id) { id state } }"


@pytest.fixture(scope="module")
async def pair() -> AsyncIterator[ReplicaPair]:
    # Skipped where PostgreSQL 15 is not installed; under CI, which installs it, a failure.
    require()
    async with started_pair() as running:
        yield running


@pytest.fixture(scope="module")
async def owner(pair: ReplicaPair) -> AsyncIterator[Database]:
    pool = await create_pool(pair.primary.owner_dsn, min_size=1, max_size=2)
    try:
        yield Database(pool, Queries(QUERIES_DIR))
    finally:
        await pool.close()


@pytest.fixture
async def tokens(owner: Database) -> dict[Role, str]:
    """A token per role; the reviewer's covers QUEUE, the queue the test makes."""
    make = token_maker(owner)
    return {
        Role.ADMIN: await make("ada", Role.ADMIN),
        Role.INTEGRATION: await make("kyc-provider", Role.INTEGRATION),
        Role.MANAGER: await make("max", Role.MANAGER),
        Role.REVIEWER: await make("rita", Role.REVIEWER, QUEUE),
    }


QUEUE = f"kyc-{uuid.uuid4().hex[:8]}"


Call = Callable[..., Awaitable[dict[str, Any]]]


@asynccontextmanager
async def served(
    pair: ReplicaPair, *, max_lag: float, replica: bool = True
) -> AsyncIterator[httpx.AsyncClient]:
    settings = replace(
        Settings.from_env(),
        read_database_url=pair.standby.app_dsn if replica else None,
        read_max_lag_seconds=max_lag,
        read_timeout_seconds=2.0,
        metrics_public=True,
        events_transport="memory",
    )
    app = create_app(pair.primary.app_dsn, dev=False, settings=settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cw") as client,
    ):
        if replica:
            await until(client, lambda found: found["serving_reads"], "the replica serves reads")
        yield client


def caller(client: httpx.AsyncClient, tokens: dict[Role, str]) -> Call:
    async def call(role: Role, query: str, **variables: Any) -> dict[str, Any]:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {tokens[role]}"},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert "errors" not in body, body
        return body

    return call


async def health(client: httpx.AsyncClient) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get("/healthz")).json()
    return body


async def until(
    client: httpx.AsyncClient, condition: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """Polls /healthz's replica section until the condition holds (deadline 20 s)."""
    deadline = time.monotonic() + 20
    while True:
        found: dict[str, Any] = (await health(client))["replica"]
        if condition(found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}; last /healthz replica: {found}")
        await _tick()


async def _tick() -> None:
    await asyncio.sleep(0.1)


async def metric_until(
    client: httpx.AsyncClient, condition: Callable[[float, float], bool], what: str
) -> tuple[float, float]:
    """Polls /metrics until the replica's (lag, up) satisfy the condition (deadline 20 s)."""
    deadline = time.monotonic() + 20
    while True:
        found = lag_metric((await client.get("/metrics")).text)
        if condition(*found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}; last (lag, up): {found}")
        await _tick()


def lag_metric(text: str) -> tuple[float, float]:
    """casework_read_replica_lag_seconds and casework_read_replica_up, as parsed."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in ("casework_read_replica_lag_seconds", "casework_read_replica_up"):
                assert sample.labels["replica"].endswith("/casework"), sample
                values[sample.name] = sample.value
    return values["casework_read_replica_lag_seconds"], values["casework_read_replica_up"]


async def new_queue(call: Call, items: int, name: str | None = None) -> str:
    name = name or f"kyc-{uuid.uuid4().hex[:8]}"
    await call(Role.ADMIN, SETUP, name=name)
    if items:
        batch = [{"externalKey": f"k{i}", "payload": {"n": i}} for i in range(items)]
        await call(Role.INTEGRATION, ENQUEUE, queue=name, items=batch)
    return name


async def test_a_paused_replica_serves_dashboards_stale_and_labelled_and_the_primary_the_rest(
    pair: ReplicaPair, tokens: dict[Role, str]
) -> None:
    async with served(pair, max_lag=60) as client:
        call = caller(client, tokens)
        queue = await new_queue(call, items=2, name=QUEUE)
        await pair.caught_up()
        await pair.pause_replay()
        try:
            await call(
                Role.INTEGRATION,
                ENQUEUE,
                queue=queue,
                items=[{"externalKey": "late", "payload": {}}],
            )
            claimed = await call(Role.REVIEWER, CLAIM, queue=queue)
            dashboard = await call(Role.MANAGER, DASHBOARD, queue=queue)
            # A manager's dashboard: the replica, which has not replayed the third item nor
            # the claim, and says how old it may be.
            assert dashboard["data"]["queue"]["measures"] == {"arrivals": 2, "backlog": 2}
            assert 0 <= dashboard["extensions"]["replica"]["maxLagSeconds"] <= 60
            # The mutations read the primary (their answers show their own writes) and say
            # nothing of a replica.
            assert claimed["data"]["claimNext"]["item"]["state"] == "LEASED"
            assert "extensions" not in claimed
            # A reviewer's own item: the primary, even in a query.
            item_id = claimed["data"]["claimNext"]["item"]["id"]
            own = await call(Role.REVIEWER, ITEM, id=item_id)
            assert own["data"]["item"]["state"] == "LEASED"
            assert "extensions" not in own
            # The same item as a manager reads it: the replica's, as it was.
            managed = await call(Role.MANAGER, ITEM, id=item_id)
            assert managed["data"]["item"]["state"] == "PENDING"
            assert "replica" in managed["extensions"]
        finally:
            await pair.resume_replay()
        await pair.caught_up()
        fresh = await call(Role.MANAGER, DASHBOARD, queue=queue)
        assert fresh["data"]["queue"]["measures"]["arrivals"] == 3
        assert "replica" in fresh["extensions"]


async def test_reads_fall_back_at_once_when_the_replica_stops_and_return_when_it_is_back(
    pair: ReplicaPair, tokens: dict[Role, str]
) -> None:
    async with served(pair, max_lag=30) as client:
        call = caller(client, tokens)
        queue = await new_queue(call, items=3)
        await pair.caught_up()
        assert "replica" in (await call(Role.MANAGER, DASHBOARD, queue=queue))["extensions"]
        pair.stop_standby("immediate")
        try:
            started = time.monotonic()
            answer = await call(Role.MANAGER, DASHBOARD, queue=queue)
            took = time.monotonic() - started
            # From the primary, complete, unlabelled, and without waiting on the dead replica.
            assert answer["data"]["queue"]["measures"]["arrivals"] == 3
            assert "extensions" not in answer
            assert took < 2.0, took
            down = await until(client, lambda found: not found["up"], "the replica is down")
            assert down["serving_reads"] is False
            assert down["last_error"]
            lag, up = lag_metric((await client.get("/metrics")).text)
            assert up == 0
            assert lag >= 0
            health_body = await health(client)
            # Informative only: the service works on the primary.
            assert health_body["status"] == "ok", health_body
        finally:
            pair.start_standby()
        await until(client, lambda found: found["serving_reads"], "the replica is read again")
        await pair.caught_up()
        back = await call(Role.MANAGER, DASHBOARD, queue=queue)
        assert back["data"]["queue"]["measures"]["arrivals"] == 3
        assert "replica" in back["extensions"]


async def test_a_hung_replica_holds_the_requests_reading_it_for_its_timeout_and_then_none(
    pair: ReplicaPair, tokens: dict[Role, str]
) -> None:
    """A replica that accepts connections and answers nothing (every process SIGSTOPped):
    the statement gives up after CASEWORK_READ_TIMEOUT_SECONDS (2 s here; asyncpg's cancel
    of the statement in flight can take as long again) and the primary answers; later reads
    skip the replica at once until a check finds it again."""
    async with served(pair, max_lag=30) as client:
        call = caller(client, tokens)
        queue = await new_queue(call, items=2)
        await pair.caught_up()
        assert "replica" in (await call(Role.MANAGER, DASHBOARD, queue=queue))["extensions"]
        pair.freeze_standby()
        try:
            started = time.monotonic()
            answer = await call(Role.MANAGER, DASHBOARD, queue=queue)
            took = time.monotonic() - started
            assert answer["data"]["queue"]["measures"]["arrivals"] == 2
            assert "extensions" not in answer
            assert took < 2 * 2.0 + 1.5, took
            started = time.monotonic()
            again = await call(Role.MANAGER, DASHBOARD, queue=queue)
            assert "extensions" not in again
            assert time.monotonic() - started < 1.0
            await until(client, lambda found: not found["up"], "the hung replica is down")
        finally:
            pair.thaw_standby()
        await until(client, lambda found: found["serving_reads"], "the replica is read again")


async def test_a_replica_behind_the_bound_is_left_until_it_catches_up(
    pair: ReplicaPair, tokens: dict[Role, str]
) -> None:
    bound = 2.0
    async with served(pair, max_lag=bound) as client:
        call = caller(client, tokens)
        queue = await new_queue(call, items=1)
        await pair.caught_up()
        within = await until(client, lambda found: found["serving_reads"], "serving")
        assert within["lag_seconds"] is not None
        assert within["lag_seconds"] < bound
        await pair.pause_replay()
        try:
            # Writes the replica does not replay: its lag grows past the bound.
            await call(
                Role.INTEGRATION, ENQUEUE, queue=queue, items=[{"externalKey": "x", "payload": {}}]
            )
            behind = await until(
                client, lambda found: not found["serving_reads"], "the replica is left"
            )
            assert behind["up"] is True
            # The gauge is set at each check (one a second): it passes the bound by the next.
            lag, up = await metric_until(client, lambda lag, up: lag > bound, "lag > bound")
            assert up == 1
            answer = await call(Role.MANAGER, DASHBOARD, queue=queue)
            assert answer["data"]["queue"]["measures"]["arrivals"] == 2
            assert "extensions" not in answer
        finally:
            await pair.resume_replay()
        caught = await until(client, lambda found: found["serving_reads"], "read again")
        assert caught["lag_seconds"] < bound
        lag, up = lag_metric((await client.get("/metrics")).text)
        assert (lag < bound, up) == (True, 1)
        again = await call(Role.MANAGER, DASHBOARD, queue=queue)
        assert again["data"]["queue"]["measures"]["arrivals"] == 2
        assert again["extensions"]["replica"]["maxLagSeconds"] <= bound


async def test_an_idle_primary_is_no_lag(pair: ReplicaPair, tokens: dict[Role, str]) -> None:
    """With nothing written for longer than the bound, the replica is still 0 behind:
    lag is measured in WAL positions, not by the age of the last replayed commit."""
    bound = 1.0
    async with served(pair, max_lag=bound) as client:
        await pair.caught_up()
        first = await until(client, lambda found: found["checks"] >= 1, "a check")
        # Three checks at one a second: longer than the bound, with nothing written.
        await until(client, lambda found: found["checks"] >= first["checks"] + 3, "3 checks")
        idle = (await health(client))["replica"]
        assert idle["serving_reads"] is True, idle
        assert idle["lag_seconds"] < bound


async def test_export_reads_the_replica_once_it_has_caught_up_else_the_primary(
    pair: ReplicaPair, owner: Database
) -> None:
    primary = await asyncpg.connect(pair.primary.app_dsn)
    try:
        conn, line = await replica_for_export(
            primary, pair.standby.app_dsn, max_lag_seconds=10, timeout_seconds=2
        )
        assert conn is not None, line
        assert await conn.fetchval("SELECT pg_is_in_recovery()") is True
        await conn.close()
        assert line.startswith("reading the replica")
        await pair.pause_replay()
        try:
            # A write the paused replica does not replay.
            await token_maker(owner)("export-probe", Role.MANAGER)
            conn, line = await replica_for_export(
                primary, pair.standby.app_dsn, max_lag_seconds=0.3, timeout_seconds=2
            )
            assert conn is None
            assert "not caught up within 0.3 s" in line
        finally:
            await pair.resume_replay()
    finally:
        await primary.close()


async def test_without_a_read_url_every_read_is_the_primary_and_nothing_says_replica(
    pair: ReplicaPair, tokens: dict[Role, str]
) -> None:
    async with served(pair, max_lag=60, replica=False) as client:
        call = caller(client, tokens)
        queue = await new_queue(call, items=1)
        await pair.pause_replay()
        try:
            await call(
                Role.INTEGRATION, ENQUEUE, queue=queue, items=[{"externalKey": "y", "payload": {}}]
            )
            answer = await call(Role.MANAGER, DASHBOARD, queue=queue)
            assert answer["data"]["queue"]["measures"]["arrivals"] == 2
            assert "extensions" not in answer
            assert (await health(client))["replica"] is None
            families = text_string_to_metric_families((await client.get("/metrics")).text)
            samples = [s.name for f in families for s in f.samples]
            assert samples
            assert not [name for name in samples if name.startswith("casework_read_replica")]
        finally:
            await pair.resume_replay()
