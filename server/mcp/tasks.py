"""MCP's long-running tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) for
`request_human_review` with wait=true.

A client that declares the extension on its request gets a task handle at once instead of a
request held open, and polls `tasks/get`. The task keeps no state of its own: its id names
the item, when the task began and its deadline, and every `tasks/get` re-reads the item as
the caller (so it survives a restart of this process, and any `casework mcp` behind the same
load balancer answers it). The id is a reference, not a secret: each call is checked against
the caller's credentials like `get_decision`. Before the deadline the task is `working`;
then `completed`, its result the tool's result: `decided`, or `timed_out` (never an
approval). `tasks/cancel` is acknowledged and changes nothing: the item stays in its queue
for a person to decide (nothing withdraws a requested review). No task asks for input, so
`tasks/update` is acknowledged and ignored.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, RequestParams
from pydantic import Field

from server.domain.failures import NotPermitted
from server.mcp.callers import Callers
from server.mcp.results import answered
from server.mcp.reviews import (
    DEFAULT_WAIT_SECONDS,
    MAX_WAIT_SECONDS,
    HumanReviews,
    Outcome,
    Refusal,
)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_ID_PREFIX = "cwreview"
POLL_INTERVAL_MS = 2000
WAITING_TOOL = "request_human_review"


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


@dataclass(frozen=True)
class TaskRef:
    item_id: int
    created_ms: int
    deadline_ms: int

    @property
    def task_id(self) -> str:
        return f"{TASK_ID_PREFIX}.{self.item_id}.{self.created_ms}.{self.deadline_ms}"

    @classmethod
    def parse(cls, task_id: str) -> TaskRef | None:
        parts = task_id.split(".")
        if len(parts) != 4 or parts[0] != TASK_ID_PREFIX:
            return None
        if not all(part.isascii() and part.isdigit() and len(part) <= 18 for part in parts[1:]):
            return None
        item_id, created_ms, deadline_ms = (int(part) for part in parts[1:])
        if item_id <= 0 or deadline_ms < created_ms:
            return None
        return cls(item_id, created_ms, deadline_ms)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities else None
    return bool(extensions) and TASKS_EXTENSION in (extensions or {})


class ReviewTasks(Extension):
    identifier = TASKS_EXTENSION

    def __init__(self, reviews: HumanReviews, callers: Callers) -> None:
        self._reviews = reviews
        self._callers = callers

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskParams, self._get),
            MethodBinding("tasks/update", UpdateTaskParams, self._acknowledge),
            MethodBinding("tasks/cancel", TaskParams, self._acknowledge),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        arguments = params.arguments
        if params.name != WAITING_TOOL or not arguments or arguments.get("wait") is not True:
            return await call_next(ctx)
        if not declared(ctx):
            return await call_next(ctx)
        # The tool itself enqueues (one implementation): told not to wait, it answers at once.
        arguments["wait"] = False
        started_ms = int(time.time() * 1000)
        answered = await call_next(ctx)
        if not isinstance(answered, CallToolResult) or answered.is_error:
            return answered
        data = answered.structured_content or {}
        if data.get("status") != "pending":
            # Already decided (the same external key, asked again): nothing to wait for.
            return answered
        timeout = arguments.get("timeout_seconds", DEFAULT_WAIT_SECONDS)
        if not isinstance(timeout, int | float) or not 0 <= timeout <= MAX_WAIT_SECONDS:
            timeout = DEFAULT_WAIT_SECONDS
        ref = TaskRef(int(data["item_id"]), started_ms, started_ms + int(timeout * 1000))
        return {
            "resultType": "task",
            **self._task(ref, "working", f"waiting for a person in queue {data['queue']!r}"),
        }

    def _task(self, ref: TaskRef, status: str, message: str) -> dict[str, Any]:
        return {
            "taskId": ref.task_id,
            "status": status,
            "statusMessage": message,
            "createdAt": _iso(ref.created_ms),
            "lastUpdatedAt": _iso(int(time.time() * 1000)),
            # The task is read from the item, which is kept: nothing expires it.
            "ttlMs": None,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    async def _found(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> tuple[TaskRef, Outcome]:
        if not declared(ctx):
            require_client_extension(ctx, TASKS_EXTENSION)
        ref = TaskRef.parse(params.task_id)
        if ref is None:
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        principal = await self._callers.principal(ctx.request)
        if isinstance(principal, NotPermitted):
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: {principal}")
        found: Outcome | Refusal = await self._reviews.outcome(principal, ref.item_id)
        if not isinstance(found, Outcome):
            raise MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")
        return ref, found

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        ref, found = await self._found(ctx, params)
        now_ms = int(time.time() * 1000)
        if found.status != "decided" and now_ms < ref.deadline_ms:
            return self._task(ref, "working", found.summary())
        if found.status != "decided":
            waited = round((now_ms - ref.created_ms) / 1000, 3)
            found = Outcome("timed_out", found.item, None, waited_seconds=waited)
        result = answered(found).model_dump(by_alias=True, mode="json", exclude_none=True)
        return {**self._task(ref, "completed", found.summary()), "result": result}

    async def _acknowledge(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> dict[str, Any]:
        await self._found(ctx, params)
        return {}
