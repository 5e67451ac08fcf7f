"""Two Casework applications over one database, lean path on and off, asked the same thing.

Each is the real Starlette application with its lifespan (pool, listener, timers), called
in this process as an ASGI callable, the way bench/request_cost.py calls it: no sockets, so
what differs between the two answers is the application's doing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message

from server.app import create_app
from server.config import Settings
from tests.lean.wire import Answer, differences

# Both requests of a pair carry this id: each path must echo it unchanged.
REQUEST_ID = "lean-differential-0001"
# A token once looked up stays trusted for the whole module: an outage then fails the
# operation, not the token's lookup, in both applications alike.
TOKEN_CACHE_SECONDS = 3600.0


def paired_settings(base: Settings, *, lean_path: bool) -> Settings:
    return dataclasses.replace(
        base,
        documents=dataclasses.replace(base.documents, lean_path=lean_path),
        token_cache_seconds=TOKEN_CACHE_SECONDS,
    )


async def call(app: ASGIApp, body: bytes, headers: dict[str, str], method: str = "POST") -> Answer:
    """One HTTP request to /graphql, as a keep-alive client sends it."""
    raw_headers = [(b"host", b"casework"), (b"content-length", str(len(body)).encode())]
    raw_headers += [(name.lower().encode(), value.encode()) for name, value in headers.items()]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "query_string": b"",
        "root_path": "",
        "headers": raw_headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent = False
    status = 0
    answer_headers: dict[str, str] = {}
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent
        if sent:
            # The client stays connected until the answer is complete.
            await asyncio.Event().wait()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            for name, value in message.get("headers", ()):
                answer_headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return Answer(status, answer_headers, b"".join(chunks))


def graphql_body(query: str | None, variables: object, **more: Any) -> bytes:
    """The JSON body a client sends. `json` escapes lone surrogates, which a test may send."""
    payload: dict[str, Any] = {"query": query} if query is not None else {}
    if variables is not None:
        payload["variables"] = variables
    payload.update(more)
    return json.dumps(payload).encode()


def bearer(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "X-Request-ID": REQUEST_ID,
    }


@dataclass
class Pair:
    lean: ASGIApp
    general: ASGIApp

    async def ask(
        self,
        body: bytes,
        headers: dict[str, str],
        *,
        between: Callable[[], Awaitable[None]] | None = None,
    ) -> tuple[Answer, Answer]:
        """The same request to both; `between` runs after the first (a database restore)."""
        lean = await call(self.lean, body, headers)
        if between is not None:
            await between()
        general = await call(self.general, body, headers)
        return lean, general

    async def compare(
        self,
        body: bytes,
        headers: dict[str, str],
        *,
        mutation: bool = False,
        restore: Callable[[], Awaitable[None]] | None = None,
        attempts: int = 3,
    ) -> tuple[Answer, list[str]]:
        """The lean path's answer and what differs from the general path's.

        Some answers read the clock (an age in seconds, whether an item is overdue): a pair
        straddling a second may differ. A real divergence of the paths repeats on every
        attempt, so a pair that differs is asked again, up to `attempts` times; for a
        mutation the database is restored after each request.
        """
        found: list[str] = []
        lean: Answer | None = None
        for _ in range(attempts):
            # The database is as the snapshot has it when a pair starts, and again after.
            lean, general = await self.ask(body, headers, between=restore)
            if restore is not None:
                await restore()
            found = differences(lean, general, fresh_values=mutation)
            if not found:
                break
        assert lean is not None
        return lean, found


@asynccontextmanager
async def paired_apps(app_dsn: str, base: Settings) -> AsyncIterator[Pair]:
    """create_app twice over one database: CASEWORK_LEAN_PATH=1 and =0."""
    lean = create_app(app_dsn, dev=False, settings=paired_settings(base, lean_path=True))
    general = create_app(app_dsn, dev=False, settings=paired_settings(base, lean_path=False))
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(lean.router.lifespan_context(lean))
        await stack.enter_async_context(general.router.lifespan_context(general))
        yield Pair(lean, general)
