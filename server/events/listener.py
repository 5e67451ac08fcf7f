"""The PostgreSQL transport: one dedicated LISTEN connection per process.

Not from the pool and never used to publish. A heartbeat (`SELECT 1` with a timeout)
notices a connection that died silently; asyncpg's termination callback notices one that
was closed. Either way the listener reconnects with backoff and jitter and, once it
listens again, tells the hub to resync every subscriber.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

import asyncpg

from server.events.channels import CHANNEL, parse_event
from server.events.transport import EventHandler, ReconnectHandler, TransportStatus

log = logging.getLogger("casework.events.listener")

HEARTBEAT_INTERVAL_SECONDS = 2.0
HEARTBEAT_TIMEOUT_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 5.0
BACKOFF_FIRST_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 5.0


class PostgresListener:
    def __init__(
        self,
        dsn: str,
        *,
        heartbeat_interval: float = HEARTBEAT_INTERVAL_SECONDS,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT_SECONDS,
    ) -> None:
        self._dsn = dsn
        self._heartbeat_interval = heartbeat_interval
        self._heartbeat_timeout = heartbeat_timeout
        self._task: asyncio.Task[None] | None = None
        self._on_event: EventHandler | None = None
        self._on_reconnect: ReconnectHandler | None = None
        self._connected = asyncio.Event()
        self._connection: asyncpg.Connection | None = None
        self.reconnects = 0
        self.last_error: str | None = None
        self.backend_pid: int | None = None

    async def start(self, on_event: EventHandler, on_reconnect: ReconnectHandler) -> None:
        self._on_event, self._on_reconnect = on_event, on_reconnect
        self._task = asyncio.create_task(self._run(), name="casework-listener")
        # Serve without waiting forever for a database that is down: /readyz says so.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), CONNECT_TIMEOUT_SECONDS)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def status(self) -> TransportStatus:
        connected = self._connected.is_set()
        return TransportStatus(
            "postgres",
            connected,
            self.reconnects,
            self.last_error,
            self.backend_pid if connected else None,
        )

    async def _run(self) -> None:
        failures = 0
        ever_connected = False
        while True:
            try:
                # It only ever returns by raising: when the connection is lost or refused.
                await self._listen_until_lost(first=not ever_connected)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self.last_error = f"{type(error).__name__}: {error}"
                log.warning("listener: %s; reconnecting", self.last_error)
            finally:
                # A connection that got as far as listening ends a run of failures, and
                # makes every later one a reconnect, after which subscribers resync.
                if self._connected.is_set():
                    ever_connected = True
                    failures = 0
                else:
                    failures += 1
                self._connected.clear()
                await self._close()
            delay = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2**failures)
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))

    async def _listen_until_lost(self, *, first: bool) -> None:
        conn: asyncpg.Connection = await asyncio.wait_for(
            asyncpg.connect(self._dsn), CONNECT_TIMEOUT_SECONDS
        )
        self._connection = conn
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _: lost.set())
        await conn.add_listener(CHANNEL, self._notified)
        self.backend_pid = conn.get_server_pid()
        self._connected.set()
        if not first:
            self.reconnects += 1
            log.info("listener: reconnected; resyncing subscribers")
            assert self._on_reconnect is not None
            self._on_reconnect()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), self._heartbeat_interval)
            if lost.is_set():
                raise ConnectionError("the listener connection was closed")
            await asyncio.wait_for(conn.fetchval("SELECT 1"), self._heartbeat_timeout)

    def _notified(self, conn: asyncpg.Connection, pid: int, channel: str, payload: str) -> None:
        event = parse_event(payload)
        if event is None:
            log.warning("listener: unreadable notification %.200r; resyncing", payload)
            assert self._on_reconnect is not None
            self._on_reconnect()
            return
        assert self._on_event is not None
        self._on_event(event)

    async def _close(self) -> None:
        conn, self._connection = self._connection, None
        if conn is not None and not conn.is_closed():
            conn.terminate()
