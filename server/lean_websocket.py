"""uvicorn's websockets-sansio protocol, without the handshake kept for the socket's life.

uvicorn's protocol object keeps the handshake's request and response (their headers parsed
into websockets' `Headers`) as attributes for as long as the socket is open, about 4.6 kB
per socket measured with tracemalloc (bench/socket_memory.py). Once the handshake is
complete nothing reads them again: the ASGI scope was built from the request before the
application ran, and the response is only sent while the handshake is not yet complete.
With thousands of consoles per process that is memory kept for nothing, so they are
dropped as soon as the handshake's response has gone out. Written here because uvicorn
has no option for it; tests/unit/test_lean_websocket.py fails if uvicorn renames what
this relies on.
"""

from __future__ import annotations

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class LeanWebSocketsProtocol(WebSocketsSansIOProtocol):
    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if self.handshake_complete and "response" in vars(self):
            del self.request, self.response


# What `--ws` takes on uvicorn's command line.
IMPORT_STRING = f"{__name__}:{LeanWebSocketsProtocol.__name__}"
