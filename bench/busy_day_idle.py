"""Idle consoles of bench/busy_day.py: thousands of graphql-transport-ws sockets in a process
of their own, each subscribed to one queue's queueBacklog and leaseEvents, reading and
counting what arrives.

An idle console costs the server every change of its queue; on this machine its client
shares the two cores with the server, so the client side here is only a walk over frame
headers: the handshake written by hand, text frames masked with a zero key (RFC 6455 asks
for a mask; its value is the client's choice), a pong for each ping, nothing parsed but
the few messages that open a socket.

Driven over stdin and stdout, one JSON object a line:
  in  {"url", "tokens", "queue", "count", "batch", "backlog", "leases"}
  out {"ready": N, "seconds": S}  once every socket has its ack and its first backlog figure
  in  {}  ->  out {"messages": M, "bytes": B, "closed": C, "problems": [...]}  (since the start)
  the end of stdin: the process ends.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import gc
import json
import os
import resource
import sys
import time
from typing import Any, cast
from urllib.parse import urlsplit

OPEN_SECONDS = 120.0
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes) -> bytes:
    """A client frame: FIN, the opcode, the masked length, a zero mask key, the payload."""
    length = len(payload)
    if length < 126:
        head = bytes([0x80 | opcode, 0x80 | length])
    elif length < 65536:
        head = bytes([0x80 | opcode, 0x80 | 126]) + length.to_bytes(2, "big")
    else:
        head = bytes([0x80 | opcode, 0x80 | 127]) + length.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


class Totals:
    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.closed = 0
        self.problems: list[str] = []


class IdleConsole(asyncio.Protocol):
    def __init__(self, order: dict[str, Any], token: str, totals: Totals) -> None:
        self._order = order
        self._token = token
        self._totals = totals
        self._buffer = bytearray()
        self._upgraded = False
        self._subscribed = False
        self._transport: asyncio.Transport | None = None
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        parts = urlsplit(self._order["url"])
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
        )
        self._transport.write(request.encode())

    def _send(self, body: dict[str, Any]) -> None:
        assert self._transport is not None
        self._transport.write(frame(TEXT, json.dumps(body).encode()))

    def data_received(self, data: bytes) -> None:
        self._totals.bytes += len(data)
        self._buffer += data
        if not self._upgraded:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            if b" 101 " not in self._buffer[: self._buffer.find(b"\r\n")]:
                self._fail(f"handshake: {bytes(self._buffer[:200])!r}")
                return
            del self._buffer[: end + 4]
            self._upgraded = True
            init = {"authorization": f"Bearer {self._token}"}
            self._send({"type": "connection_init", "payload": init})
        self._frames()

    def _frames(self) -> None:
        buffer = self._buffer
        while len(buffer) >= 2:
            opcode, length, offset = buffer[0] & 0x0F, buffer[1] & 0x7F, 2
            if length == 126:
                if len(buffer) < 4:
                    return
                length, offset = int.from_bytes(buffer[2:4], "big"), 4
            elif length == 127:
                if len(buffer) < 10:
                    return
                length, offset = int.from_bytes(buffer[2:10], "big"), 10
            if len(buffer) < offset + length:
                return
            if opcode == TEXT:
                self._totals.messages += 1
                if not self.ready.done() or buffer.startswith(b'{"type":"ping"', offset):
                    self._message(bytes(buffer[offset : offset + length]))
            elif opcode == PING:
                assert self._transport is not None
                self._transport.write(frame(PONG, bytes(buffer[offset : offset + length])))
            elif opcode == CLOSE:
                self._totals.closed += 1
                self._fail(f"closed: {bytes(buffer[offset : offset + length])!r}")
            del buffer[: offset + length]

    def _message(self, payload: bytes) -> None:
        message = json.loads(payload)
        kind = message.get("type")
        if kind == "ping":
            self._send({"type": "pong"})
        elif kind == "connection_ack" and not self._subscribed:
            self._subscribed = True
            variables = {"queue": self._order["queue"]}
            for operation, query in (("l", self._order["leases"]), ("b", self._order["backlog"])):
                payload_ = {"query": query, "variables": variables}
                self._send({"id": operation, "type": "subscribe", "payload": payload_})
        elif kind == "next" and message["id"] == "b" and not message["payload"].get("errors"):
            self.ready.set_result(None)
        elif kind in ("next", "error"):
            self._fail(f"unexpected {payload[:200]!r}")

    def _fail(self, problem: str) -> None:
        if len(self._totals.problems) < 3:
            self._totals.problems.append(problem)
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(problem))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(f"connection lost: {exc}"))


async def main() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def answer(body: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(body) + "\n")
        sys.stdout.flush()

    order = json.loads(await reader.readline())
    parts = urlsplit(order["url"])
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    totals = Totals()
    tokens = order["tokens"]
    started = time.perf_counter()
    consoles: list[IdleConsole] = []
    for first in range(0, order["count"], order["batch"]):
        batch = []
        for index in range(first, min(order["count"], first + order["batch"])):
            token = tokens[index % len(tokens)]
            _, console = await loop.create_connection(
                functools.partial(IdleConsole, order, token, totals), host, port
            )
            batch.append(console)
        await asyncio.wait_for(asyncio.gather(*(c.ready for c in batch)), OPEN_SECONDS)
        consoles += batch
    # Thousands of protocol objects: a full collection mid-run would be this process's pause.
    gc.collect()
    gc.freeze()
    answer({"ready": len(consoles), "seconds": time.perf_counter() - started})
    while line := await reader.readline():
        json.loads(line)
        answer(
            {
                "messages": totals.messages,
                "bytes": totals.bytes,
                "closed": totals.closed,
                "problems": totals.problems,
            }
        )


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.run(main())
    except ImportError:  # pragma: no cover - uvicorn[standard] installs it
        asyncio.run(main())
