"""Casework behind a real PgBouncer in transaction mode (Debian's 1.18, which has no support
for prepared statements in that mode): the served review loop with its pool through the
pooler and its LISTEN direct, hints routed without a session setting, and the refusals of a
set-up that could not work (docs/operations.md, "Connection poolers")."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator

import asyncpg
import httpx
import pytest

from server.domain.model import Claim, Role
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.events.channels import CHANNEL
from server.events.listener import PostgresListener
from server.store.database import Database, create_pool
from server.store.queries import Queries
from tests.api.live_server import casework_process, casework_serve_process, run_casework
from tests.conftest import INTEGRATION, REDIS_URL, TestDatabase, reviewer, token_maker
from tests.ha.pgbouncer import PgBouncer, pgbouncer
from tests.ha.pooler_helpers import (
    POOL_SIZE,
    SERVED_POOL,
    pooled_env,
    prepared_statements_on_every_server,
    review_concurrently,
    serve_casework_env,
    wait_for,
)
from tests.integration.helpers import decide
from tests.live.helpers import (
    DECISION_EVENTS,
    Api,
    create_live_tokens,
    decided_across,
    subscriptions_started,
)
from tests.live.wsclient import graphql_socket

pytestmark = pytest.mark.ha

ITEMS = 60
REVIEWERS = 6
WAIT_SECONDS = 10.0


@pytest.fixture
def bouncer(pg_server: str) -> Iterator[PgBouncer]:
    with pgbouncer(pg_server, pool_size=POOL_SIZE) as running:
        yield running


def _ours(rows: list[dict[str, str]], test_database: TestDatabase) -> list[dict[str, str]]:
    """The rows of a SHOW about casework_app's pool for the test's database."""
    return [r for r in rows if (r["database"], r["user"]) == (test_database.name, "casework_app")]


async def test_the_review_loop_runs_through_pgbouncer_with_live_updates_direct(
    test_database: TestDatabase,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    bouncer: PgBouncer,
) -> None:
    tokens = await create_live_tokens(owner_db)
    make = token_maker(owner_db)
    reviewers = [await make(f"web-{n}", Role.REVIEWER, "kyc") for n in range(REVIEWERS)]
    async with (
        casework_serve_process(pooled_env(test_database, bouncer)) as served,
        httpx.AsyncClient(base_url=served.url, timeout=60) as client,
        graphql_socket(served.url, tokens.integration) as socket,
    ):
        api = Api(client)
        await api.configure_queue(tokens.admin, "kyc")
        decisions = await socket.subscribe(DECISION_EVENTS, queue="kyc")
        await subscriptions_started(socket, "kyc")
        items = await api.enqueue(
            tokens.integration, "kyc", {f"case-{n}": {"n": n} for n in range(ITEMS)}
        )
        # Every 5th item is released at its first claim and then submitted under the
        # released lease: a stale write, refused; another reviewer decides it.
        run = await review_concurrently(api, reviewers, release_every=5)
        # The subscription, fed by LISTEN on the direct connection, hears every decision.
        heard = [(await socket.next(decisions))["decisionEvents"]["id"] for _ in range(ITEMS)]
        stats = await asyncio.to_thread(bouncer.show, "STATS")
        clients = _ours(await asyncio.to_thread(bouncer.show, "CLIENTS"), test_database)
        servers = _ours(await asyncio.to_thread(bouncer.show, "SERVERS"), test_database)
        listener_backends = await owner_conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = $1 AND application_name = 'casework-listener'",
            test_database.name,
        )
        # Read while the service still holds its clients, so that the sessions it used
        # are the ones read.
        backend_pids = {int(server["remote_pid"]) for server in servers}
        prepared = await prepared_statements_on_every_server(bouncer, test_database, backend_pids)
    served_log = "".join(served.log)

    enqueued = sorted(int(item["id"]) for item in items)
    assert run.double_holds == []
    assert sorted(run.decided_items) == enqueued
    assert run.stale == len([n for n in enqueued if n % 5 == 0]) > 0
    decided = await owner_conn.fetch(
        "SELECT item_id, count(*) AS n FROM review_decisions GROUP BY item_id"
    )
    assert sorted(row["item_id"] for row in decided) == enqueued
    assert {row["n"] for row in decided} == {1}
    assert sorted(heard) == sorted(run.decision_ids)

    # The pool went through PgBouncer: its transactions were counted there, with more
    # clients of casework_app than server sessions behind them; LISTEN did not.
    counted = {row["database"]: row for row in stats}[test_database.name]
    assert int(counted["total_xact_count"]) > 3 * ITEMS, counted
    assert len(clients) == SERVED_POOL, clients
    assert 0 < len(servers) <= POOL_SIZE < SERVED_POOL, servers
    assert listener_backends == 1
    # No named prepared statement is on any of those sessions (and none leaked into an
    # error: with 8 clients on 2 sessions, one would have met "does not exist" or
    # "already exists").
    assert prepared == {}
    assert "prepared statement" not in served_log
    assert "Traceback" not in served_log


async def test_the_redis_transport_through_pgbouncer_needs_no_listen_and_sends_no_notify(
    test_database: TestDatabase,
    owner_db: Database,
    bouncer: PgBouncer,
    redis_channel: str,
) -> None:
    """With Redis carrying the hints nothing LISTENs, so no direct connection is needed;
    the setting that spares NOTIFY is set per transaction (PgBouncer would refuse it as a
    startup parameter and stop the pool at its first connection)."""
    tokens = await create_live_tokens(owner_db)
    heard: list[str] = []
    listener = await asyncpg.connect(test_database.app_dsn)
    await listener.add_listener(CHANNEL, lambda *args: heard.append(args[3]))
    env = pooled_env(
        test_database,
        bouncer,
        CASEWORK_EVENTS_TRANSPORT="redis",
        CASEWORK_REDIS_URL=REDIS_URL,
        CASEWORK_REDIS_CHANNEL=redis_channel,
    )
    del env["CASEWORK_LISTEN_DATABASE_URL"]
    try:
        async with serve_casework_env(env) as casework:
            seen = await decided_across(casework, casework, tokens)
        assert [event["kind"] for event in seen.lease_events] == ["CLAIMED", "DECIDED"]
        assert seen.decision_event["id"] == seen.decision_id
        await listener.execute(f"NOTIFY {CHANNEL}, 'marker'")
        await wait_for(lambda: "marker" in heard, within=WAIT_SECONDS, what="the marker")
    finally:
        await listener.close()
    assert heard == ["marker"], "a write sent a NOTIFY although Redis carries the hints"
    casework.assert_no_traceback()


async def test_the_worker_runs_through_pgbouncer_and_listens_directly(
    test_database: TestDatabase, owner_conn: asyncpg.Connection, bouncer: PgBouncer
) -> None:
    """`casework worker`: its schema check and pool through the pooler, its LISTEN direct."""
    process = await casework_process(pooled_env(test_database, bouncer), "worker")
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        banner = await asyncio.wait_for(process.stdout.readline(), 60)
        assert b"carrying decisions out" in banner, banner

        async def listening_and_pooled() -> bool:
            listener = await owner_conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = $1 AND application_name = 'casework-listener'",
                test_database.name,
            )
            clients = _ours(await asyncio.to_thread(bouncer.show, "CLIENTS"), test_database)
            return listener == 1 and len(clients) >= 1

        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_SECONDS
        while not await listening_and_pooled():
            assert loop.time() < deadline, "the worker neither listens nor pools"
            await asyncio.sleep(0.05)
    finally:
        process.terminate()
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, stderr.decode()
    assert b"Traceback" not in stderr, stderr.decode()


@pytest.mark.parametrize("per_transaction", [True, False])
async def test_published_hints_send_no_notify_through_pgbouncer(
    test_database: TestDatabase,
    db: Database,
    queries: Queries,
    kyc_queue: str,
    bouncer: PgBouncer,
    per_transaction: bool,
) -> None:
    """As the Redis transport runs its writes: behind the pooler `casework.events` cannot be
    a session setting (PgBouncer refuses it at connect), so it is set in each transaction
    that may send a hint. Without that (the control) the same writes NOTIFY."""
    published: list[str] = []

    async def publish(hint: str) -> None:
        published.append(hint)

    heard: list[str] = []
    listener = await asyncpg.connect(test_database.app_dsn)
    await listener.add_listener(CHANNEL, lambda *args: heard.append(args[3]))
    pool = await create_pool(
        bouncer.dsn(test_database.app_dsn), min_size=1, max_size=4, transaction_pooler=True
    )
    try:
        pooled = Database(
            pool, queries, publish_hints=publish, hints_setting_per_transaction=per_transaction
        )
        created = await enqueue_items(pooled, INTEGRATION, kyc_queue, [NewItem("case-1", {})])
        assert isinstance(created, list)
        rita = reviewer("rita")
        claim = await claim_next(pooled, rita, kyc_queue)
        assert isinstance(claim, Claim), claim
        await decide(pooled, rita, claim)
    finally:
        await pool.close()
    # Notifications arrive in commit order: once this one is heard, any the writes sent
    # has been heard too.
    marker = await asyncpg.connect(test_database.app_dsn)
    try:
        await marker.execute(f"NOTIFY {CHANNEL}, 'marker'")
    finally:
        await marker.close()
    await wait_for(lambda: "marker" in heard, within=WAIT_SECONDS, what="the marker NOTIFY")
    await listener.close()

    assert len(published) >= 3, published  # enqueued, claimed, decided
    sent = [payload for payload in heard if payload != "marker"]
    if per_transaction:
        assert sent == []
    else:
        assert sorted(sent) == sorted(published)


async def test_asyncpg_statement_cache_fails_loudly_through_this_pooler(
    test_database: TestDatabase, bouncer: PgBouncer
) -> None:
    """The control for the sweep above: asyncpg's default statement cache through this
    PgBouncer, 8 clients on 2 sessions, meets prepared statements of other clients."""
    dsn = bouncer.dsn(test_database.app_dsn)
    errors: list[str] = []

    async def client(n: int) -> None:
        conn = await asyncpg.connect(dsn)
        try:
            for k in range(20):
                try:
                    await conn.fetchval(f"SELECT $1::int + {k % 3}", n)
                except asyncpg.PostgresError as error:
                    errors.append(str(error).splitlines()[0])
        finally:
            await conn.close()

    await asyncio.gather(*(client(n) for n in range(SERVED_POOL)))
    assert errors
    assert all(
        "prepared statement" in error and ("does not exist" in error or "exists" in error)
        for error in errors
    ), errors[:3]
    # And the sweep finds what they left on the server sessions.
    left = await prepared_statements_on_every_server(bouncer, test_database, set())
    assert left
    assert all(name.startswith("__asyncpg_stmt_") for names in left.values() for name in names)


async def test_a_listener_through_the_pooler_is_logged(
    test_database: TestDatabase, bouncer: PgBouncer, caplog: pytest.LogCaptureFixture
) -> None:
    listener = PostgresListener(bouncer.dsn(test_database.app_dsn))
    with caplog.at_level(logging.WARNING, logger="casework.events"):
        await listener.start(lambda event: None, lambda: None)
        try:
            assert listener.status().connected
        finally:
            await listener.stop()
    warnings = [r.getMessage() for r in caplog.records if "pooler or proxy" in r.getMessage()]
    assert len(warnings) == 1, caplog.records
    assert "CASEWORK_LISTEN_DATABASE_URL" in warnings[0]


async def test_a_direct_listener_logs_nothing(
    test_database: TestDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    listener = PostgresListener(test_database.app_dsn)
    with caplog.at_level(logging.WARNING, logger="casework.events"):
        await listener.start(lambda event: None, lambda: None)
        try:
            assert listener.status().connected
        finally:
            await listener.stop()
    assert [r for r in caplog.records if "pooler or proxy" in r.getMessage()] == []


@pytest.mark.parametrize(
    ("command", "listen", "expected"),
    [
        (("serve", "--port", "0"), None, "set CASEWORK_LISTEN_DATABASE_URL"),
        (("worker",), None, "set CASEWORK_LISTEN_DATABASE_URL"),
        (("serve", "--port", "0"), "pooler", "CASEWORK_LISTEN_DATABASE_URL is"),
    ],
)
async def test_listen_through_the_pooler_stops_the_start_with_one_line(
    command: tuple[str, ...], listen: str | None, expected: str
) -> None:
    pooler = "postgresql://casework_app@127.0.0.1:6432/casework"
    env = {
        **os.environ,
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/casework",
        "CASEWORK_APP_DATABASE_URL": pooler,
        "CASEWORK_DATABASE_POOLER": "transaction",
    }
    env.pop("CASEWORK_LISTEN_DATABASE_URL", None)
    if listen is not None:
        env["CASEWORK_LISTEN_DATABASE_URL"] = pooler
    result = await run_casework(env, *command)
    assert result.code == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("casework: error: ")
    assert expected in lines[0]
