"""A webhook receiver on 127.0.0.1 for the apply tests: real HTTP/1.1 over TCP, keep-alive
included, so the worker's httpx client meets timeouts, refusals and dropped connections as
it would in production.

It records every request (its Idempotency-Key, body, and whether its Casework-Signature
verifies with the shared secret) and answers as its policy says: a reply, a stall (nothing,
until the client gives up and closes the connection), or a hold (nothing until the test
releases it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from server.signatures import SIGNATURE_HEADER, verify_signature

# How long a stall waits for the client to close before closing itself: far past any effect
# timeout the tests configure.
STALL_LIMIT_SECONDS = 30.0
REASONS = {200: "OK", 400: "Bad Request", 429: "Too Many Requests", 503: "Service Unavailable"}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    # Header names in lower case.
    headers: dict[str, str]
    body: bytes
    # time.monotonic() when the body had arrived.
    received_at: float
    signature_ok: bool

    @property
    def key(self) -> str:
        return self.headers.get("idempotency-key", "")

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


@dataclass(frozen=True)
class Reply:
    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


@dataclass(frozen=True)
class Stall:
    """Answer nothing: the client's timeout ends the request."""


@dataclass(frozen=True)
class Hold:
    """Answer `reply` once the test sets `release`."""

    release: asyncio.Event
    reply: Reply = Reply(200)


Action = Reply | Stall | Hold
Policy = Callable[[Request], Action]

OK = Reply(200, body=b'{"ok":true}')


def always(action: Action) -> Policy:
    return lambda request: action


@dataclass
class Receiver:
    secret: str
    policy: Policy
    url: str = ""
    requests: list[Request] = field(default_factory=list)
    # (request, status) of every reply sent; stalls and unanswered holds are absent.
    replies: list[tuple[Request, int]] = field(default_factory=list)
    # Each request as it arrives, for a test that waits for one.
    arrivals: asyncio.Queue[Request] = field(default_factory=asyncio.Queue)
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    _connections: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def keys(self) -> set[str]:
        return {request.key for request in self.requests}

    def requests_for(self, key: str | int) -> list[Request]:
        return [request for request in self.requests if request.key == str(key)]

    @property
    def bad_signatures(self) -> list[Request]:
        return [request for request in self.requests if not request.signature_ok]

    async def next_arrival(self, within: float = 15.0) -> Request:
        return await asyncio.wait_for(self.arrivals.get(), within)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while request := await self._read_request(reader):
                self.requests.append(request)
                self.arrivals.put_nowait(request)
                action = self.policy(request)
                if isinstance(action, Stall):
                    # Until the client times out and closes its end (or the limit passes).
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(reader.read(), STALL_LIMIT_SECONDS)
                    return
                if isinstance(action, Hold):
                    await action.release.wait()
                    action = action.reply
                writer.write(_encode(action))
                await writer.drain()
                self.replies.append((request, action.status))
                if request.headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.discard(task)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader) -> Request | None:
        request_line = await reader.readline()
        if not request_line.strip():
            return None
        method, path, _version = request_line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = await reader.readexactly(length) if length else b""
        signature = headers.get(SIGNATURE_HEADER.lower(), "")
        return Request(
            method=method,
            path=path,
            headers=headers,
            body=body,
            received_at=time.monotonic(),
            signature_ok=verify_signature(self.secret, signature, body),
        )

    async def close_connections(self) -> None:
        """Ends every connection, a held or stalled one included."""
        for writer in list(self._writers):
            writer.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections))


def _encode(reply: Reply) -> bytes:
    head = [f"HTTP/1.1 {reply.status} {REASONS.get(reply.status, 'Status')}"]
    head += [f"{name}: {value}" for name, value in reply.headers]
    head += [f"Content-Length: {len(reply.body)}", "Content-Type: application/json", "", ""]
    return "\r\n".join(head).encode("latin-1") + reply.body


@asynccontextmanager
async def webhook_receiver(secret: str, policy: Policy | None = None) -> AsyncIterator[Receiver]:
    """A receiver listening on a free port of 127.0.0.1; its `url` is the webhook target."""
    receiver = Receiver(secret, policy or always(OK))
    server = await asyncio.start_server(receiver._serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    receiver.url = f"http://127.0.0.1:{port}/casework/decisions"
    try:
        yield receiver
    finally:
        server.close()
        await receiver.close_connections()
        await server.wait_closed()
