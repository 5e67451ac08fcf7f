"""What the MCP tests share: the tokens, the HTTP server on a free port, the SDK's client
and a reviewer who claims and decides what an agent asked for."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from server.config import Settings
from server.domain.failures import QueueEmpty
from server.domain.model import Claim, Decision, Principal, Role, Verdict
from server.domain.review.decisions import DecisionInput, submit_decision
from server.domain.review.leases import claim_next
from server.mcp.service import MCP_PATH, http_app
from server.store.database import Database
from tests.conftest import TestDatabase, reviewer, setup_kyc, token_maker

# Every wait in these tests is bounded by this; none is expected to come near it.
BOUND_SECONDS = 30.0
RITA = reviewer("rita", "kyc", "kyc-senior")


@dataclass(frozen=True)
class Tokens:
    agent: str
    scoped_elsewhere: str
    reviewer: str


@pytest.fixture
async def tokens(db: Database, owner_db: Database) -> Tokens:
    await setup_kyc(db)
    make = token_maker(owner_db)
    return Tokens(
        agent=await make("support-agent", Role.INTEGRATION),
        scoped_elsewhere=await make("payouts-agent", Role.INTEGRATION, "payouts"),
        reviewer=await make("rita", Role.REVIEWER, "kyc"),
    )


@asynccontextmanager
async def served_http(
    test_database: TestDatabase, settings: Settings | None = None
) -> AsyncIterator[str]:
    """`casework mcp --transport http`'s app under uvicorn on a free port: yields /mcp's URL."""
    app = http_app(test_database.app_dsn, settings or Settings.from_env(), host="127.0.0.1")
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    # Listening before uvicorn starts: a client that connects early waits in the backlog.
    listening.listen()
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
    serving = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        yield f"http://127.0.0.1:{port}{MCP_PATH}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, BOUND_SECONDS)
        listening.close()


@pytest.fixture
async def mcp_url(test_database: TestDatabase, tokens: Tokens) -> AsyncIterator[str]:
    async with served_http(test_database) as url:
        yield url


@asynccontextmanager
async def http_client(url: str, token: str, **options: Any) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending the token on every request."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=BOUND_SECONDS) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, read_timeout_seconds=BOUND_SECONDS, **options) as client:
            yield client


def data(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result
    # The text block carries the same JSON, for clients that read only text.
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text.splitlines()[-1]) == result.structured_content
    found: dict[str, Any] = result.structured_content
    return found


async def claim_item(db: Database, item_id: str, principal: Principal = RITA) -> Claim:
    """The reviewer claims the item; a claim skips a row another transaction holds (a
    concurrent re-request of the same key), so QueueEmpty is retried, within the bound."""
    claimed = await claim_when_enqueued(db, principal)
    assert str(claimed.item.id) == item_id
    return claimed


async def decide(db: Database, claim: Claim, verdict: Verdict, reason: str) -> None:
    decided = await submit_decision(
        db,
        RITA,
        DecisionInput(
            item_id=str(claim.item.id),
            lease_token=str(claim.lease_token),
            verdict=verdict,
            reason_code=reason,
            evidence_hash=claim.evidence_hash,
            note="checked the passport",
        ),
    )
    assert isinstance(decided, Decision), decided


async def claim_when_enqueued(db: Database, principal: Principal = RITA) -> Claim:
    """The next item, claimed once it is there (bounded): a waiting request's enqueue may
    not have committed yet, and a claim skips a row a concurrent re-request holds."""
    async with asyncio.timeout(BOUND_SECONDS):
        while True:
            claimed = await claim_next(db, principal, "kyc")
            if not isinstance(claimed, QueueEmpty):
                assert isinstance(claimed, Claim), claimed
                return claimed
            await asyncio.sleep(0.05)
