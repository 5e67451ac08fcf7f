"""The live-update machinery of one process: transport, hub and lease-expiry timer."""

from __future__ import annotations

from dataclasses import dataclass

from server.events.channels import Event
from server.events.expiry import LeaseExpiryTimer
from server.events.hub import Hub
from server.events.outage import quiet_outage_tracebacks
from server.events.transport import (
    EventHandler,
    ReconnectHandler,
    Transport,
    TransportStatus,
)
from server.store.database import Database


@dataclass(frozen=True)
class LiveStatus:
    transport: TransportStatus
    subscribers: int
    events_dispatched: int
    inbox_overflows: int


class LiveUpdates:
    def __init__(self, db: Database, transport: Transport) -> None:
        self.hub = Hub(db)
        self.timer = LeaseExpiryTimer(db, self.hub)
        self.transport = transport
        # In-process consumers of every hint (the apply worker), beside the hub.
        self._observers: list[tuple[EventHandler, ReconnectHandler]] = []

    def observe(self, on_event: EventHandler, on_reconnect: ReconnectHandler) -> None:
        self._observers.append((on_event, on_reconnect))

    async def start(self) -> None:
        # This machinery says when the database is lost and back; other loops that retry
        # while it is away must not drown that in a traceback per attempt.
        quiet_outage_tracebacks()
        self.timer.start()
        await self.transport.start(self._on_event, self._on_reconnect)

    async def stop(self) -> None:
        await self.transport.stop()
        await self.timer.stop()
        await self.hub.close()

    def status(self) -> LiveStatus:
        return LiveStatus(
            self.transport.status(),
            self.hub.subscriber_count(),
            self.hub.dispatched,
            self.hub.overflows,
        )

    def _on_event(self, event: Event) -> None:
        if event.cut:
            # What the hint named did not fit in a NOTIFY (migration 0030): as after a
            # reconnect, every subscriber and observer looks again.
            self._resync("a hint was too long to send whole")
            return
        self.hub.dispatch(event)
        self.timer.notice(event)
        for on_event, _ in self._observers:
            on_event(event)

    def _on_reconnect(self) -> None:
        self._resync("the event stream reconnected")

    def _resync(self, reason: str) -> None:
        self.hub.resync_all(reason)
        self.timer.watchers_changed()
        for _, on_reconnect in self._observers:
            on_reconnect()
