"""uvicorn's httptools protocol, writing a response's head and body in one send.

uvicorn writes the status line and headers to the socket when the application sends
`http.response.start`, and the body when it sends `http.response.body`: two `send`
system calls, and two segments on the wire, for every GraphQL answer. Those writes were
about a fifth of the server's samples in a profile of claim+decide cycles
(bench/spy_groups.py). Here the head waits for the first body message and goes out with
it, in one write. A HEAD request has no body to wait for, and keeps uvicorn's order.
Written here because uvicorn has no option for it; tests/unit/test_lean_http.py fails if
uvicorn changes what this relies on.
"""

from __future__ import annotations

from typing import Any

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle


class _Held:
    """Stands in for the transport while the head is written, and keeps it."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


class _Prefixed:
    """The transport, with the held head put in front of the first write."""

    def __init__(self, transport: Any, head: bytes) -> None:
        self._transport = transport
        self._head: bytes | None = head

    def write(self, data: bytes) -> None:
        head, self._head = self._head, None
        self._transport.write(data if head is None else head + data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def flush(self) -> None:
        """Writes the head if no body write took it (uvicorn writes nothing for none)."""
        if self._head is not None:
            self.write(b"")


class HeadWithBodyCycle(RequestResponseCycle):
    _held_head: bytes | None = None

    async def send(self, message: ASGISendEvent) -> None:
        if (
            message["type"] == "http.response.start"
            and not self.response_started
            and self.scope["method"] != "HEAD"
        ):
            transport, held = self.transport, _Held()
            self.transport = held  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = transport
            self._held_head = held.data
            return
        if self._held_head is not None and message["type"] == "http.response.body":
            transport = self.transport
            prefixed = _Prefixed(transport, self._held_head)
            self._held_head = None
            self.transport = prefixed  # type: ignore[assignment]
            try:
                await super().send(message)
            finally:
                self.transport = transport
                prefixed.flush()
            return
        await super().send(message)


class HeadWithBodyProtocol(HttpToolsProtocol):
    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # uvicorn has just made the cycle and only scheduled its task, which looks `send`
        # up when it runs: the cycle can still become the subclass. An upgrade (websocket)
        # makes none.
        if type(cycle) is RequestResponseCycle:
            cycle.__class__ = HeadWithBodyCycle


# What `--http` takes on uvicorn's command line.
IMPORT_STRING = f"{__name__}:{HeadWithBodyProtocol.__name__}"
