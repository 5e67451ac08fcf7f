"""What both agent recipes share: asking Casework for a review through `casework mcp`, and
receiving the decision by webhook, verified (Standard Webhooks) before anything reads it.

    reviews = McpReviews("http://127.0.0.1:8001/mcp", token=os.environ["CASEWORK_TOKEN"])
    item_id = await reviews.ask("refunds", "Refund order 77?", {"order": 77}, key="dbos:refund-77")

    app = decision_receiver(secret="whsec_...", on_decision=my_handler)   # any ASGI server

A decision arrives at least once: as a queue's decision webhook (the decision's JSON) or as
an event endpoint's `decision.effective` event (`{"type", "timestamp", "data"}`). Both carry
`decisionId`, `itemId`, `externalKey` and `verdict`; `decision_of` returns that object.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

# Standard Webhooks: a delivery older (or newer) than this is refused, against replays.
TOLERANCE_SECONDS = 300
# The verdicts that end a review. An ESCALATE moves the item to another queue, where a
# person decides later: that later decision is the one to resume on.
FINAL_VERDICTS = frozenset({"APPROVE", "REJECT"})

Decision = dict[str, Any]


class McpReviews:
    """request_human_review and get_decision through the MCP SDK, over streamable HTTP."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self._headers = {"Authorization": f"Bearer {token}"}

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers=self._headers, timeout=30) as http,
            Client(streamable_http_client(self.url, http_client=http)) as client,
        ):
            result = await client.call_tool(tool, arguments)
        data = result.structured_content or {}
        if result.is_error:
            raise RuntimeError(f"{tool}: {data.get('error')}")
        return data

    async def ask(self, queue: str, question: str, payload: dict[str, Any], *, key: str) -> str:
        """Enqueues (idempotently on `key`: asking again returns the same item); the id."""
        answered = await self._call(
            "request_human_review",
            {"queue": queue, "question": question, "payload": payload, "external_key": key},
        )
        item_id: str = answered["item_id"]
        return item_id

    async def decision(self, item_id: str) -> dict[str, Any]:
        return await self._call("get_decision", {"item_id": item_id})


class InvalidSignature(Exception):
    pass


def verify(secret: str, headers: Mapping[str, str], body: bytes) -> None:
    """Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the
    bytes of `whsec_<base64>`; any of the space-separated signatures may match (a rotation
    sends two). Raises InvalidSignature."""
    message_id = headers.get("webhook-id")
    stamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not message_id or not stamp or not signatures or not stamp.isdigit():
        raise InvalidSignature("missing webhook-id, webhook-timestamp or webhook-signature")
    if abs(time.time() - int(stamp)) > TOLERANCE_SECONDS:
        raise InvalidSignature("webhook-timestamp is too far from now")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{stamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for candidate in signatures.split():
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return
    raise InvalidSignature("no signature matches")


def decision_of(body: dict[str, Any]) -> Decision | None:
    """The decision a delivery carries, or None for anything else (another event type)."""
    if "type" in body and "data" in body:
        if body["type"] != "decision.effective":
            return None
        body = body["data"]
    return body if "decisionId" in body and "externalKey" in body else None


def decision_receiver(secret: str, on_decision: Callable[[Decision], Awaitable[None]]) -> Starlette:
    """An ASGI app for the webhook target: verifies, then hands the decision on. It answers
    2xx only once `on_decision` returned, so a failure is delivered again (at least once);
    `on_decision` must therefore be idempotent, which each recipe makes it."""

    async def receive(request: Request) -> JSONResponse:
        body = await request.body()
        try:
            verify(secret, request.headers, body)
        except InvalidSignature as refusal:
            return JSONResponse({"error": str(refusal)}, status_code=401)
        decision = decision_of(json.loads(body))
        if decision is not None and decision["verdict"] in FINAL_VERDICTS:
            await on_decision(decision)
        return JSONResponse({"received": True})

    return Starlette(routes=[Route("/", receive, methods=["POST"])])
