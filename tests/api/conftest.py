from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from server.app import create_app
from server.config import Settings
from server.domain.model import Role
from server.store.database import Database
from tests.conftest import TestDatabase, token_maker

GraphQL = Callable[..., Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tokens:
    admin: str
    integration: str
    reviewer: str
    other_reviewer: str
    outsider: str
    approver: str
    manager: str


@pytest.fixture
async def tokens(owner_db: Database) -> Tokens:
    make = token_maker(owner_db)

    return Tokens(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        reviewer=await make("rita", Role.REVIEWER, "kyc", "kyc-senior"),
        other_reviewer=await make("rob", Role.REVIEWER, "kyc"),
        outsider=await make("olga", Role.REVIEWER, "payouts"),
        approver=await make("ann", Role.APPROVER),
        manager=await make("max", Role.MANAGER),
    )


@asynccontextmanager
async def in_process_client(
    test_database: TestDatabase,
    *,
    dev: bool,
    settings: Settings | None = None,
    run_worker: bool = False,
) -> AsyncIterator[httpx.AsyncClient]:
    """The real ASGI app, lifespan included, served in-process (settings from the
    environment unless given; run_worker: with the apply worker, as `casework serve`)."""
    app = create_app(
        test_database.app_dsn,
        dev=dev,
        settings=settings or Settings.from_env(),
        run_worker=run_worker,
    )
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://casework") as c,
    ):
        yield c


@pytest.fixture
async def client(test_database: TestDatabase) -> AsyncIterator[httpx.AsyncClient]:
    async with in_process_client(test_database, dev=False) as c:
        yield c


def graphql_caller(client: httpx.AsyncClient) -> GraphQL:
    """POSTs an operation with a bearer token; returns the JSON body of a 200."""

    async def run(token: str, query: str, **variables: Any) -> dict[str, Any]:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    return run


@pytest.fixture
def gql(client: httpx.AsyncClient) -> GraphQL:
    """POSTs an operation with a bearer token; returns the JSON body of a 200."""
    return graphql_caller(client)


SETUP_QUEUES = """
mutation {
  senior: configureQueue(input: {name: "kyc-senior"}) { __typename }
  kyc: configureQueue(input: {name: "kyc", escalationQueue: "kyc-senior"}) { __typename }
  ok: defineReasonCode(input: {queue: "kyc", code: "documents_ok", label: "Documents match",
                               verdicts: [APPROVE]}) { __typename }
  bad: defineReasonCode(input: {queue: "kyc", code: "name_mismatch", label: "Name mismatch",
                                verdicts: [REJECT]}) { __typename }
  senior_ok: defineReasonCode(input: {queue: "kyc-senior", code: "documents_ok",
                                      label: "Documents match", verdicts: [APPROVE]}) { __typename }
}
"""


@pytest.fixture
async def kyc(gql: GraphQL, tokens: Tokens) -> str:
    body = await gql(tokens.admin, SETUP_QUEUES)
    typenames = {result["__typename"] for result in body["data"].values()}
    assert typenames == {"QueueConfigured", "ReasonCodeDefined"}, body
    return "kyc"
