"""A webhook receiver on 127.0.0.1 for the apply tests: real HTTP/1.1 over TCP, keep-alive
included, so the worker's HTTP client meets timeouts, refusals and dropped connections as
it would in production.

It records every request (its webhook-id, body, and whether it verifies with the shared
secret) and answers as its policy says: a reply, a stall (nothing, until the client gives up
and closes the connection), or a hold (nothing until the test releases it).

Every request is verified with PyPI's `standardwebhooks` (the Standard Webhooks reference
verifier), configured as a receiver would be: with the `whsec_` form of the shared secret.
A request that also carries the legacy Casework-Signature must verify with it too
(`verify_signature`), and its Idempotency-Key must be its webhook-id.
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

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from server.signatures import (
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    WEBHOOK_ID_HEADER,
    as_standard_secret,
    verify_signature,
)

# How long a stall waits for the client to close before closing itself: far past any effect
# timeout the tests configure.
STALL_LIMIT_SECONDS = 30.0
REASONS = {
    200: "OK",
    400: "Bad Request",
    410: "Gone",
    429: "Too Many Requests",
    503: "Service Unavailable",
}


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
        """The webhook-id: the idempotency key (a decision's id, a redrive's key)."""
        return self.headers.get(WEBHOOK_ID_HEADER, "")

    @property
    def legacy(self) -> bool:
        """Whether the legacy headers came too (Casework-Signature, Idempotency-Key)."""
        return SIGNATURE_HEADER.lower() in self.headers

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
        return Request(
            method=method,
            path=path,
            headers=headers,
            body=body,
            received_at=time.monotonic(),
            signature_ok=signature_ok(self.secret, headers, body),
        )

    async def close_connections(self) -> None:
        """Ends every connection, a held or stalled one included."""
        for writer in list(self._writers):
            writer.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections))


def standard_ok(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Whether PyPI's standardwebhooks accepts the request, configured with `secret`'s
    `whsec_` form (what a receiver of a target configured with it holds)."""
    try:
        Webhook(as_standard_secret(secret)).verify(body, headers, json_parse=False)
    except WebhookVerificationError:
        return False
    return True


def signature_ok(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """Standard Webhooks verifies; and the legacy headers, when sent, verify as well."""
    if not standard_ok(secret, headers, body):
        return False
    legacy = headers.get(SIGNATURE_HEADER.lower())
    if legacy is None:
        return IDEMPOTENCY_HEADER.lower() not in headers
    return verify_signature(secret, legacy, body) and (
        headers.get(IDEMPOTENCY_HEADER.lower()) == headers.get(WEBHOOK_ID_HEADER)
    )


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
