"""The head of a response goes out with its body, in one write, on uvicorn's own protocol
and parser; a HEAD request, a streamed body and pipelined requests keep their answers."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from server.lean_http import IMPORT_STRING, HeadWithBodyProtocol


class RecordingTransport(asyncio.Transport):
    """What the protocol wrote, write by write; a socket's transport in every other way
    the protocol asks about."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"one,", "more_body": True})
        await send({"type": "http.response.body", "body": b"two"})
        return
    body = b'{"data":{}}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def exchange(request: bytes, responses: int = 1) -> list[bytes]:
    config = Config(app=app, http=IMPORT_STRING, lifespan="off", log_config=None)
    config.load()
    assert config.http_protocol_class is HeadWithBodyProtocol
    protocol = HeadWithBodyProtocol(config=config, server_state=ServerState(), app_state={})
    transport = RecordingTransport()
    protocol.connection_made(transport)
    protocol.data_received(request)
    while len(protocol.tasks) or len(protocol.pipeline):
        await asyncio.gather(*protocol.tasks)
    assert len(transport.writes) >= responses
    return transport.writes


async def test_the_head_and_the_body_are_one_write() -> None:
    writes = await exchange(b"POST /graphql HTTP/1.1\r\nHost: casework\r\n\r\n")
    assert len(writes) == 1, writes
    head, _, body = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-length: 11" in head
    assert body == b'{"data":{}}'


async def test_a_streamed_body_sends_the_head_with_its_first_part() -> None:
    writes = await exchange(b"GET /stream HTTP/1.1\r\nHost: casework\r\n\r\n")
    assert len(writes) == 2, writes
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert writes[0].endswith(b"\r\n\r\n4\r\none,\r\n")
    assert writes[1] == b"3\r\ntwo\r\n0\r\n\r\n"


async def test_a_head_request_gets_its_head_without_waiting_for_a_body() -> None:
    writes = await exchange(b"HEAD /graphql HTTP/1.1\r\nHost: casework\r\n\r\n")
    assert len(writes) == 1, writes
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert writes[0].endswith(b"\r\n\r\n")


async def test_pipelined_requests_get_their_answers_in_order_one_write_each() -> None:
    request = b"POST /graphql HTTP/1.1\r\nHost: casework\r\n\r\n"
    writes = await exchange(request + request.replace(b"/graphql", b"/stream"), responses=2)
    assert writes[0].endswith(b'\r\n\r\n{"data":{}}')
    assert writes[1].startswith(b"HTTP/1.1 200 OK\r\n")
    assert writes[1].endswith(b"4\r\none,\r\n")
    assert len(writes) == 3, writes
