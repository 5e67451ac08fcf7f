"""The MCP server: three tools over `HumanReviews`, one implementation for every transport.

A tool answers with a `CallToolResult` whose `structuredContent` is the outcome (the same
JSON the text block carries). A refusal (a queue the token does not cover, bad input, an
item it cannot see) is a tool error (`isError`) with `{"error": {"code", "message"}}`.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.mcp.callers import Callers
from server.mcp.results import answered, refused, result
from server.mcp.reviews import (
    DEFAULT_WAIT_SECONDS,
    MAX_WAIT_SECONDS,
    HumanReviews,
    Outcome,
    check_wait,
)
from server.mcp.tasks import ReviewTasks

SERVER_NAME = "casework"
INSTRUCTIONS = (
    "Casework hands review items to people and records what they decided. Use "
    "request_human_review to ask a person (it returns the item id at once, or waits for the "
    "decision when wait is true), get_decision to read an item's outcome later, and "
    "list_queues to see where you may send items. An outcome of timed_out or pending means "
    "no person has decided: never treat it as an approval."
)

REQUEST_DESCRIPTION = (
    "Ask a person to review something: enqueues an item to `queue` with `payload` (a JSON "
    "object shown to the reviewer) and `question` (stored as payload.question). Idempotent on "
    "`external_key`: the same key returns the same item, so pass one to retry safely. With "
    "wait=false (the default) it answers at once with status `pending` and the item_id. With "
    f"wait=true it waits up to timeout_seconds (default {DEFAULT_WAIT_SECONDS:g}, at most "
    f"{MAX_WAIT_SECONDS}) for the decision: status `decided` with the decision, or "
    "`timed_out`, which is NOT an approval. A client of the MCP tasks extension gets a task "
    "to poll instead of a held request."
)


def build_server(reviews: HumanReviews, callers: Callers) -> MCPServer:
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="Casework",
        instructions=INSTRUCTIONS,
        extensions=[ReviewTasks(reviews, callers)],
    )

    @server.tool(
        name="request_human_review",
        description=REQUEST_DESCRIPTION,
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
    )
    async def request_human_review(
        ctx: Context,
        queue: str,
        question: str,
        payload: dict[str, Any] | None = None,
        external_key: str | None = None,
        subject_ref: str | None = None,
        priority: int = 0,
        wait: bool = False,
        timeout_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> CallToolResult:
        principal = await callers.principal(ctx.request_context.request)
        if isinstance(principal, NotPermitted):
            return refused(principal)
        if problem := check_wait(timeout_seconds):
            return refused(problem)
        requested = await reviews.request(
            principal,
            queue=queue,
            question=question,
            payload=payload,
            external_key=external_key,
            subject_ref=subject_ref,
            priority=priority,
        )
        if isinstance(requested, NotPermitted | InvalidInput | NotFound):
            return refused(requested)
        if wait:
            outcome = await reviews.wait(principal, requested.item.id, timeout_seconds)
        else:
            outcome = await reviews.outcome(principal, requested.item.id)
        if isinstance(outcome, NotPermitted | InvalidInput | NotFound):
            return refused(outcome)
        return answered(outcome, created=requested.created)

    @server.tool(
        name="get_decision",
        description="Where a requested review stands: status `decided` with the decision "
        "(verdict approve or reject, reason_code, reviewer, decided_at), or `pending`. With "
        "timeout_seconds > 0, waits up to that long for a decision (`timed_out` after).",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def get_decision(
        ctx: Context, item_id: str, timeout_seconds: float = 0
    ) -> CallToolResult:
        principal = await callers.principal(ctx.request_context.request)
        if isinstance(principal, NotPermitted):
            return refused(principal)
        if problem := check_wait(timeout_seconds):
            return refused(problem)
        found = await reviews.outcome(principal, item_id)
        if isinstance(found, Outcome) and found.status != "decided" and timeout_seconds > 0:
            found = await reviews.wait(principal, found.item.id, timeout_seconds)
        if isinstance(found, NotPermitted | InvalidInput | NotFound):
            return refused(found)
        return answered(found)

    @server.tool(
        name="list_queues",
        description="The queues your token covers, where request_human_review may send items.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    async def list_queues(ctx: Context) -> CallToolResult:
        principal = await callers.principal(ctx.request_context.request)
        if isinstance(principal, NotPermitted):
            return refused(principal)
        queues = await reviews.queues(principal)
        return result({"queues": queues}, json.dumps({"queues": queues}))

    return server
