"""The lean path for trusted documents answers exactly as the general path does.

Two applications over one database: the lean path on, and off (CASEWORK_LEAN_PATH=0, the
kill switch). Each request goes to both; the status, the headers and the body's bytes must
be the same, and the lean application must have answered it on its lean path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware

from server.app import create_app
from server.config import Settings
from server.config_documents import DocumentSettings
from server.graphql.documents.ids import document_id
from server.graphql.documents.manifest import load_manifests
from server.graphql.documents.requests import resolve_request
from server.graphql.schema import build_schema
from server.lean_graphql import LeanGraphQL, takes_lean_path
from server.observability import metrics
from server.observability.context import REQUEST_ID as REQUEST_ID_VAR
from tests.api.conftest import SETUP_QUEUES, Tokens
from tests.api.helpers import CLAIM, ENQUEUE
from tests.conftest import TestDatabase
from tests.lean.proxy import CuttableProxy, proxy_of

QUEUES = "{ queues { name } }"
ITEM = "query($id: ID!) { item(id: $id) { id state } }"
QUEUE = "query($name: String!) { queue(name: $name) { name } }"
DOCUMENTS = (QUEUES, ITEM, QUEUE, CLAIM, ENQUEUE, SETUP_QUEUES)
REQUEST_ID = "lean-path-test-0001"


@dataclass
class Pair:
    lean: httpx.AsyncClient
    general: httpx.AsyncClient
    lean_app: Starlette

    @property
    def answered(self) -> int:
        route: LeanGraphQL = self.lean_app.state.lean_graphql
        return route.answered

    async def both(
        self, token: str | None, query: str, headers: dict[str, str] | None = None, **variables: Any
    ) -> httpx.Response:
        """Sends one request to each; asserts the lean path answered it, byte for byte as
        the general path did; returns the lean answer."""
        sent = {"X-Request-ID": REQUEST_ID, **(headers or {})}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        body = {"query": query, "variables": variables}
        before = self.answered
        lean = await self.lean.post("/graphql", json=body, headers=sent)
        assert self.answered == before + 1, "the lean path did not answer"
        general = await self.general.post("/graphql", json=body, headers=sent)
        assert (lean.status_code, lean.headers.raw, lean.content) == (
            general.status_code,
            general.headers.raw,
            general.content,
        )
        return lean


def manifest(path: Path, *texts: str) -> Path:
    path.write_text(json.dumps({document_id(text): text for text in texts}))
    return path


def with_lean(settings: Settings, manifests: tuple[Path, ...], *, lean: bool) -> Settings:
    return replace(
        settings,
        documents=replace(settings.documents, manifests=manifests, lean_path=lean),
    )


@asynccontextmanager
async def two_apps(test_database: TestDatabase, tmp_path: Path) -> AsyncIterator[Pair]:
    """The lean path on and off, over one database, trusting DOCUMENTS."""
    manifests = (manifest(tmp_path / "lean-test.json", *DOCUMENTS),)
    settings = Settings.from_env()
    apps = [
        create_app(
            test_database.app_dsn, dev=False, settings=with_lean(settings, manifests, lean=lean)
        )
        for lean in (True, False)
    ]
    async with AsyncExitStack() as stack:
        clients = []
        for app in apps:
            await stack.enter_async_context(app.router.lifespan_context(app))
            clients.append(
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        transport=httpx.ASGITransport(app=app), base_url="http://casework"
                    )
                )
            )
        yield Pair(clients[0], clients[1], apps[0])


@pytest.fixture
async def pair(test_database: TestDatabase, tmp_path: Path) -> AsyncIterator[Pair]:
    async with two_apps(test_database, tmp_path) as pair:
        yield pair


async def test_a_value_a_union_member_and_a_null_are_the_same_bytes(
    pair: Pair, tokens: Tokens
) -> None:
    setup = await pair.lean.post(
        "/graphql",
        json={"query": SETUP_QUEUES},
        headers={"Authorization": f"Bearer {tokens.admin}"},
    )
    assert setup.status_code == 200, setup.text
    listed = await pair.both(tokens.admin, QUEUES)
    assert {"name": "kyc"} in listed.json()["data"]["queues"]
    # An empty queue: claimNext answers a member of its union.
    empty = await pair.both(tokens.reviewer, CLAIM, queue="kyc")
    assert empty.json()["data"]["claimNext"]["__typename"] != "Claim"
    missing = await pair.both(tokens.admin, ITEM, id="999999999")
    assert missing.json() == {"data": {"item": None}}
    assert missing.headers["x-request-id"] == REQUEST_ID


async def test_a_variables_error_is_the_same_bad_request(pair: Pair, tokens: Tokens) -> None:
    answer = await pair.both(tokens.manager, ITEM, id=[1, 2])
    assert answer.status_code == 200
    body = answer.json()
    assert body["data"] is None
    assert body["errors"][0]["extensions"] == {"code": "BAD_REQUEST"}


async def test_no_token_and_a_role_not_held_are_refused_alike(pair: Pair, tokens: Tokens) -> None:
    unauthenticated = await pair.both(None, QUEUES)
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["www-authenticate"] == "Bearer"
    forbidden = await pair.both(tokens.reviewer, QUEUES, {"X-Casework-Role": "admin"})
    assert forbidden.status_code == 403
    assert forbidden.json()["errors"][0]["extensions"] == {"code": "FORBIDDEN"}
    # In-band: a queue outside the caller's.
    outside = await pair.both(tokens.outsider, QUEUE, name="kyc")
    assert outside.status_code == 200


async def test_an_unexpected_error_is_masked_and_logged_once_in_full(
    pair: Pair,
    tokens: Tokens,
    owner_conn: asyncpg.Connection,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await pair.both(tokens.admin, QUEUES)  # the token is looked up, and cached, first
    await owner_conn.execute("REVOKE SELECT ON queues FROM casework_app")
    with caplog.at_level(logging.INFO):
        answer = await pair.both(tokens.admin, QUEUES)
    assert answer.json()["errors"][0]["message"] == "Unexpected error."
    assert answer.json()["errors"][0]["extensions"] == {"code": "INTERNAL"}
    logged = [r for r in caplog.records if r.name == "casework.graphql"]
    # Once per request, each with its traceback: one for each application.
    assert [r.levelno for r in logged] == [logging.ERROR, logging.ERROR]
    assert all(r.exc_info and "permission denied" in str(r.exc_info[1]) for r in logged)
    lines = [r.getMessage() for r in caplog.records if r.name == "casework.access"]
    assert len(lines) == 2
    assert all(line.startswith("graphql query queues error ") for line in lines), lines
    assert all("status=200" in line and "user=ada" in line for line in lines), lines


@pytest.fixture
async def cut_pair(
    test_database: TestDatabase, tmp_path: Path
) -> AsyncIterator[tuple[Pair, CuttableProxy]]:
    """Both applications reach PostgreSQL through a relay the test can cut (a TCP or a
    socket-file server alike: the embedded one listens on a socket file)."""
    async with proxy_of(test_database.app_dsn) as relay:
        relayed = replace(test_database, app_dsn=relay.dsn(test_database.app_dsn))
        async with two_apps(relayed, tmp_path) as pair:
            yield pair, relay


async def test_a_database_outage_is_unavailable_with_retry_after(
    cut_pair: tuple[Pair, CuttableProxy], tokens: Tokens
) -> None:
    pair, cable = cut_pair
    await pair.both(tokens.admin, QUEUES)  # each looks the token up, and caches it, first
    await cable.cut()
    answer = await pair.both(tokens.admin, QUEUES)
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "2"
    assert answer.json()["errors"][0]["extensions"] == {"code": "UNAVAILABLE"}


class RequestIdsSeen(logging.Filter):
    """The request id current as each access line is written (the log formats it)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str | None] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.seen.append(REQUEST_ID_VAR.get())
        return True


async def test_the_access_line_metrics_and_request_id_are_recorded(
    pair: Pair, tokens: Tokens, caplog: pytest.LogCaptureFixture
) -> None:
    timing = metrics.operation_seconds("query", "queues")
    counted = sum(bucket.get() for bucket in timing._buckets)
    access = logging.getLogger("casework.access")
    ids = RequestIdsSeen()
    access.addFilter(ids)
    try:
        with caplog.at_level(logging.INFO, logger="casework.access"):
            answer = await pair.both(tokens.admin, QUEUES)
    finally:
        access.removeFilter(ids)
    assert answer.headers["x-request-id"] == REQUEST_ID
    lines = [r.getMessage() for r in caplog.records if r.name == "casework.access"]
    assert [line.split(" ms ")[1] for line in lines] == ["user=ada role=admin status=200"] * 2
    assert all(line.startswith("graphql query queues ok ") for line in lines), lines
    assert ids.seen == [REQUEST_ID, REQUEST_ID]
    assert sum(bucket.get() for bucket in timing._buckets) == counted + 2


async def test_what_the_lean_path_leaves_to_the_general_one(pair: Pair, tokens: Tokens) -> None:
    auth = {"Authorization": f"Bearer {tokens.admin}"}
    before = pair.answered
    # Not a trusted document (a space more), a batch, not JSON. (This view streams
    # nothing over HTTP; takes_lean_path leaves a stream to the general path all the same.)
    untrusted = await pair.lean.post("/graphql", json={"query": QUEUES + " "}, headers=auth)
    assert untrusted.status_code == 200
    assert "queues" in untrusted.json()["data"]
    batch = await pair.lean.post("/graphql", json=[{"query": QUEUES}], headers=auth)
    broken = await pair.lean.post(
        "/graphql", content=b"{not json", headers=auth | {"Content-Type": "application/json"}
    )
    assert (batch.status_code, broken.status_code) == (400, 400)
    assert pair.answered == before


def test_the_decision_is_one_function(tmp_path: Path) -> None:
    two = "query Q { queues { name } } query M { me { user } }"
    subscription = 'subscription { queueBacklog(queue: "q") { queue } }'
    documents = load_manifests(
        [manifest(tmp_path / "m.json", QUEUES, two, subscription, CLAIM)], build_schema()
    )

    def decided(data: dict[str, Any], **request: Any) -> str | None:
        resolved = resolve_request(data, documents, DocumentSettings().mode)
        facts: dict[str, Any] = {
            "enabled": True,
            "method": "POST",
            "json_body": True,
            "streamed": False,
        }
        found = takes_lean_path(**(facts | request), resolved=resolved)
        return None if found is None else found.value

    assert decided({"query": QUEUES}) == "query"
    assert decided({"documentId": document_id(CLAIM), "variables": {"queue": "q"}}) == "mutation"
    assert decided({"query": two, "operationName": "M"}) == "query"
    # Which operation to run is the general path's question to answer, or refuse.
    assert decided({"query": two}) is None
    assert decided({"query": two, "operationName": "X"}) is None
    assert decided({"query": subscription}) is None
    assert decided({"query": QUEUES + " "}) is None
    assert decided({"query": QUEUES}, enabled=False) is None
    assert decided({"query": QUEUES}, method="GET") is None
    assert decided({"query": QUEUES}, json_body=False) is None
    assert decided({"query": QUEUES}, streamed=True) is None


def test_no_middleware_is_a_base_http_middleware(test_database: TestDatabase) -> None:
    app = create_app(test_database.app_dsn, dev=False, settings=Settings.from_env())
    assert app.user_middleware
    for middleware in app.user_middleware:
        assert not issubclass(middleware.cls, BaseHTTPMiddleware), middleware  # type: ignore[arg-type]
    layer: Any = app.build_middleware_stack()
    while layer is not None:
        assert not isinstance(layer, BaseHTTPMiddleware), layer
        layer = getattr(layer, "app", None)
