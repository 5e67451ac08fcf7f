"""The review console at /console, and GraphiQL's page in --dev, served from files inside the
package: no CDN, no build step, every response under a strict Content-Security-Policy.

The console is plain ES modules (`static/`), vendored libraries included (`static/vendor/`,
with their versions and licences in its README.md). It speaks only the public GraphQL API,
so it works against a production-mode server. GraphiQL's assets (`graphiql/`) are the exact
files Strawberry's own page loads from a CDN, checked by the same integrity hashes.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HERE = Path(__file__).resolve().parent
CONSOLE_DIR = HERE / "static"
GRAPHIQL_DIR = HERE / "graphiql"
GRAPHIQL_ASSETS = "/graphiql-assets"

# A Host header goes into the policy only if it is a plain host[:port]: anything else would
# let a client write into a response header.
_PLAIN_HOST = re.compile(
    r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?"
)


def content_security_policy(scope: Scope, *, graphiql: bool = False) -> str:
    """Nothing but this origin: scripts, styles, fonts, images and connections.

    `connect-src 'self'` covers the same-origin websocket in current browsers; the ws URL is
    named as well for those that read 'self' as http(s) only. GraphiQL's editor sets style
    attributes from its markup, so its page alone allows inline styles (never scripts).
    """
    connect = ["'self'"]
    host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
    if _PLAIN_HOST.fullmatch(host):
        connect.append(("wss://" if scope.get("scheme") == "https" else "ws://") + host)
    styles = "'self' 'unsafe-inline'" if graphiql else "'self'"
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            f"style-src {styles}",
            "img-src 'self' data:",
            "font-src 'self' data:",
            f"connect-src {' '.join(connect)}",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


def security_headers(scope: Scope, *, graphiql: bool = False) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-security-policy", content_security_policy(scope, graphiql=graphiql).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        # Revalidated on every load: an upgraded server never runs yesterday's modules.
        (b"cache-control", b"no-cache"),
    ]


class WithSecurityHeaders:
    """Wraps an ASGI app (the static files) and adds the headers above to every response."""

    def __init__(self, app: ASGIApp, *, graphiql: bool = False) -> None:
        self.app = app
        self.graphiql = graphiql

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = security_headers(scope, graphiql=self.graphiql)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in extra}
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message = {**message, "headers": kept + extra}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _to_console(request: Request) -> Response:
    return RedirectResponse("/console/", status_code=308)


def console_routes(*, dev: bool) -> list[BaseRoute]:
    """/console (the page and its modules), and in --dev GraphiQL's assets."""
    routes: list[BaseRoute] = [
        Route("/console", _to_console),
        Mount("/console", WithSecurityHeaders(StaticFiles(directory=CONSOLE_DIR, html=True))),
    ]
    if dev:
        routes.append(
            Mount(
                GRAPHIQL_ASSETS,
                WithSecurityHeaders(StaticFiles(directory=GRAPHIQL_DIR), graphiql=True),
            )
        )
    return routes


def graphiql_page(request: Request) -> HTMLResponse:
    """GraphiQL, as Strawberry renders it, with every asset served from this process."""
    page = (GRAPHIQL_DIR / "index.html").read_text(encoding="utf-8")
    response = HTMLResponse(page)
    for name, value in security_headers(request.scope, graphiql=True):
        response.headers[name.decode()] = value.decode()
    return response
