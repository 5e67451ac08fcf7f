"""Many replicas: hints travel through Redis, writes send no NOTIFY, and a lost Redis
connection resyncs the subscribers like a lost LISTEN connection does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from server.events import redis as redis_transport
from server.events.channels import CHANNEL
from server.events.redis import RedisTransport
from server.store import sql
from server.store.database import Database, connect
from tests.conftest import REDIS_URL, TestDatabase
from tests.live.helpers import (
    POLL_SECONDS,
    QUEUE_BACKLOG,
    create_live_tokens,
    decided_across,
    lease_events_started,
    next_where,
    serve_casework,
    wait_for_health,
)
from tests.live.wsclient import graphql_socket

# One worker runs this module: a test here kills every pub/sub client of the shared Redis.
pytestmark = pytest.mark.xdist_group("redis")


def redis_env(channel: str) -> dict[str, str]:
    return {
        "CASEWORK_EVENTS_TRANSPORT": "redis",
        "CASEWORK_REDIS_URL": REDIS_URL,
        "CASEWORK_REDIS_CHANNEL": channel,
    }


async def test_hints_cross_processes_through_redis_and_not_through_notify(
    test_database: TestDatabase, owner_db: Database, redis_channel: str
) -> None:
    tokens = await create_live_tokens(owner_db)
    notified: list[str] = []
    pg_listener = await connect(test_database.owner_dsn)
    await pg_listener.add_listener(CHANNEL, lambda *args: notified.append(args[3]))
    try:
        async with (
            serve_casework(test_database, **redis_env(redis_channel)) as process_a,
            serve_casework(test_database, **redis_env(redis_channel)) as process_b,
            httpx.AsyncClient(base_url=process_b.url) as client_b,
        ):

            def logs() -> str:
                return "".join(["process A:\n", *process_a.log, "process B:\n", *process_b.log])

            health = await wait_for_health(client_b, lambda body: True, within=5)
            assert health["listener"]["transport"] == "redis"
            try:
                seen = await decided_across(process_a, process_b, tokens)
            except Exception as error:
                raise AssertionError(f"{error!r}\n{logs()}") from error

            kinds = [event["kind"] for event in seen.lease_events]
            assert kinds == ["CLAIMED", "DECIDED"], f"{seen}\n{logs()}"
            assert seen.decision_event["id"] == seen.decision_id, f"{seen}\n{logs()}"

        # Everything committed before this marker has been delivered to the listener.
        await owner_db.fetchrow(sql.health.HEALTH_CHECK)
        await pg_listener.execute("SELECT pg_notify($1, 'marker')", CHANNEL)
        async with asyncio.timeout(10):
            while "marker" not in notified:
                await pg_listener.execute("SELECT 1")
        assert notified == ["marker"], "a write sent a NOTIFY although Redis carries the hints"
    finally:
        await pg_listener.close()
    process_a.assert_no_traceback()
    process_b.assert_no_traceback()


async def test_a_lost_redis_connection_resyncs_the_subscribers(
    test_database: TestDatabase, owner_db: Database, redis_channel: str
) -> None:
    tokens = await create_live_tokens(owner_db)
    async with (
        serve_casework(test_database, **redis_env(redis_channel)) as served,
        httpx.AsyncClient(base_url=served.url) as client,
    ):
        await served.api.configure_queue(tokens.admin, "kyc")
        await served.api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}})
        async with graphql_socket(served.url, tokens.integration) as socket:
            backlog = await socket.subscribe(QUEUE_BACKLOG, queue="kyc")
            assert (await socket.next(backlog))["queueBacklog"]["resync"] is False
            leases = await lease_events_started(socket)

            admin = aioredis.from_url(REDIS_URL)
            try:
                killed = await admin.execute_command(  # type: ignore[no-untyped-call]
                    "CLIENT", "KILL", "TYPE", "pubsub"
                )
            finally:
                await admin.aclose()
            assert killed >= 1

            resynced, _ = await next_where(
                socket, backlog, lambda data: data["queueBacklog"]["resync"] is True
            )
            assert resynced["queueBacklog"]["pending"] == 1
            await next_where(socket, leases, lambda data: data["leaseEvents"]["kind"] == "RESYNC")
            body = await wait_for_health(
                client, lambda body: body["listener"]["reconnects"] >= 1, within=10
            )
            assert body["listener"]["connected"] is True

            claim = await served.api.claim(tokens.rita, "kyc")
            claimed, _ = await next_where(
                socket, leases, lambda data: data["leaseEvents"]["kind"] == "CLAIMED"
            )
            assert claimed["leaseEvents"]["itemId"] == claim["item"]["id"]
    served.assert_no_traceback()


async def until(condition: Callable[[], bool], *, within: float = 10) -> None:
    """Polls `condition` (the signal) until it holds; fails after `within` seconds."""
    async with asyncio.timeout(within):
        while True:
            if condition():
                return
            await asyncio.sleep(POLL_SECONDS)


async def test_a_busy_loop_is_not_taken_for_a_dead_redis(
    redis_channel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The heartbeat judges the connection, not this process's loop: a synchronous step that
    holds the loop past the heartbeat's deadline while the PONG is on its way (a busy or
    starved process) is no reason to reconnect and resync every subscriber. It was: the
    cause of the RESYNC that made the cross-process test above fail now and then."""
    monkeypatch.setattr(redis_transport, "HEARTBEAT_INTERVAL_SECONDS", 0.2)
    monkeypatch.setattr(redis_transport, "HEARTBEAT_TIMEOUT_SECONDS", 0.3)
    stall_seconds = 0.6
    resyncs: list[str] = []
    transport = RedisTransport(REDIS_URL, channel=redis_channel)
    await transport.start(lambda event: None, lambda: resyncs.append("resync"))
    try:
        assert transport.status().connected
        await until(lambda: transport.heartbeats >= 1)
        pubsub = transport._pubsub
        assert pubsub is not None
        ping = pubsub.ping
        stalled: list[float] = []

        async def ping_then_stall(*args: Any) -> Any:
            answer = await ping(*args)
            if not stalled:
                # Once, right after the PING went out: the loop held by a synchronous step.
                stalled.append(stall_seconds)
                asyncio.get_running_loop().call_soon(time.sleep, stall_seconds)
            return answer

        monkeypatch.setattr(pubsub, "ping", ping_then_stall)
        answered = transport.heartbeats
        # The stalled heartbeat, and the one after it, answered on the same connection.
        await until(lambda: bool(stalled) and transport.heartbeats >= answered + 2)
        assert (transport.reconnects, resyncs, transport.last_error) == (0, [], None)
    finally:
        await transport.stop()
