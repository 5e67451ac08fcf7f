"""One subscriber's inbox: bounded, so a consumer that stops reading costs a fixed amount."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from server.events.channels import Event

INBOX_LIMIT = 256

T = TypeVar("T")


@dataclass(frozen=True)
class Resync:
    """What was buffered is gone or may be stale: re-read the tables."""

    reason: str


Message = Event | Resync


class Inbox:
    def __init__(self, accepts: Callable[[Event], bool], limit: int = INBOX_LIMIT) -> None:
        self.accepts = accepts
        self._messages: asyncio.Queue[Message] = asyncio.Queue(maxsize=limit)
        self.overflows = 0
        # How many subscriptions this inbox serves: more than one for a shared execution
        # (server/graphql/multiplex.py). The hub's subscriber count adds these up.
        self.audience = 1

    def offer(self, message: Message) -> bool:
        """Queues the message; True if the inbox overflowed and was replaced by a Resync."""
        if isinstance(message, Event) and not self.accepts(message):
            return False
        try:
            self._messages.put_nowait(message)
        except asyncio.QueueFull:
            # Too far behind: drop what is queued and tell the consumer to re-read instead.
            self.overflows += 1
            self.discard_pending()
            self._messages.put_nowait(Resync("subscriber fell behind"))
            return True
        return False

    async def next(self) -> Message:
        return await self._messages.get()

    def discard_pending(self) -> None:
        while not self._messages.empty():
            self._messages.get_nowait()

    def pending(self) -> int:
        return self._messages.qsize()


class LatestValue(Generic[T]):
    """Holds only the newest value: a counter that coalesces, whatever the consumer's pace."""

    def __init__(self) -> None:
        self._value: T | None = None
        self._changed = asyncio.Event()
        # As Inbox.audience.
        self.audience = 1

    def set(self, value: T) -> None:
        self._value = value
        self._changed.set()

    def has_value(self) -> bool:
        return self._value is not None

    async def next(self) -> T:
        await self._changed.wait()
        self._changed.clear()
        assert self._value is not None
        return self._value
