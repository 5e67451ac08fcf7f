"""request_human_review with wait=true as an MCP task (the io.modelcontextprotocol/tasks
extension), for a client that declares the extension; the SDK's client, over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import anyio
import pytest
from mcp.client import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    GetTaskRequest,
    GetTaskRequestParams,
    Result,
)
from pydantic import ConfigDict

from server.domain.model import Verdict
from server.mcp.tasks import TASKS_EXTENSION
from server.store.database import Database
from tests.integrations.mcp_support import (
    BOUND_SECONDS,
    Tokens,
    claim_item,
    data,
    decide,
    http_client,
    mcp_url,
    tokens,
)

__all__ = ["mcp_url", "tokens"]  # fixtures


class TaskHandle(Result):
    """CreateTaskResult: a task in lieu of the tool's result."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskState(Result):
    """tasks/get's answer: the task, and its result once completed."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None


async def get_task(ctx_session: Any, task_id: str) -> TaskState:
    request = GetTaskRequest(params=GetTaskRequestParams(task_id=task_id))
    state: TaskState = await ctx_session.send_request(request, TaskState)
    return state


class Tasks(ClientExtension):
    """What a tasks-aware host does: declares the extension, and polls a task to its end."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.polls = 0

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self._resolve)]

    async def _resolve(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        with anyio.fail_after(BOUND_SECONDS):
            while True:
                state = await get_task(ctx.session, handle.task_id)
                self.polls += 1
                if state.status == "completed":
                    assert state.result is not None
                    return CallToolResult.model_validate(state.result)
                # The server's interval is for agents; a test polls faster.
                await anyio.sleep(0.05)


ASK = {"queue": "kyc", "question": "Refund order 77?", "payload": {"order": 77}}


async def test_a_task_instead_of_a_held_request(mcp_url: str, tokens: Tokens, db: Database) -> None:
    async with http_client(mcp_url, tokens.agent, extensions=[Tasks()]) as client:
        handle = await client.session.call_tool(
            "request_human_review",
            {**ASK, "external_key": "order-77", "wait": True, "timeout_seconds": 600},
            allow_claimed=True,
        )
        assert isinstance(handle, TaskHandle), handle
        assert handle.status == "working"
        # The item is there as soon as the task is: a person may take it.
        item_id = handle.task_id.split(".")[1]
        working = await get_task(client.session, handle.task_id)
        assert working.status == "working"
        assert working.result is None
        assert "waits for a decision" in (working.status_message or "")

        claim = await claim_item(db, item_id)
        await decide(db, claim, Verdict.APPROVE, "documents_ok")
        done = await get_task(client.session, handle.task_id)
        assert done.status == "completed"
        assert done.result is not None
        answered = data(CallToolResult.model_validate(done.result))
        assert answered["status"] == "decided"
        assert answered["decision"]["verdict"] == "approve"

        # Cancelling is acknowledged; the decision stands.
        await client.session.send_request(
            _cancel(handle.task_id),
            TaskState.__base__,  # type: ignore[arg-type]
        )
        with pytest.raises(MCPError) as unknown:
            await get_task(client.session, "cwreview.999999.1.2")
        assert unknown.value.code == INVALID_PARAMS


def _cancel(task_id: str) -> Any:
    from mcp_types import CancelTaskRequest, CancelTaskRequestParams

    return CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id))


async def test_the_task_times_out_without_approving(mcp_url: str, tokens: Tokens) -> None:
    tasks = Tasks()
    async with http_client(mcp_url, tokens.agent, extensions=[tasks]) as client:
        # The SDK's call_tool resolves the claimed task through the extension.
        result = await client.call_tool(
            "request_human_review", {**ASK, "wait": True, "timeout_seconds": 0.3}
        )
    answered = data(result)
    assert answered["status"] == "timed_out"
    assert answered["decision"] is None
    assert not result.is_error
    assert tasks.polls >= 1


async def test_a_task_follows_the_decision_made_while_polling(
    mcp_url: str, tokens: Tokens, db: Database
) -> None:
    tasks = Tasks()
    async with http_client(mcp_url, tokens.agent, extensions=[tasks]) as client:
        asked = data(await client.call_tool("request_human_review", {**ASK, "external_key": "o-8"}))
        polling = asyncio.create_task(
            client.call_tool(
                "request_human_review",
                {**ASK, "external_key": "o-8", "wait": True, "timeout_seconds": 600},
            )
        )
        claim = await claim_item(db, asked["item_id"])
        await decide(db, claim, Verdict.REJECT, "name_mismatch")
        answered = data(await asyncio.wait_for(polling, BOUND_SECONDS))
    assert answered["status"] == "decided"
    assert answered["decision"]["verdict"] == "reject"


async def test_without_the_extension_the_request_is_held(mcp_url: str, tokens: Tokens) -> None:
    async with http_client(mcp_url, tokens.agent) as client:
        result = await client.call_tool(
            "request_human_review", {**ASK, "wait": True, "timeout_seconds": 0.2}
        )
    assert data(result)["status"] == "timed_out"
