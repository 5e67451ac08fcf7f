"""What the PostgreSQL and Redis transports share: one subscribing connection per process,
kept alive by a heartbeat, replaced with backoff and jitter when lost, and a resync of every
subscriber once it listens again, because what happened while it was away is unknown."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import random

from server.events.channels import parse_event
from server.events.transport import EventHandler, ReconnectHandler, TransportStatus
from server.observability import metrics

log = logging.getLogger("casework.events")

HEARTBEAT_INTERVAL_SECONDS = 2.0
HEARTBEAT_TIMEOUT_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 5.0
BACKOFF_FIRST_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 5.0


class ReconnectingTransport(abc.ABC):
    name: str

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._on_event: EventHandler | None = None
        self._on_reconnect: ReconnectHandler | None = None
        self._connected = asyncio.Event()
        self._ever_connected = False
        self.reconnects = 0
        self.last_error: str | None = None

    async def start(self, on_event: EventHandler, on_reconnect: ReconnectHandler) -> None:
        self._on_event, self._on_reconnect = on_event, on_reconnect
        self._task = asyncio.create_task(self._run(), name=f"casework-{self.name}-listener")
        # Serve without waiting forever for a server that is down: /readyz says so.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), CONNECT_TIMEOUT_SECONDS)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        metrics.listener_connected(False)

    def status(self) -> TransportStatus:
        return TransportStatus(
            self.name, self._connected.is_set(), self.reconnects, self.last_error
        )

    @abc.abstractmethod
    async def _session(self) -> None:
        """Connects, subscribes, calls `_listening()`, then heartbeats until the connection
        is lost: it only ever ends by raising."""

    @abc.abstractmethod
    async def _close_session(self) -> None: ...

    def _listening(self) -> None:
        self._connected.set()
        metrics.listener_connected(True)
        if self._ever_connected:
            self.reconnects += 1
            metrics.listener_reconnected()
            # At the level of the loss, so that whoever sees one line sees the other.
            log.warning("%s listener: back; resyncing subscribers", self.name)
            assert self._on_reconnect is not None
            self._on_reconnect()
        self._ever_connected = True

    def _deliver(self, payload: str) -> None:
        assert self._on_event is not None
        assert self._on_reconnect is not None
        event = parse_event(payload)
        if event is None:
            log.warning("%s listener: unreadable hint %.200r; resyncing", self.name, payload)
            self._on_reconnect()
            return
        self._on_event(event)

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self.last_error = f"{type(error).__name__}: {error}"
                # One line when the connection is lost (or the first one fails), not one per
                # attempt while the server is away; `_listening` says when it is back.
                if self._connected.is_set() or (failures == 0 and not self._ever_connected):
                    log.warning(
                        "%s listener: lost (%s); reconnecting with backoff up to %.0f s",
                        self.name,
                        self.last_error,
                        BACKOFF_MAX_SECONDS,
                    )
                else:
                    log.debug("%s listener: still unreachable (%s)", self.name, self.last_error)
            finally:
                # A session that got as far as listening ends a run of failures.
                failures = 0 if self._connected.is_set() else failures + 1
                self._connected.clear()
                metrics.listener_connected(False)
                with contextlib.suppress(Exception):
                    await self._close_session()
            delay = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2**failures)
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))
