"""A graphql-transport-ws client for tests: real websockets, messages awaited, never slept on."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

PROTOCOL = "graphql-transport-ws"
WAIT_SECONDS = 10.0


class Closed(Exception):
    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"socket closed: {code} {reason}")
        self.code = code
        self.reason = reason


class GraphQLSocket:
    """One connection; each subscription's messages arrive in its own queue."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self._ids = itertools.count(1)
        self._streams: dict[str, asyncio.Queue[dict[str, Any]]] = defaultdict(asyncio.Queue)
        self._reader = asyncio.create_task(self._read())
        self.closed: Closed | None = None

    async def _read(self) -> None:
        try:
            async for raw in self.connection:
                message = json.loads(raw)
                if message.get("type") == "ping":
                    await self.connection.send(json.dumps({"type": "pong"}))
                elif "id" in message:
                    self._streams[message["id"]].put_nowait(message)
        except websockets.ConnectionClosed:
            pass
        self.closed = Closed(self.connection.close_code, self.connection.close_reason or "")
        for stream in self._streams.values():
            stream.put_nowait({"type": "closed"})

    async def error(self, operation: str, wait: float = WAIT_SECONDS) -> list[dict[str, Any]]:
        """The payload of an operation's `error` message; fails on anything else first."""
        message = await self.message(operation, wait)
        assert message["type"] == "error", message
        errors: list[dict[str, Any]] = message["payload"]
        return errors

    async def subscribe(self, query: str, **variables: Any) -> str:
        operation = str(next(self._ids))
        payload = {"query": query, "variables": variables}
        await self.connection.send(
            json.dumps({"id": operation, "type": "subscribe", "payload": payload})
        )
        return operation

    async def message(self, operation: str, wait: float = WAIT_SECONDS) -> dict[str, Any]:
        """The next raw message of a subscription (next, error, complete, or `closed`)."""
        return await asyncio.wait_for(self._streams[operation].get(), wait)

    async def next(self, operation: str, wait: float = WAIT_SECONDS) -> dict[str, Any]:
        """The data of the next `next` message of a subscription; raises on error or close.

        Bounded by `wait` so a missing message fails the test instead of hanging it.
        """
        message = await self.message(operation, wait)
        if message["type"] == "next":
            data: dict[str, Any] = message["payload"]["data"]
            return data
        if message["type"] == "closed":
            raise self.closed or Closed(None, "")
        raise AssertionError(f"subscription {operation}: {message}")

    async def complete(self, operation: str) -> None:
        """Ends one subscription, as a client that navigates away does."""
        await self.connection.send(json.dumps({"id": operation, "type": "complete"}))

    async def abort(self) -> None:
        """Drops the TCP connection without a close frame, as a crashed client or a cut
        network does; what was received but not yet read is lost with it."""
        self.connection.transport.abort()
        await self._reader

    async def wait_closed(self, wait: float = WAIT_SECONDS) -> Closed:
        """Until the server closes the socket (bounded); returns its code and reason."""
        await asyncio.wait_for(asyncio.shield(self._reader), wait)
        assert self.closed is not None
        return self.closed

    async def close(self) -> None:
        await self.connection.close()
        await self._reader


async def refusal(
    base_url: str, init_payload: dict[str, Any], *, subprotocol: str = PROTOCOL
) -> Closed:
    """Connects and sends connection_init; returns how the server closed the socket.

    Fails if the server acknowledges the connection instead.
    """
    url = base_url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=[subprotocol]) as connection:  # type: ignore[list-item]
        try:
            await connection.send(json.dumps({"type": "connection_init", "payload": init_payload}))
            reply = await asyncio.wait_for(connection.recv(), WAIT_SECONDS)
        except websockets.ConnectionClosed:
            return Closed(connection.close_code, connection.close_reason or "")
        raise AssertionError(f"the server answered instead of refusing: {reply!r}")


@asynccontextmanager
async def graphql_socket(
    base_url: str,
    token: str | None,
    *,
    subprotocol: str = PROTOCOL,
    init_payload: dict[str, Any] | None = None,
    origin: str | None = None,
) -> AsyncIterator[GraphQLSocket]:
    """init_payload: connection_init's payload as sent, instead of {"authorization": token}.
    origin: the Origin header a browser page on that origin sends; none by default."""
    url = base_url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=[subprotocol], origin=origin) as connection:  # type: ignore[list-item, arg-type]
        payload = {"authorization": f"Bearer {token}"} if token else {}
        if init_payload is not None:
            payload = init_payload
        await connection.send(json.dumps({"type": "connection_init", "payload": payload}))
        ack = json.loads(await asyncio.wait_for(connection.recv(), WAIT_SECONDS))
        assert ack["type"] == "connection_ack", ack
        socket = GraphQLSocket(connection)
        try:
            yield socket
        finally:
            await socket.close()


async def handshake_status(base_url: str, *, origin: str) -> int:
    """The HTTP status of a handshake refused before it became a websocket (403, say).

    Fails if the server accepts the socket instead.
    """
    url = base_url.replace("http://", "ws://") + "/graphql"
    try:
        async with websockets.connect(url, subprotocols=[PROTOCOL], origin=origin):  # type: ignore[list-item, arg-type]
            pass
    except websockets.InvalidStatus as refused:
        status: int = refused.response.status_code
        return status
    raise AssertionError(f"the server accepted a websocket from {origin}")
