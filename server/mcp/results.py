"""How the tools answer: the outcome as structured content and as text; a refusal as a
tool error naming its code."""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CallToolResult, TextContent

from server.domain.failures import InvalidInput, NotFound, NotPermitted
from server.mcp.reviews import Outcome, Refusal


def answered(outcome: Outcome, *, created: bool | None = None) -> CallToolResult:
    data = outcome.as_json()
    if created is not None:
        data["created"] = created
    return result(data, f"{outcome.summary()}\n{json.dumps(data)}")


def refused(refusal: Refusal) -> CallToolResult:
    code = {NotPermitted: "NOT_PERMITTED", InvalidInput: "INVALID_INPUT", NotFound: "NOT_FOUND"}[
        type(refusal)
    ]
    error: dict[str, Any] = {"code": code, "message": refusal.message}
    if isinstance(refusal, InvalidInput) and refusal.field:
        error["field"] = refusal.field
    body = {"error": error}
    return result(body, f"{code}: {refusal.message}\n{json.dumps(body)}", is_error=True)


def result(data: dict[str, Any], text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=data,
        is_error=is_error,
    )
