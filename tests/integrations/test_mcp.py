"""`casework mcp` driven by the MCP SDK's own client: over streamable HTTP (the app served by
uvicorn on a free port, in this process) and over stdio (the real command, as an agent host
starts it). The reviewer's side goes through the domain, as the console's would."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters

from server.config import REPO_ROOT, Settings
from server.domain.identity.tokens import revoke_tokens
from server.domain.model import Verdict
from server.mcp.service import TOKEN_VARIABLE
from server.store.database import Database
from tests.api.live_server import run_casework
from tests.conftest import TestDatabase
from tests.docs.helpers import code_blocks, section
from tests.integrations.mcp_support import (
    BOUND_SECONDS,
    Tokens,
    claim_item,
    claim_when_enqueued,
    data,
    decide,
    http_client,
    mcp_url,
    served_http,
    tokens,
)

__all__ = ["mcp_url", "tokens"]  # fixtures

INTEGRATIONS_DOC = REPO_ROOT / "docs" / "integrations.md"


async def ask(client: Client, key: str, **extra: Any) -> dict[str, Any]:
    result = await client.call_tool(
        "request_human_review",
        {
            "queue": "kyc",
            "question": "Does the passport match the applicant?",
            "payload": {"applicant": "A-17"},
            "external_key": key,
            **extra,
        },
    )
    assert not result.is_error, result
    return data(result)


async def test_the_three_tools_over_http(mcp_url: str, tokens: Tokens, db: Database) -> None:
    async with http_client(mcp_url, tokens.agent) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"request_human_review", "get_decision", "list_queues"}
        queues = data(await client.call_tool("list_queues", {}))["queues"]
        assert {"kyc", "kyc-senior"} <= {q["name"] for q in queues}

        asked = await ask(client, "ticket-1")
        assert asked["status"] == "pending"
        assert asked["created"] is True
        assert asked["decision"] is None
        # The same key is the same item: an agent may retry.
        again = await ask(client, "ticket-1")
        assert (again["item_id"], again["created"]) == (asked["item_id"], False)

        # Waiting: nobody has decided within the timeout, which is said as such.
        waited = data(
            await client.call_tool(
                "get_decision", {"item_id": asked["item_id"], "timeout_seconds": 0.2}
            )
        )
        assert waited["status"] == "timed_out"
        assert waited["decision"] is None
        assert waited["waited_seconds"] >= 0.2

        # A waiter is answered by the decision made while it waits.
        waiter = asyncio.create_task(
            client.call_tool(
                "get_decision",
                {"item_id": asked["item_id"], "timeout_seconds": BOUND_SECONDS},
            )
        )
        claim = await claim_item(db, asked["item_id"])
        await decide(db, claim, Verdict.REJECT, "name_mismatch")
        decided = data(await asyncio.wait_for(waiter, BOUND_SECONDS))
        assert decided["status"] == "decided"
        decision = decided["decision"]
        assert (decision["verdict"], decision["reason_code"], decision["reviewer"]) == (
            "reject",
            "name_mismatch",
            "rita",
        )
        assert decision["note"] == "checked the passport"


async def test_the_documented_outcome_is_what_a_tool_answers(
    mcp_url: str, tokens: Tokens, db: Database
) -> None:
    """docs/integrations.md shows one decided outcome: same keys, same kinds of values."""
    documented = json.loads(code_blocks(section(INTEGRATIONS_DOC, "### The tools"), "json")[0])
    async with http_client(mcp_url, tokens.agent) as client:
        asked = await ask(client, "ticket-7")
        await decide(db, await claim_item(db, asked["item_id"]), Verdict.APPROVE, "documents_ok")
        answered = data(await client.call_tool("get_decision", {"item_id": asked["item_id"]}))
    assert answered.keys() == documented.keys()
    assert answered["decision"].keys() == documented["decision"].keys()
    for shown, real in ((documented, answered), (documented["decision"], answered["decision"])):
        for key, value in shown.items():
            assert type(real[key]) is type(value), key


async def test_request_that_waits_for_the_decision(
    mcp_url: str, tokens: Tokens, db: Database
) -> None:
    async with http_client(mcp_url, tokens.agent) as client:
        waiting = asyncio.create_task(ask(client, "ticket-2", wait=True, timeout_seconds=30))
        claim = await claim_when_enqueued(db)
        await decide(db, claim, Verdict.APPROVE, "documents_ok")
        answered = await asyncio.wait_for(waiting, BOUND_SECONDS)
        assert answered["status"] == "decided"
        assert answered["decision"]["verdict"] == "approve"
        assert answered["item_id"] == str(claim.item.id)


async def test_a_timeout_is_never_an_approval(mcp_url: str, tokens: Tokens) -> None:
    async with http_client(mcp_url, tokens.agent) as client:
        result = await client.call_tool(
            "request_human_review",
            {"queue": "kyc", "question": "Refund?", "wait": True, "timeout_seconds": 0.3},
        )
    answered = data(result)
    assert not result.is_error
    assert answered["status"] == "timed_out"
    assert answered["decision"] is None
    assert "NOT an approval" in result.content[0].text  # type: ignore[union-attr]


async def test_refusals(mcp_url: str, tokens: Tokens, db: Database) -> None:
    # No token, or a wrong one: refused before the MCP layer, as /graphql refuses.
    async with httpx2.AsyncClient() as raw:
        for headers in ({}, {"Authorization": "Bearer cw_not-a-token"}):
            response = await raw.post(mcp_url, json={}, headers=headers)
            assert response.status_code == 401, response.text
            assert response.headers["www-authenticate"] == "Bearer"

    async with http_client(mcp_url, tokens.agent) as client:
        asked = await ask(client, "ticket-4")

    async with http_client(mcp_url, tokens.reviewer) as client:
        refused = await client.call_tool(
            "request_human_review", {"queue": "kyc", "question": "?", "payload": {}}
        )
        assert refused.is_error
        assert data(refused)["error"]["code"] == "NOT_PERMITTED"

    async with http_client(mcp_url, tokens.scoped_elsewhere) as client:
        refused = await client.call_tool(
            "request_human_review", {"queue": "kyc", "question": "?", "payload": {}}
        )
        assert data(refused)["error"] == {
            "code": "NOT_PERMITTED",
            "message": "your token does not cover queue 'kyc'",
        }
        # Another team's item reads as missing, as an unknown id does.
        for item_id in (asked["item_id"], "999999"):
            missing = await client.call_tool("get_decision", {"item_id": item_id})
            assert data(missing)["error"]["code"] == "NOT_FOUND"
        assert data(await client.call_tool("list_queues", {}))["queues"] == []

    async with http_client(mcp_url, tokens.agent) as client:
        bad = await client.call_tool(
            "request_human_review",
            {"queue": "kyc", "question": "?", "payload": {"question": "other"}},
        )
        assert data(bad)["error"]["field"] == "payload.question"
        too_long = await client.call_tool(
            "get_decision", {"item_id": asked["item_id"], "timeout_seconds": 10**9}
        )
        assert data(too_long)["error"]["field"] == "timeout_seconds"


async def test_a_client_of_the_2025_protocol(mcp_url: str, tokens: Tokens, db: Database) -> None:
    """Hosts of today still speak 2025-11-25 (the initialize handshake): the same tools."""
    async with http_client(mcp_url, tokens.agent, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        asked = await ask(client, "ticket-6")
        claim = await claim_item(db, asked["item_id"])
        await decide(db, claim, Verdict.APPROVE, "documents_ok")
        answered = await ask(client, "ticket-6", wait=True, timeout_seconds=BOUND_SECONDS)
        assert answered["status"] == "decided"
        assert answered["created"] is False


async def test_a_revoked_token_stops_at_once(
    test_database: TestDatabase, tokens: Tokens, owner_db: Database
) -> None:
    # No cache: the next request after the revocation is refused.
    settings = replace(Settings.from_env(), token_cache_seconds=0)
    async with served_http(test_database, settings) as url:
        async with http_client(url, tokens.agent) as client:
            assert not (await client.call_tool("list_queues", {})).is_error
        assert await revoke_tokens(owner_db, "support-agent") == 1
        async with httpx2.AsyncClient() as raw:
            response = await raw.post(
                url, json={}, headers={"Authorization": f"Bearer {tokens.agent}"}
            )
        assert response.status_code == 401


def stdio_env(test_database: TestDatabase, token: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": test_database.owner_dsn,
        TOKEN_VARIABLE: token,
        "CASEWORK_TOKEN_CACHE_SECONDS": "0",
    }
    env.pop("CASEWORK_APP_DATABASE_URL", None)
    return env


async def test_the_tools_over_stdio(
    test_database: TestDatabase, tokens: Tokens, db: Database, owner_db: Database
) -> None:
    command = StdioServerParameters(
        command=sys.executable,
        args=["-m", "server.cli", "mcp"],
        env=stdio_env(test_database, tokens.agent),
    )
    async with Client(command, read_timeout_seconds=BOUND_SECONDS) as client:
        queues = data(await client.call_tool("list_queues", {}))["queues"]
        assert {"kyc", "kyc-senior"} <= {q["name"] for q in queues}
        asked = await ask(client, "ticket-5")
        waiter = asyncio.create_task(
            client.call_tool(
                "get_decision", {"item_id": asked["item_id"], "timeout_seconds": BOUND_SECONDS}
            )
        )
        claim = await claim_item(db, asked["item_id"])
        await decide(db, claim, Verdict.APPROVE, "documents_ok")
        decided = data(await asyncio.wait_for(waiter, BOUND_SECONDS))
        assert decided["status"] == "decided"
        assert decided["decision"]["verdict"] == "approve"

        # The process's one token is checked on every call: revoked, the tools refuse.
        assert await revoke_tokens(owner_db, "support-agent") == 1
        refused = await client.call_tool("list_queues", {})
        assert refused.is_error
        assert data(refused)["error"]["code"] == "NOT_PERMITTED"


async def test_stdio_refuses_to_start_without_a_working_token(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    for token in ("", "cw_not-a-token"):
        run = await run_casework(stdio_env(test_database, token), "mcp")
        assert run.code == 2, run
        assert run.stdout == ""
        assert TOKEN_VARIABLE in run.stderr
