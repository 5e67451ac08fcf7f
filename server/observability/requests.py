"""Request ids over ASGI: each HTTP request and websocket gets one (the caller's X-Request-ID
when it is acceptable, a fresh one otherwise), every log line it causes carries it, and
its response (the websocket's handshake answer) returns it in X-Request-ID."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.observability.context import REQUEST_ID, REQUEST_ID_HEADER, request_id_from

_HEADER = REQUEST_ID_HEADER.encode()
_ANSWERS = frozenset({"http.response.start", "websocket.accept", "websocket.http.response.start"})


class RequestIds:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        sent = next((v for k, v in scope.get("headers", ()) if k == _HEADER), None)
        request_id = request_id_from(sent.decode("latin-1") if sent is not None else None)
        encoded = request_id.encode()

        async def answer_with_id(message: Message) -> None:
            if message["type"] in _ANSWERS:
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != _HEADER]
                message = {**message, "headers": [*headers, (_HEADER, encoded)]}
            await send(message)

        token = REQUEST_ID.set(request_id)
        try:
            await self.app(scope, receive, answer_with_id)
        finally:
            REQUEST_ID.reset(token)
