"""`casework mcp`: the MCP server (server/mcp), over stdio (the default: an agent starts it
as a subprocess, with CASEWORK_MCP_TOKEN) or streamable HTTP (every request brings its own
bearer token, as /graphql)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from server.config import Settings
from server.runtime import check_schema_current, resolve_databases


def add_mcp_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve the MCP tools request_human_review, get_decision and list_queues "
        "(stdio with CASEWORK_MCP_TOKEN, or --transport http with bearer tokens)",
    )
    mcp.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="default: stdio"
    )
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind (127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8001, help="HTTP: port to bind (default 8001)")
    mcp.set_defaults(run=run_mcp)


def run_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from server.cli.serve import configure_observability
    from server.mcp import service

    # Over stdio, standard output is the protocol's: everything else goes to stderr.
    configure_observability(settings)
    token = service.stdio_token(dict(os.environ)) if args.transport == "stdio" else ""
    databases = resolve_databases(settings)
    # As `casework worker`: the service role, on the current schema (serve migrates).
    asyncio.run(check_schema_current(databases, settings.db_dir / "migrations"))
    if args.transport == "stdio":
        asyncio.run(service.serve_stdio(databases.app_dsn, settings, token))
        return 0
    return _serve_http(args, databases.app_dsn, settings)


def _serve_http(args: argparse.Namespace, app_dsn: str, settings: Settings) -> int:
    import uvicorn

    from server.cli.serve import _listen
    from server.mcp.service import MCP_PATH, http_app

    listening = _listen(args.host, args.port)
    try:
        host, port = listening.getsockname()[:2]
        print(f"casework mcp: streamable HTTP at http://{host}:{port}{MCP_PATH}", flush=True)
        config = uvicorn.Config(
            http_app(app_dsn, settings, host=args.host),
            log_level="info",
            log_config=None,
            access_log=False,
        )
        server = uvicorn.Server(config)
        server.run(sockets=[listening])
    finally:
        listening.close()
    if not server.started:
        print("casework: error: casework mcp did not start; see the log above", file=sys.stderr)
        return 1
    return 0
