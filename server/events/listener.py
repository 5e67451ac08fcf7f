"""The PostgreSQL transport: one dedicated LISTEN connection per process.

Not from the pool and never used to publish. A heartbeat (`SELECT 1` with a timeout)
notices a connection that died silently; asyncpg's termination callback notices one that
was closed. The reconnect loop and the resync are in `reconnecting.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import asyncpg

from server.events.channels import CHANNEL
from server.events.reconnecting import (
    CONNECT_TIMEOUT_SECONDS,
    HEARTBEAT_INTERVAL_SECONDS,
    HEARTBEAT_TIMEOUT_SECONDS,
    ReconnectingTransport,
)
from server.events.transport import TransportStatus

log = logging.getLogger("casework.events")

# What an operator looks for in pg_stat_activity.application_name.
APPLICATION_NAME = "casework-listener"


class PostgresListener(ReconnectingTransport):
    name = "postgres"

    def __init__(self, dsn: str) -> None:
        super().__init__()
        self._dsn = dsn
        self._connection: asyncpg.Connection | None = None
        self.backend_pid: int | None = None
        self._checked_direct = False

    def status(self) -> TransportStatus:
        base = super().status()
        # The backend to look for in pg_stat_activity, for operators.
        return TransportStatus(
            base.name,
            base.connected,
            base.reconnects,
            base.last_error,
            self.backend_pid if base.connected else None,
        )

    async def _session(self) -> None:
        conn: asyncpg.Connection = await asyncio.wait_for(
            asyncpg.connect(self._dsn, server_settings={"application_name": APPLICATION_NAME}),
            CONNECT_TIMEOUT_SECONDS,
        )
        self._connection = conn
        if not self._checked_direct:
            self._checked_direct = True
            await _warn_if_proxied(conn)
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _: lost.set())
        await conn.add_listener(CHANNEL, self._notified)
        self.backend_pid = conn.get_server_pid()
        self._listening()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), HEARTBEAT_INTERVAL_SECONDS)
            if lost.is_set():
                raise ConnectionError("the listener connection was closed")
            await asyncio.wait_for(conn.fetchval("SELECT 1"), HEARTBEAT_TIMEOUT_SECONDS)

    def _notified(self, conn: asyncpg.Connection, pid: int, channel: str, payload: str) -> None:
        self._deliver(payload)

    async def _close_session(self) -> None:
        conn, self._connection = self._connection, None
        if conn is not None and not conn.is_closed():
            conn.terminate()


async def _warn_if_proxied(conn: asyncpg.Connection) -> None:
    """A warning, once per process, when the listener does not reach its PostgreSQL session
    directly. A pooler speaks for the server: the process id it announces at connect is its
    own (PgBouncer's is random), not the backend's. LISTEN works through a pooler in session
    mode, so this warns rather than refuses (server/pooler.py refuses what it can tell)."""
    backend_pid = await asyncio.wait_for(
        conn.fetchval("SELECT pg_backend_pid()"), HEARTBEAT_TIMEOUT_SECONDS
    )
    if backend_pid != conn.get_server_pid():
        log.warning(
            "the listener's connection goes through a pooler or proxy (its backend is %s, "
            "it announced %s): LISTEN hears nothing through a pooler in transaction mode; "
            "point CASEWORK_LISTEN_DATABASE_URL at PostgreSQL directly",
            backend_pid,
            conn.get_server_pid(),
        )
