"""While PostgreSQL is away, HTTP GraphQL answers 503 with Retry-After and code UNAVAILABLE.

Real `casework serve` processes on a PostgreSQL of the test's own, stopped and started again:
one that looks every token up (the lookup in get_context fails), one whose token is cached
(the resolver's read, or the mutation's write, fails). Once PostgreSQL is back, the same
requests succeed; nothing was half-written meanwhile.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from server.domain.identity.tokens import create_token
from server.domain.model import Role, Verdict
from server.domain.review.items import NewItem, enqueue_items
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.graphql.codes import RETRY_AFTER_SECONDS
from server.store.database import Database, create_pool
from server.store.queries import Queries
from tests import pg
from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.api.live_server import Served, casework_serve_process
from tests.conftest import ADMIN, INTEGRATION, TestDatabase
from tests.live.helpers import (
    DOWN_WITHIN_SECONDS,
    RECOVER_WITHIN_SECONDS,
    PrivatePostgres,
    migrated_database,
    private_postgres,
    serve_env,
    wait_for_readiness,
)

READ = "{ queues { name } }"


async def seed(database: TestDatabase) -> str:
    """Queue kyc with a reason code and two items; returns a reviewer token of kyc."""
    queries = Queries(pg.QUERIES_DIR)
    owner_pool = await create_pool(database.owner_dsn, min_size=1, max_size=2)
    app_pool = await create_pool(database.app_dsn, min_size=1, max_size=2)
    try:
        owner, app = Database(owner_pool, queries), Database(app_pool, queries)
        configured = await configure_queue(app, ADMIN, QueueSettings("kyc", lease_ttl_seconds=600))
        assert not hasattr(configured, "message"), configured
        defined = await define_reason_code(
            app, ADMIN, queue="kyc", code="documents_ok", label="ok", verdicts=[Verdict.APPROVE]
        )
        assert not hasattr(defined, "message"), defined
        items = [NewItem(f"cust-{n}", {"n": n}) for n in range(2)]
        assert isinstance(await enqueue_items(app, INTEGRATION, "kyc", items), list)
        return await create_token(owner, user="rita", role=Role.REVIEWER, queues=["kyc"])
    finally:
        await app_pool.close()
        await owner_pool.close()


@dataclass(frozen=True)
class Console:
    """A served Casework and a reviewer's HTTP client of it."""

    served: Served
    client: httpx.AsyncClient
    token: str

    async def post(self, query: str, **variables: Any) -> httpx.Response:
        return await self.client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {self.token}"},
        )

    async def ok(self, query: str, **variables: Any) -> dict[str, Any]:
        response = await self.post(query, **variables)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data


@contextlib.asynccontextmanager
async def console(database: TestDatabase, token: str, cache_seconds: str) -> AsyncIterator[Console]:
    env = serve_env(database, CASEWORK_TOKEN_CACHE_SECONDS=cache_seconds)
    async with (
        casework_serve_process(env) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as client,
    ):
        yield Console(served, client, token)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert response.headers["content-type"] == "application/json"
    errors = response.json()["errors"]
    assert [error["extensions"]["code"] for error in errors] == ["UNAVAILABLE"], errors
    assert "database is unavailable" in errors[0]["message"], errors


async def outage_then_recovery(postgres: PrivatePostgres, consoles: list[Console]) -> None:
    claims = [(await c.ok(CLAIM, queue="kyc"))["claimNext"] for c in consoles]
    assert [claim["__typename"] for claim in claims] == ["Claim", "Claim"], claims
    decisions = [decision_input(claim, "APPROVE", "documents_ok") for claim in claims]
    # The second console's token is in its cache now, the first one's is not.
    assert (await consoles[1].ok(READ))["queues"] == [{"name": "kyc"}]

    await postgres.stop()
    for c in consoles:
        await wait_for_readiness(c.client, 503, within=DOWN_WITHIN_SECONDS)
    for c, decision in zip(consoles, decisions, strict=True):
        assert_unavailable(await c.post(READ))
        assert_unavailable(await c.post(DECIDE, input=decision))
    # A warning line per request, not an error with a traceback: an outage is no bug.
    # (asyncpg's pool logs a traceback of its own, failing to keep its minimum size.)
    uncached, cached = ("".join(c.served.log) for c in consoles)
    assert "token lookup: database unavailable" in uncached, uncached
    # The cached token gets as far as the resolvers: the read, and the domain's write.
    assert "database unavailable at ['queues']" in cached, cached
    assert "database unavailable at ['submitDecision']" in cached, cached
    for log in (uncached, cached):
        assert "unexpected error" not in log, log
        assert "Exception in ASGI application" not in log, log

    await postgres.start()
    for c in consoles:
        await wait_for_readiness(c.client, 200, within=RECOVER_WITHIN_SECONDS)
    for c, decision in zip(consoles, decisions, strict=True):
        assert (await c.ok(READ))["queues"] == [{"name": "kyc"}]
        # The write that failed wrote nothing: the same submission now records the verdict.
        recorded = (await c.ok(DECIDE, input=decision))["submitDecision"]
        assert recorded["__typename"] == "DecisionRecorded", recorded
        assert recorded["decision"]["item"]["state"] == "DECIDED", recorded


async def test_an_outage_is_a_503_with_retry_after_whether_or_not_the_token_is_cached() -> None:
    async with private_postgres() as postgres:
        database = await migrated_database(postgres.server_dsn)
        token = await seed(database)
        async with (
            console(database, token, cache_seconds="0") as uncached,
            console(database, token, cache_seconds="600") as cached,
        ):
            await outage_then_recovery(postgres, [uncached, cached])
            for c in (uncached, cached):
                assert c.served.process.returncode is None, "".join(c.served.log)
