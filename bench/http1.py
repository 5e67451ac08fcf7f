"""A minimal HTTP/1.1 keep-alive client for load generation.

The load generator shares the machine's two cores with the server it measures; a general
client (httpx) spends more CPU per request than the server does, and so measures itself.
This one writes a request and reads one response per call on one open connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


class HttpError(Exception):
    pass


class KeepAliveConnection:
    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> KeepAliveConnection:
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()

    async def post_json(self, path: str, body: Any, headers: dict[str, str]) -> Any:
        assert self._reader is not None
        assert self._writer is not None
        payload = json.dumps(body, separators=(",", ":")).encode()
        head = [
            f"POST {path} HTTP/1.1",
            f"host: {self._host}:{self._port}",
            "content-type: application/json",
            f"content-length: {len(payload)}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        self._writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
        status_line = await self._reader.readline()
        status = int(status_line.split()[1])
        length: int | None = None
        chunked = False
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if chunked:
            data = await self._read_chunked()
        elif length is not None:
            data = await self._reader.readexactly(length)
        else:
            raise HttpError("response has neither content-length nor chunked encoding")
        if status != 200:
            raise HttpError(f"HTTP {status}: {data[:300]!r}")
        return json.loads(data)

    async def _read_chunked(self) -> bytes:
        assert self._reader is not None
        parts = []
        while size := int((await self._reader.readline()).split(b";")[0], 16):
            parts.append(await self._reader.readexactly(size))
            await self._reader.readline()
        await self._reader.readline()
        return b"".join(parts)
