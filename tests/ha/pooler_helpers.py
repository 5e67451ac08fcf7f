"""Shared by the PgBouncer tests: a served Casework's environment behind the pooler, reviewers
working a queue at once over HTTP, and the sweep of the pool's server sessions for prepared
statements."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import asyncpg
import httpx

from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.api.live_server import casework_serve_process
from tests.conftest import TestDatabase
from tests.ha.pgbouncer import PgBouncer
from tests.live.helpers import Api, Casework, serve_env

# Server connections PgBouncer keeps per database and user: fewer than the served process's
# pool (SERVED_POOL), so that its connections share server sessions, and whatever one of
# them left on a session (a named prepared statement) would meet another.
POOL_SIZE = 2
SERVED_POOL = 8
POLL_SECONDS = 0.02


@asynccontextmanager
async def serve_casework_env(env: dict[str, str]) -> AsyncIterator[Casework]:
    """`casework serve` with exactly this environment, and an HTTP client for it."""
    async with (
        casework_serve_process(env) as served,
        httpx.AsyncClient(base_url=served.url, timeout=60) as client,
    ):
        yield Casework(served.url, Api(client), served.log)


def pooled_env(test_database: TestDatabase, bouncer: PgBouncer, **extra: str) -> dict[str, str]:
    """`casework serve` with its pool through `bouncer` and its LISTEN direct; migrations
    as the owner, directly."""
    return serve_env(
        test_database,
        CASEWORK_APP_DATABASE_URL=bouncer.dsn(test_database.app_dsn),
        CASEWORK_LISTEN_DATABASE_URL=test_database.app_dsn,
        CASEWORK_DATABASE_POOLER="transaction",
        CASEWORK_POOL_MIN=str(SERVED_POOL),
        CASEWORK_POOL_MAX=str(SERVED_POOL),
        **extra,
    )


@dataclass
class ReviewRun:
    """What the reviewers saw. An item held by two at once is a broken claim."""

    held: set[int] = field(default_factory=set)
    double_holds: list[int] = field(default_factory=list)
    decided_items: list[int] = field(default_factory=list)
    decision_ids: list[str] = field(default_factory=list)
    # Submissions under a released lease, each refused with StaleLease.
    stale: int = 0

    def take(self, item_id: int) -> None:
        if item_id in self.held:
            self.double_holds.append(item_id)
        self.held.add(item_id)


async def _reviewer(api: Api, token: str, run: ReviewRun, release_every: int) -> None:
    while True:
        claim = (await api.call(token, CLAIM, queue="kyc"))["claimNext"]
        if claim["__typename"] == "QueueEmpty":
            return
        assert claim["__typename"] == "Claim", claim
        item_id = int(claim["item"]["id"])
        run.take(item_id)
        if item_id % release_every == 0 and claim["item"]["leaseCount"] == 1:
            run.held.discard(item_id)
            await api.release(token, claim)
            entry = decision_input(claim, "APPROVE", "documents_ok")
            stale = (await api.call(token, DECIDE, input=entry))["submitDecision"]
            assert stale["__typename"] == "StaleLease", stale
            assert stale["decidedUnderThisLease"] is False, stale
            run.stale += 1
            continue
        decision_id = await api.decide(token, claim)
        run.held.discard(item_id)
        run.decided_items.append(item_id)
        run.decision_ids.append(decision_id)


async def review_concurrently(api: Api, tokens: list[str], *, release_every: int) -> ReviewRun:
    """Each token claims and decides from `kyc` until it is empty, all at once. An item
    whose id is a multiple of `release_every` is released at its first claim, then
    submitted under the released lease (a stale write)."""
    run = ReviewRun()
    await asyncio.gather(*(_reviewer(api, token, run, release_every) for token in tokens))
    return run


async def prepared_statements_on_every_server(
    bouncer: PgBouncer, test_database: TestDatabase, backend_pids: set[int]
) -> dict[int, list[str]]:
    """The named prepared statements on each of the pool's server sessions (the pid of
    each in `backend_pids` must be among them), from as many clients each holding a
    transaction open, so that each is on a session of its own. pg_prepared_statements is
    per session: this reads every session the pool has."""
    dsn = bouncer.dsn(test_database.app_dsn)
    connections = [
        await asyncpg.connect(dsn, statement_cache_size=0) for _ in range(bouncer.pool_size)
    ]
    try:
        found: dict[int, list[str]] = {}
        for conn in connections:
            await conn.execute("BEGIN")
            row = await conn.fetchrow(
                "SELECT pg_backend_pid() AS pid,"
                " array(SELECT name FROM pg_prepared_statements ORDER BY name) AS names"
            )
            assert row is not None
            found[row["pid"]] = list(row["names"])
        assert backend_pids <= set(found), (backend_pids, found)
        return {pid: names for pid, names in found.items() if names}
    finally:
        for conn in connections:
            if conn.is_in_transaction():
                await conn.execute("COMMIT")
            await conn.close()


async def wait_for(condition: Callable[[], bool], *, within: float, what: str) -> None:
    """Polls `condition` until it holds; fails naming `what` after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not within {within} s")
        await asyncio.sleep(POLL_SECONDS)
