"""Live updates survive a lost database and a stuck consumer: real server, sockets, PostgreSQL.

- PostgreSQL stopped and restarted under a subscribed console, and separately the
  listener's backend terminated: each subscriber gets a resync snapshot, later events flow
  again, and the same server process reconnected its listener.
- A subscriber that never reads: the server's memory stays bounded, that subscriber is
  resynced, and another subscriber of the same queue gets every event, promptly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from server.domain.identity.tokens import create_token
from server.domain.model import Claim, Item, Role
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.leases import claim_next, release_lease
from server.domain.review.queues import QueueSettings, configure_queue
from server.store.database import Database, create_pool
from server.store.queries import Queries
from tests import pg
from tests.api.live_server import Served, casework_serve_process
from tests.conftest import ADMIN, INTEGRATION, TestDatabase, reviewer
from tests.live.helpers import (
    DOWN_WITHIN_SECONDS,
    RECOVER_WITHIN_SECONDS,
    Api,
    health,
    migrated_database,
    next_where,
    private_postgres,
    rss_bytes,
    serve_env,
    wait_for_health,
    wait_for_readiness,
)
from tests.live.wsclient import PROTOCOL, GraphQLSocket, graphql_socket

BACKLOG = """
subscription($queue: String!) { queueBacklog(queue: $queue) { pending leased resync } }
"""
LEASES = """
subscription($queue: String!) { leaseEvents(queue: $queue) { kind itemId } }
"""
ITEM_UPDATES = """
subscription($item: ID!) { itemUpdates(itemId: $item) { kind item { id payload } } }
"""


@dataclass(frozen=True)
class SeededQueue:
    queue: str
    # A reviewer of the queue: subscriptions, and claims over HTTP.
    reviewer_token: str
    items: list[Item]


async def seed_queue(
    owner_db: Database,
    db: Database,
    queue: str = "kyc",
    *,
    items: int = 3,
    configure: bool = True,
    payload: Any = None,
) -> SeededQueue:
    """Configures `queue` (unless told it exists), enqueues items, makes a reviewer token."""
    if configure:
        configured = await configure_queue(db, ADMIN, QueueSettings(queue, lease_ttl_seconds=300))
        assert not hasattr(configured, "message"), configured
    new_items = [NewItem(f"{queue}-{n}", payload or {"n": n}) for n in range(items)]
    enqueued = await enqueue_items(db, INTEGRATION, queue, new_items)
    assert isinstance(enqueued, list), enqueued
    token = await create_token(owner_db, user="rita", role=Role.REVIEWER, queues=[queue])
    return SeededQueue(queue, token, [result.item for result in enqueued])


async def seed(database: TestDatabase) -> SeededQueue:
    queries = Queries(pg.QUERIES_DIR)
    owner_pool = await create_pool(database.owner_dsn, min_size=1, max_size=2)
    app_pool = await create_pool(database.app_dsn, min_size=1, max_size=2)
    try:
        return await seed_queue(Database(owner_pool, queries), Database(app_pool, queries))
    finally:
        await app_pool.close()
        await owner_pool.close()


class Console:
    """One socket subscribed to a queue's backlog and lease events."""

    def __init__(self, socket: GraphQLSocket, backlog: str, leases: str) -> None:
        self.socket, self.backlog, self.leases = socket, backlog, leases

    @classmethod
    async def open(cls, socket: GraphQLSocket, queue: str) -> Console:
        backlog = await socket.subscribe(BACKLOG, queue=queue)
        leases = await socket.subscribe(LEASES, queue=queue)
        return cls(socket, backlog, leases)

    async def next_backlog(self) -> dict[str, Any]:
        data: dict[str, Any] = (await self.socket.next(self.backlog))["queueBacklog"]
        return data

    async def next_lease_event(self) -> dict[str, Any]:
        data: dict[str, Any] = (await self.socket.next(self.leases))["leaseEvents"]
        return data


async def subscribed_console(
    client: httpx.AsyncClient, socket: GraphQLSocket, seeded: SeededQueue
) -> Console:
    console = await Console.open(socket, seeded.queue)
    first = await console.next_backlog()
    assert first == {"pending": len(seeded.items), "leased": 0, "resync": False}
    # No message acknowledges a leaseEvents subscription: the hub's count of subscribers
    # says when both are registered, before the test takes the database away.
    await wait_for_health(client, lambda body: body["subscribers"] == 2, within=10)
    return console


async def assert_resynced_then_live(
    console: Console, client: httpx.AsyncClient, seeded: SeededQueue
) -> None:
    """The assertions both disconnection tests share, once the listener is back."""
    # Nothing happened in the queue meanwhile, so the first message of each stream after
    # the reconnect is the resync: a fresh snapshot, and a RESYNC lease event.
    snapshot = await console.next_backlog()
    assert snapshot == {"pending": len(seeded.items), "leased": 0, "resync": True}
    assert await console.next_lease_event() == {"kind": "RESYNC", "itemId": None}

    # Later events flow again: a claim over HTTP reaches both streams.
    item_id = (await Api(client).claim(seeded.reviewer_token, seeded.queue))["item"]["id"]
    assert await console.next_lease_event() == {"kind": "CLAIMED", "itemId": item_id}
    figure, _ = await next_where(
        console.socket, console.backlog, lambda data: data["queueBacklog"]["leased"] == 1
    )
    assert figure["queueBacklog"] == {
        "pending": len(seeded.items) - 1,
        "leased": 1,
        "resync": False,
    }


def assert_same_process(served: Served) -> None:
    assert served.process.returncode is None, "".join(served.log)
    starts = [line for line in served.log if "Application startup complete" in line]
    assert len(starts) == 1, "".join(served.log)


async def test_postgres_restart_resyncs_subscribers_and_the_listener_reconnects() -> None:
    async with private_postgres() as postgres:
        database = await migrated_database(postgres.server_dsn)
        seeded = await seed(database)
        # Every event re-reads the token: the first reads after the restart go through the
        # pool, whose connections PostgreSQL closed.
        env = serve_env(database, CASEWORK_TOKEN_CACHE_SECONDS="0")
        async with (
            casework_serve_process(env) as served,
            httpx.AsyncClient(base_url=served.url) as client,
            graphql_socket(served.url, seeded.reviewer_token) as socket,
        ):
            console = await subscribed_console(client, socket, seeded)
            before = await health(client)
            assert before["listener"]["connected"] is True
            assert before["listener"]["reconnects"] == 0

            await postgres.stop()
            # /readyz takes the process out of rotation while PostgreSQL is away.
            await wait_for_readiness(client, 503, within=DOWN_WITHIN_SECONDS)
            down = await health(client)
            assert down["listener"]["connected"] is False, down
            assert down["database"] is False, down

            await postgres.start()
            await wait_for_readiness(client, 200, within=RECOVER_WITHIN_SECONDS)
            after = await health(client)
            assert after["listener"]["connected"] is True, after
            assert after["listener"]["reconnects"] >= 1, after

            await assert_resynced_then_live(console, client, seeded)
            assert_same_process(served)


async def listener_backend(owner: asyncpg.Connection, pid: int) -> asyncpg.Record | None:
    row: asyncpg.Record | None = await owner.fetchrow(
        "SELECT usename, query, backend_type FROM pg_stat_activity WHERE pid = $1", pid
    )
    return row


async def test_terminating_the_listener_backend_resyncs_subscribers(
    test_database: TestDatabase, owner_db: Database, db: Database, owner_conn: asyncpg.Connection
) -> None:
    seeded = await seed_queue(owner_db, db)
    async with (
        casework_serve_process(serve_env(test_database)) as served,
        httpx.AsyncClient(base_url=served.url) as client,
        graphql_socket(served.url, seeded.reviewer_token) as socket,
    ):
        console = await subscribed_console(client, socket, seeded)
        listener = (await health(client))["listener"]
        assert listener["connected"] is True
        assert listener["reconnects"] == 0
        old_pid = listener["backend_pid"]
        # The pid /healthz names is the app role's LISTEN connection, not a pooled one.
        backend = await listener_backend(owner_conn, old_pid)
        assert backend is not None, f"no backend {old_pid}"
        assert backend["usename"] == "casework_app"
        assert backend["query"] in {'LISTEN "casework_events"', "SELECT 1"}, backend

        assert await owner_conn.fetchval("SELECT pg_terminate_backend($1, 5000)", old_pid) is True

        after = await wait_for_health(
            client,
            lambda body: body["listener"]["reconnects"] >= 1 and body["listener"]["connected"],
            within=RECOVER_WITHIN_SECONDS,
        )
        new_pid = after["listener"]["backend_pid"]
        assert new_pid != old_pid
        assert await listener_backend(owner_conn, old_pid) is None
        backend = await listener_backend(owner_conn, new_pid)
        assert backend is not None, f"no backend {new_pid}"
        assert backend["usename"] == "casework_app", backend
        await wait_for_readiness(client, 200, within=RECOVER_WITHIN_SECONDS)

        await assert_resynced_then_live(console, client, seeded)
        assert_same_process(served)


# The stuck subscriber also watches one item whose payload is near the 64 KiB limit, and
# random, so each event it cannot take stands for a large message that does not compress:
# buffered anywhere, they would show.
BIG_PAYLOAD = {"scan": secrets.token_urlsafe(45_000)}
CYCLES = 1500
RSS_GROWTH_LIMIT = 32 * 2**20
# The reader of the same queue has its last event this soon after the last commit.
PROMPT_SECONDS = 5.0


@contextlib.asynccontextmanager
async def stuck_socket(base_url: str, token: str) -> AsyncIterator[ClientConnection]:
    """A graphql-transport-ws connection that stops reading after its connection_ack.

    The client library stops reading the socket once one frame waits (max_queue=1), and
    the socket's receive buffer is small: from then on the server's send path holds
    whatever it would buffer. Compression is off, so messages keep their size.
    """
    host, port = base_url.removeprefix("http://").split(":")
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.setblocking(False)
    await asyncio.get_running_loop().sock_connect(raw, (host, int(port)))
    connection = await websockets.connect(
        f"ws://{host}:{port}/graphql",
        sock=raw,
        subprotocols=[PROTOCOL],  # type: ignore[list-item]
        max_queue=1,
        compression=None,
        ping_interval=None,
    )
    try:
        payload = {"authorization": f"Bearer {token}"}
        await connection.send(json.dumps({"type": "connection_init", "payload": payload}))
        ack = json.loads(await asyncio.wait_for(connection.recv(), 10))
        assert ack["type"] == "connection_ack", ack
        yield connection
    finally:
        # A closing handshake would wait for a reply this client does not read.
        connection.transport.abort()
        await connection.wait_closed()


async def subscribe_raw(
    connection: ClientConnection, operation: str, query: str, **variables: Any
) -> None:
    payload = {"query": query, "variables": variables}
    await connection.send(json.dumps({"id": operation, "type": "subscribe", "payload": payload}))


async def read_until_lease_resync(connection: ClientConnection) -> list[dict[str, Any]]:
    """Reads the stuck socket again until its leaseEvents stream says RESYNC (bounded)."""
    messages: list[dict[str, Any]] = []
    async with asyncio.timeout(20):
        while True:
            message = json.loads(await connection.recv())
            messages.append(message)
            if message.get("id") != "stuck-leases":
                continue
            assert message["type"] == "next", message
            if message["payload"]["data"]["leaseEvents"]["kind"] == "RESYNC":
                return messages


async def claims_and_releases(db: Database, queue: str, cycles: int) -> list[str]:
    """One reviewer claims and releases, one after the other: a known order of events."""
    worker = reviewer("walt", queue)
    made: list[str] = []
    for _ in range(cycles):
        claim = await claim_next(db, worker, queue)
        assert isinstance(claim, Claim), claim
        released = await release_lease(db, worker, str(claim.item.id), str(claim.lease_token))
        assert not hasattr(released, "message"), released
        made += [f"CLAIMED {claim.item.id}", f"RELEASED {claim.item.id}"]
    return made


async def test_a_subscriber_that_never_reads_costs_bounded_memory_and_slows_nobody(
    test_database: TestDatabase, owner_db: Database, db: Database, kyc_queue: str
) -> None:
    seeded = await seed_queue(
        owner_db, db, kyc_queue, items=1, configure=False, payload=BIG_PAYLOAD
    )
    big_item = str(seeded.items[0].id)
    async with (
        casework_serve_process(serve_env(test_database)) as served,
        httpx.AsyncClient(base_url=served.url) as client,
        graphql_socket(served.url, seeded.reviewer_token) as reader,
    ):
        async with stuck_socket(served.url, seeded.reviewer_token) as stuck:
            await subscribe_raw(stuck, "stuck-leases", LEASES, queue=kyc_queue)
            await subscribe_raw(stuck, "stuck-item", ITEM_UPDATES, item=big_item)
            watched = await reader.subscribe(LEASES, queue=kyc_queue)
            await wait_for_health(client, lambda body: body["subscribers"] == 3, within=10)

            received: list[str] = []

            async def read(count: int) -> None:
                while len(received) < count:
                    event = (await reader.next(watched))["leaseEvents"]
                    received.append(f"{event['kind']} {event['itemId']}")

            # Warm up (pool, caches, the first sends), then measure from a settled baseline.
            made = await claims_and_releases(db, kyc_queue, 20)
            await read(len(made))
            assert received == made
            baseline = peak = rss_bytes(served.pid)

            async def sample_rss() -> None:
                nonlocal peak
                while True:
                    peak = max(peak, rss_bytes(served.pid))
                    await asyncio.sleep(0.05)

            sampler = asyncio.create_task(sample_rss())
            reading = asyncio.create_task(read(len(made) + 2 * CYCLES))
            try:
                made += await claims_and_releases(db, kyc_queue, CYCLES)
                # The reader has everything within PROMPT_SECONDS of the last commit.
                try:
                    await asyncio.wait_for(asyncio.shield(reading), PROMPT_SECONDS)
                except TimeoutError:
                    raise AssertionError(
                        f"the reader had {len(received)} of {len(made)} events "
                        f"{PROMPT_SECONDS} s after the last commit; last: {received[-3:]}"
                    ) from None
            finally:
                sampler.cancel()
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.gather(sampler, reading)
            peak = max(peak, rss_bytes(served.pid))

            # The reader of the same queue got every event, in commit order, and no resync.
            assert received == made

            # The server kept a bounded amount for the stuck subscriber, though it was
            # offered far more than that limit.
            offered = 2 * CYCLES * len(json.dumps(BIG_PAYLOAD))
            assert offered > 4 * RSS_GROWTH_LIMIT
            assert peak - baseline < RSS_GROWTH_LIMIT, (
                f"RSS grew {(peak - baseline) / 2**20:.1f} MiB while the stuck subscriber was "
                f"offered {offered / 2**20:.0f} MiB"
            )
            # Its inboxes overflowed: it was told to resync instead.
            status = await health(client)
            assert status["inbox_overflows"] >= 1, status

            # Reading again, it finds a resync soon, not the backlog of every event.
            messages = await read_until_lease_resync(stuck)
            lease_events = [message for message in messages if message["id"] == "stuck-leases"]
            assert len(lease_events) < len(made) // 2, len(lease_events)

        # Gone, it holds nothing: only the reader is left.
        await wait_for_health(client, lambda body: body["subscribers"] == 1, within=10)
