"""Where events come from. PostgreSQL LISTEN by default; in-memory for tests.

A transport calls `on_event` for each event and `on_reconnect` after every reconnect, once
it listens again: whatever happened while it was away is unknown, so subscribers resync.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from server.events.channels import Event

EventHandler = Callable[[Event], None]
ReconnectHandler = Callable[[], None]


@dataclass(frozen=True)
class TransportStatus:
    name: str
    connected: bool
    reconnects: int
    last_error: str | None
    # The PostgreSQL backend of the listener connection while connected, for operators.
    backend_pid: int | None = None


class Transport(Protocol):
    async def start(self, on_event: EventHandler, on_reconnect: ReconnectHandler) -> None: ...

    async def stop(self) -> None: ...

    def status(self) -> TransportStatus: ...


class MemoryTransport:
    """Events published in-process, for tests of the hub and the subscriptions."""

    def __init__(self) -> None:
        self._on_event: EventHandler | None = None
        self._on_reconnect: ReconnectHandler | None = None
        self.reconnects = 0

    async def start(self, on_event: EventHandler, on_reconnect: ReconnectHandler) -> None:
        self._on_event, self._on_reconnect = on_event, on_reconnect

    async def stop(self) -> None:
        self._on_event = self._on_reconnect = None

    def publish(self, event: Event) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def reconnect(self) -> None:
        self.reconnects += 1
        if self._on_reconnect is not None:
            self._on_reconnect()

    def status(self) -> TransportStatus:
        return TransportStatus("memory", self._on_event is not None, self.reconnects, None)
