"""The lean websocket protocol relies on uvicorn's attribute names: an upgrade that renames
them must fail here, not leave the handshake in memory unnoticed."""

from __future__ import annotations

import inspect

from uvicorn.config import Config
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from server.lean_websocket import IMPORT_STRING, LeanWebSocketsProtocol


def test_uvicorn_still_keeps_the_handshake_where_the_protocol_drops_it() -> None:
    source = inspect.getsource(WebSocketsSansIOProtocol)
    assert "self.request = event" in source
    assert "self.response = self.conn.accept(event)" in source
    # Read only before the handshake completes.
    connect = inspect.getsource(WebSocketsSansIOProtocol.handle_connect)
    send = inspect.getsource(WebSocketsSansIOProtocol.send)
    assert "if not self.handshake_complete" in send
    for name in ("self.request", "self.response"):
        elsewhere = source.replace(connect, "").replace(send, "")
        assert name not in elsewhere, name


def test_uvicorn_loads_it_from_its_import_string() -> None:
    config = Config(app=lambda scope, receive, send: None, ws=IMPORT_STRING)
    config.load()
    assert config.ws_protocol_class is LeanWebSocketsProtocol
