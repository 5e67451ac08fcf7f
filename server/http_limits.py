"""Bounded HTTP request bodies, decided before any GraphQL work: size, then JSON nesting.

An ASGI middleware rather than a check in the view: the view (Strawberry, then Starlette's
`Request.body()`) reads the whole body before anything can look at it, so a 50 MB body would
already be in memory, and `json.loads` of a 100,000-deep body raises RecursionError (a 500).
Websocket traffic passes untouched: its frames are bounded by the server (uvicorn's
`ws_max_size`) and it carries no request body.
"""

from __future__ import annotations

import asyncio
from itertools import accumulate

from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.graphql.codes import ErrorCode, error_body

# Deeper than any request the schema needs: the envelope ({"variables": {"items": [{"payload":
# ...) takes 4 levels, and JSON scalar values are bounded to MAX_JSON_VALUE_DEPTH inside it.
MAX_JSON_DEPTH = 64

_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
# An opening bracket as +1, a closing one as -1 (0xFF read as a signed byte).
_AS_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
# Bodies are scanned a slice at a time, so no step holds more than a slice's worth of copies.
_SLICE = 1 << 20
# Above this, the scan runs in a worker thread: it holds the GIL only in short C calls, so the
# event loop keeps answering other clients (/healthz too) while it runs.
SCAN_IN_THREAD_BYTES = 1 << 20


def json_nesting_within(body: bytes, limit: int) -> bool:
    """Whether `body` nests arrays and objects at most `limit` deep (counting an unclosed
    bracket too: a body that never closes is not JSON and is refused the same way).

    Hand-written because the json module has no depth limit and recurses once per level (a
    deep body raises RecursionError), and its hooks run only after that recursion. This
    never recurses: escaped backslashes and quotes are dropped (pairing backslashes left to
    right, as JSON does), so every quote left opens or closes a string; splitting on quotes
    leaves what is outside strings; of that only the brackets are kept, as +1/-1 steps, and
    their running sum is the depth. All but the last step are C-speed bytes operations;
    the running sum costs about as much as json.loads of the same body.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return True
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    depth = 0
    in_string = False
    for start in range(0, len(body), _SLICE):
        pieces = body[start : start + _SLICE].split(b'"')
        outside = b"".join(pieces[1::2] if in_string else pieces[0::2])
        if len(pieces) % 2 == 0:
            in_string = not in_string
        steps = outside.translate(_AS_STEPS, _NOT_BRACKETS)
        opens = steps.count(1)
        if (
            depth + opens > limit
            and max(accumulate(memoryview(steps).cast("b"), initial=depth)) > limit
        ):
            return False
        depth += 2 * opens - len(steps)
    return True


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def _is_json(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return b"json" in value.lower()
    return False


class BodyLimit:
    """413 for a body above `max_body_bytes` (by its Content-Length before reading anything,
    or as soon as the bytes read pass the limit: reading stops there), 400 for JSON nested
    deeper than `max_json_depth`. Both answer a JSON error body, as GraphQL errors do.

    An accepted body is handed on as one message, and this middleware keeps no reference to
    it: once Starlette's `Request.body()` has joined it, the body is held once.
    """

    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, max_json_depth: int = MAX_JSON_DEPTH
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                # The client went away: let the application see the disconnect.
                await self.app(scope, replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._too_large(scope, receive, send)
                return
            if chunk:
                chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        del chunks
        if _is_json(scope) and not await self._nesting_within(body):
            refusal = f"the request body nests JSON deeper than {self.max_json_depth} levels"
            response = JSONResponse(error_body(ErrorCode.BAD_REQUEST, refusal), status_code=400)
            await response(scope, receive, send)
            return
        replayed = replay([{"type": "http.request", "body": body, "more_body": False}], receive)
        # Once Starlette has read the message, its own copy is the only one left.
        del body
        await self.app(scope, replayed, send)

    async def _nesting_within(self, body: bytes) -> bool:
        if len(body) > SCAN_IN_THREAD_BYTES:
            return await asyncio.to_thread(json_nesting_within, body, self.max_json_depth)
        return json_nesting_within(body, self.max_json_depth)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body is larger than {self.max_body_bytes} bytes"
        response = JSONResponse(error_body(ErrorCode.LIMIT_EXCEEDED, message), status_code=413)
        await response(scope, receive, send)


def replay(queued: list[Message], receive: Receive) -> Receive:
    """A receive that gives the messages already read, then defers to the real one."""

    async def replayed() -> Message:
        if queued:
            return queued.pop(0)
        return await receive()

    return replayed


def body_limit(max_body_bytes: int) -> Middleware:
    """The middleware as Starlette's `middleware=[...]` takes it."""
    return Middleware(BodyLimit, max_body_bytes=max_body_bytes)
