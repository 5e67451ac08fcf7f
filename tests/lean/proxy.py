"""A TCP forwarder in front of PostgreSQL that a test can cut: an outage as a client sees
one. Cut, it closes every forwarded connection and its listening socket, so a connection in
a pool breaks and a new one is refused (ECONNREFUSED), as when the server is down.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


class CuttableProxy:
    def __init__(self, target: tuple[str, int] | str) -> None:
        self._target = target
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if isinstance(self._target, str):
            upstream = await asyncio.open_unix_connection(self._target)
        else:
            upstream = await asyncio.open_connection(*self._target)
        self._writers |= {writer, upstream[1]}
        pipes = [
            asyncio.ensure_future(_pipe(reader, upstream[1])),
            asyncio.ensure_future(_pipe(upstream[0], writer)),
        ]
        self._tasks.update(pipes)
        await asyncio.gather(*pipes)

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        self._writers.clear()
        await self._server.wait_closed()
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    def dsn(self, dsn: str) -> str:
        """`dsn` with the forwarder as its only host."""
        parts = urlsplit(dsn)
        user = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{self.port}", query=""))


@contextlib.asynccontextmanager
async def proxy_of(dsn: str) -> AsyncIterator[CuttableProxy]:
    """A forwarder to the server `dsn` reaches (a TCP address or a socket file)."""
    conn = await asyncpg.connect(dsn)
    try:
        target = conn._addr
    finally:
        await conn.close()
    proxy = CuttableProxy(target if isinstance(target, str) else (target[0], target[1]))
    await proxy.start()
    try:
        yield proxy
    finally:
        with contextlib.suppress(Exception):
            await proxy.cut()
