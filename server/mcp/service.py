"""`casework mcp` as a process: the API's runtime (pool, credential resolver, live updates;
no apply worker) under the MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from server.config import ConfigError, Settings
from server.lifespan import Runtime
from server.mcp.callers import BearerGate, GatedCaller, TokenCaller
from server.mcp.reviews import HumanReviews
from server.mcp.tools import build_server

log = logging.getLogger("casework.mcp")

MCP_PATH = "/mcp"
TOKEN_VARIABLE = "CASEWORK_MCP_TOKEN"


def http_app(app_dsn: str, settings: Settings, *, host: str) -> Starlette:
    """The MCP endpoint at /mcp behind the API's bearer tokens, and /livez."""
    runtime = Runtime(app_dsn, settings, run_worker=False)
    server = build_server(HumanReviews(runtime), GatedCaller())
    # Stateless: any `casework mcp` process behind a load balancer answers any request (the
    # tasks keep no state either: server/mcp/tasks.py).
    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, host=host
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with runtime.lifespan(app), inner.router.lifespan_context(inner):
            yield

    async def livez(request: Request) -> JSONResponse:
        return JSONResponse({"live": True})

    return Starlette(
        routes=[
            Route("/livez", livez),
            Mount("/", app=BearerGate(inner, lambda: runtime.tokens)),
        ],
        lifespan=lifespan,
    )


def stdio_token(environ: dict[str, str]) -> str:
    token = environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        raise ConfigError(
            f"{TOKEN_VARIABLE} is not set: over stdio, casework mcp acts with the token in it "
            "(an integration token: `casework token create --role integration`)"
        )
    return token


def stdio_server(app_dsn: str, settings: Settings, token: str) -> tuple[Runtime, MCPServer]:
    runtime = Runtime(app_dsn, settings, run_worker=False)
    caller = TokenCaller(lambda: runtime.tokens, token)
    return runtime, build_server(HumanReviews(runtime), caller)


async def serve_stdio(app_dsn: str, settings: Settings, token: str) -> None:
    runtime, server = stdio_server(app_dsn, settings, token)
    async with runtime.lifespan(Starlette()):
        # Refuse to start with a token that does not work, rather than fail every call.
        if await runtime.tokens.resolve(TokenCaller.credentials_of(token)) is None:
            raise ConfigError(f"{TOKEN_VARIABLE} is not a valid token (revoked, or expired?)")
        await server.run_stdio_async()
