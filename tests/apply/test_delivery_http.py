"""The worker's HTTP client (server/effects/http.py) against raw sockets: the request it
writes, a redirect taken as an answer, a body's text, and each way of getting no answer,
recorded under the names httpx gave them."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from server.domain.review.evidence import canonical_json
from server.effects.http import open_session
from server.effects.webhook import Answer, Signing, send_signed

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
PAYLOAD = {"decisionId": "7", "outcome": "APPROVED", "note": "Zoë"}
SIGNING = Signing("msg_7", ("whsec_" + "A" * 32,), legacy=True)


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[str]:
    async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await handler(reader, writer)
        writer.close()

    server = await asyncio.start_server(guarded, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/hook"


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head, await reader.readexactly(length)


def answering(reply: bytes, seen: list[tuple[bytes, bytes]] | None = None) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_request(reader)
        if seen is not None:
            seen.append(request)
        writer.write(reply)
        await writer.drain()

    return handler


async def send(target: str, timeout_seconds: float = 5.0) -> Answer:
    async with open_session(2) as session:
        return await send_signed(
            session,
            target=target,
            payload=PAYLOAD,
            signing=SIGNING,
            timeout_seconds=timeout_seconds,
            extra_headers={"Casework-Redrive-Key": "r1"},
        )


async def test_the_request_carries_the_signed_headers_and_the_canonical_body() -> None:
    seen: list[tuple[bytes, bytes]] = []
    ok = b"HTTP/1.1 204 No Content\r\n\r\n"
    async with raw_server(answering(ok, seen)) as url:
        answer = await send(url)

    assert answer == Answer(204)
    ((head, body),) = seen
    assert body == canonical_json(PAYLOAD)
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "POST /hook HTTP/1.1"
    headers = dict(line.split(": ", 1) for line in lines[1:] if line)
    signed = SIGNING.headers(body, timestamp=int(headers["webhook-timestamp"]))
    for name in ("webhook-id", "webhook-timestamp", "Idempotency-Key", "Casework-Signature"):
        assert headers[name] == signed[name], name
    assert headers["webhook-signature"] == signed["webhook-signature"]
    assert headers["Content-Type"] == "application/json"
    assert headers["Casework-Redrive-Key"] == "r1"
    assert headers["Content-Length"] == str(len(body))


async def test_a_redirect_is_an_answer_and_not_followed() -> None:
    elsewhere: list[tuple[bytes, bytes]] = []
    async with raw_server(answering(b"HTTP/1.1 200 OK\r\n\r\n", elsewhere)) as other:
        moved = f"HTTP/1.1 307 X\r\nLocation: {other}\r\nContent-Length: 5\r\n\r\nmoved"
        async with raw_server(answering(moved.encode())) as url:
            answer = await send(url)

    assert answer == Answer(307, "webhook answered 307: moved", permanent=True)
    assert elsewhere == []


async def test_the_body_is_read_in_its_charset_and_bad_bytes_are_replaced() -> None:
    latin = b"HTTP/1.1 422 X\r\nContent-Type: text/plain; charset=latin-1\r\nContent-Length: 4"
    latin += b"\r\n\r\nna\xeff"
    broken = b"HTTP/1.1 400 X\r\nContent-Length: 3\r\n\r\nb\xffd"
    async with raw_server(answering(latin)) as url:
        assert (await send(url)).error == "webhook answered 422: naïf"
    async with raw_server(answering(broken)) as url:
        assert (await send(url)).error == "webhook answered 400: b\ufffdd"


async def test_a_503_with_retry_after_is_transient_with_its_delay() -> None:
    busy = b"HTTP/1.1 503 X\r\nRetry-After: 120\r\nContent-Length: 4\r\n\r\nbusy"
    async with raw_server(answering(busy)) as url:
        answer = await send(url)
    assert answer == Answer(503, "webhook answered 503: busy", retry_after=120.0)


async def test_no_answer_is_recorded_under_httpx_names() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{unused.getsockname()[1]}/hook"
    assert await send(refused) == Answer(None, "ConnectError: All connection attempts failed")

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    async with raw_server(hang_up) as url:
        assert await send(url) == Answer(
            None, "RemoteProtocolError: Server disconnected without sending a response."
        )

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        linger = struct.pack("ii", 1, 0)
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)

    async with raw_server(reset) as url:
        answer = await send(url)
    assert answer.status is None
    assert (answer.error or "").startswith("ReadError: "), answer

    released = asyncio.Event()

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await released.wait()

    async with raw_server(stall) as url:
        answer = await send(url, timeout_seconds=0.2)
        released.set()
    assert answer == Answer(None, "timed out after 0.2 s")
