"""`casework serve`, `casework worker` and `casework migrate`: the service, the apply worker
and the schema."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.config import ConfigError, Settings
from server.demo import (
    ESCALATIONS,
    ITEM_COUNT,
    KYC,
    KYC_QA,
    KYC_QA_SAMPLE_RATE,
    SECOND_REVIEW,
    SUPPLIER_EXCEPTIONS,
    SUPPLIER_OPS,
    SUPPLIER_WORKFLOW,
    seed_demo,
)
from server.pooler import check_pooler_settings
from server.runtime import (
    Databases,
    StartupError,
    check_app_role,
    check_schema_current,
    migrate,
    migration_label,
    resolve_databases,
)
from server.store.migrate import Migration

if TYPE_CHECKING:
    import uvicorn

    from server.graphql.documents.manifest import TrustedDocuments


def run_serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    # Imported here so that migrate and token create start fast and keep working even if
    # the web stack cannot be imported. Before any metrics directory is named: this process
    # keeps its own metrics in memory whatever its processes do.
    from server.app import create_app

    dev: bool = args.dev or args.demo
    workers: int = settings.serve_workers if args.workers is None else args.workers
    # The port is taken first, so that one in use stops the command before it migrates or
    # seeds anything; uvicorn then serves on this very socket, so no one can take it between.
    listening = _listen(args.host, args.port)
    configure_observability(settings, with_pid=workers > 1)
    try:
        # Before any database is touched: a bad manifest is the operator's to fix first.
        documents = trusted_documents(settings, dev=dev)
        check_pooler_settings(settings)
        databases = resolve_databases(settings)
        asyncio.run(
            _prepare_service(databases, settings, demo=args.demo, migrate_first=not args.no_migrate)
        )
        _print_banner(databases, args.host, args.port, dev=dev, workers=workers, settings=settings)
        if workers > 1:
            return _serve_processes(args, databases, listening, dev=dev, workers=workers)
        # Same process as the embedded server's handle, so PostgreSQL lives as long as we do.
        server = uvicorn.Server(
            _uvicorn_config(
                args,
                create_app(
                    databases.app_dsn,
                    dev=dev,
                    run_worker=not args.no_worker,
                    documents=documents,
                ),
            )
        )
        server.run(sockets=[listening])
    finally:
        listening.close()
    if not server.started:
        print("casework: error: the service did not start; see the log above", file=sys.stderr)
        return 1
    return 0


def trusted_documents(settings: Settings, *, dev: bool) -> TrustedDocuments:
    """The built-in manifests and CASEWORK_TRUSTED_DOCUMENTS, validated against the schema
    this process serves; a bad one is a ConfigError of one line (file and document)."""
    from server.graphql.documents.manifest import ManifestError, load_manifests
    from server.graphql.schema import build_schema

    try:
        return load_manifests(settings.documents.manifests, build_schema(dev=dev))
    except ManifestError as error:
        raise ConfigError(f"trusted documents: {error}") from None


def _serve_processes(
    args: argparse.Namespace,
    databases: Databases,
    listening: socket.socket,
    *,
    dev: bool,
    workers: int,
) -> int:
    """--workers N, N > 1: N processes on `listening` (server/processes.py), which live
    no longer than this one, and so no longer than the embedded server it holds."""
    from server.processes import ServedApp, metrics_directory, serve_processes

    with metrics_directory() as metrics_dir:
        app = ServedApp(databases.app_dsn, dev, not args.no_worker, Path(metrics_dir))
        if not serve_processes(_uvicorn_config(args, app, workers=workers), listening, app):
            print(
                "casework: error: a serving process did not start; see the log above",
                file=sys.stderr,
            )
            return 1
    return 0


# uvicorn's HTTP parser and event loop for the service (`_uvicorn_config`).
HTTP_PROTOCOL = "httptools"
EVENT_LOOP = "uvloop"

# Well inside the usual 30 s an orchestrator gives a stopping process.
GRACEFUL_SHUTDOWN_SECONDS = 10


def _uvicorn_config(args: argparse.Namespace, app: Any, *, workers: int = 1) -> uvicorn.Config:
    import uvicorn

    from server import lean_websocket
    from server.app import WS_PER_MESSAGE_DEFLATE

    return uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        # Each process calls the factory (ServedApp) itself; one process is given the app.
        factory=workers > 1,
        # Explicit, so that WEB_CONCURRENCY in the environment does not set it.
        workers=workers,
        log_level="info",
        # Named rather than left to "auto", which falls back to the pure-Python h11 and
        # asyncio quietly when either is missing: both come with uvicorn[standard], and a
        # request costs less CPU on them.
        http=HTTP_PROTOCOL,
        loop=EVENT_LOOP,
        ws_per_message_deflate=WS_PER_MESSAGE_DEFLATE,
        # About 4.6 kB less per socket (server/lean_websocket.py).
        ws=lean_websocket.IMPORT_STRING,
        # Logging is configured by configure_observability; each GraphQL request has its
        # access line.
        log_config=None,
        access_log=False,
        # SIGTERM waits this long for requests and sockets in hand, then cancels them: a
        # connection stuck mid-handshake must not keep a stopping process alive past its
        # orchestrator's grace period (seen once with every backend just terminated).
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, as uvicorn would bind it; one line if it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family=family)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        raise StartupError(
            f"cannot listen on {host}:{port}: {error.strerror or error}; "
            "choose another --port or stop what uses it"
        ) from error
    return listening


async def _prepare_service(
    databases: Databases, settings: Settings, *, demo: bool, migrate_first: bool
) -> None:
    if migrate_first:
        if databases.owner_dsn is None:
            raise StartupError(
                "DATABASE_URL is not set, and serve migrates first as the owner: run "
                "`casework migrate` with DATABASE_URL as a job of its own, then "
                "`casework serve --no-migrate` with CASEWORK_APP_DATABASE_URL alone"
            )
        _print_migrations(await migrate(databases, settings.db_dir / "migrations"))
        await check_app_role(databases)
    else:
        await check_schema_current(databases, settings.db_dir / "migrations")
    if demo:
        if databases.owner_dsn is None:
            raise StartupError("--demo mints tokens, which needs the owner's DATABASE_URL")
        seed = await seed_demo(
            databases.owner_dsn, databases.app_dsn, queries_dir=settings.db_dir / "queries"
        )
        earlier = (
            f" ({seed.tokens_revoked} tokens of earlier demo runs revoked)"
            if seed.tokens_revoked
            else ""
        )
        print(
            f"demo: queues {KYC}, {ESCALATIONS} and {KYC_QA} are configured ({KYC} samples "
            f"{KYC_QA_SAMPLE_RATE:.0%} of its decisions for QA); {KYC} has {ITEM_COUNT} "
            f"applications ({seed.items_created} new this run); its rejections wait for a "
            f"second review in {SECOND_REVIEW}. Workflow {SUPPLIER_WORKFLOW} "
            f"has {len(SUPPLIER_EXCEPTIONS)} open exceptions in {SUPPLIER_OPS}. "
            f"Tokens, shown once{earlier}:"
        )
        print("\n".join(seed.exports()), flush=True)


def _print_banner(
    databases: Databases, host: str, port: int, *, dev: bool, workers: int, settings: Settings
) -> None:
    url = f"http://{host}:{port}"
    database = databases.describe()
    if databases.embedded_data_dir is not None:
        database += " (stops when the last casework process using it exits)"
    rows = [
        ("GraphQL API", f"{url}/graphql" + (" (dev mode: GraphiQL in a browser)" if dev else "")),
        ("console", f"{url}/console/ (sign in with a token)"),
        ("health", f"{url}/healthz"),
        ("database", database),
        ("roles", f"service runs as {databases.app_user}, migrations as {databases.owner_user}"),
    ]
    if workers > 1:
        rows.append(("processes", _connection_budget(workers, settings)))
    print("Casework")
    print("\n".join(f"  {label + ':':<13} {value}" for label, value in rows), flush=True)


def _connection_budget(workers: int, settings: Settings) -> str:
    """What N processes may hold at once, to set against PostgreSQL's max_connections."""
    listener = settings.events_transport == "postgres"
    if settings.transaction_pooler:
        return (
            f"{workers} on this port, each with up to {settings.pool_max_size} connections to "
            f"the pooler (CASEWORK_POOL_MAX){' and a direct listener' if listener else ''}: "
            f"{workers if listener else 0} PostgreSQL connections besides the pooler's"
        )
    each = settings.pool_max_size + (1 if listener else 0)
    return (
        f"{workers} on this port, each with up to {settings.pool_max_size} pooled "
        f"connections (CASEWORK_POOL_MAX){' and a listener' if listener else ''}: "
        f"up to {workers * each} PostgreSQL connections in all"
    )


def run_worker(args: argparse.Namespace, settings: Settings) -> int:
    from server.worker import run_standalone

    if args.concurrency is not None:
        if not 1 <= args.concurrency <= 1000:
            args.parser.error("--concurrency must be between 1 and 1000")
        settings = replace(settings, worker_concurrency=args.concurrency)
    configure_observability(settings)
    if args.metrics_port is not None:
        _serve_worker_metrics(args.metrics_host, args.metrics_port)
    check_pooler_settings(settings, worker=True)
    databases = resolve_databases(settings)
    # As serve --no-migrate: the worker runs as the service role and needs the current schema.
    asyncio.run(check_schema_current(databases, settings.db_dir / "migrations"))
    print(f"casework worker: carrying decisions out ({databases.describe()})", flush=True)
    run_event_loop(run_standalone(databases.app_dsn, settings))
    return 0


def configure_observability(settings: Settings, *, with_pid: bool = False) -> None:
    """Logging (CASEWORK_LOG_*) and, when OTEL_* asks for it, tracing: before anything logs.

    with_pid: lines name their process, for several processes writing to one stderr."""
    from server.observability.logs import LogFormat, configure_logging
    from server.observability.tracing import TracingSetupError, configure_tracing

    configure_logging(LogFormat(settings.log_format), settings.log_level, with_pid=with_pid)
    try:
        configure_tracing()
    except TracingSetupError as error:
        raise ConfigError(str(error)) from error


def _serve_worker_metrics(host: str, port: int) -> None:
    """The worker's counters (prometheus-client's own server, in a thread): no token, so
    bind it to an address only the scraper reaches."""
    from prometheus_client import start_http_server

    try:
        start_http_server(port, addr=host)
    except OSError as error:
        raise StartupError(f"--metrics-port {port}: cannot listen on {host}: {error}") from error


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """uvloop where it is installed (it comes with uvicorn[standard]), as serve runs."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def run_migrate(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)
    _print_migrations(asyncio.run(migrate(databases, settings.db_dir / "migrations")))
    return 0


def _print_migrations(applied: list[Migration]) -> None:
    if not applied:
        print("migrations: up to date", flush=True)
    for migration in applied:
        print(f"migrations: applied {migration_label(migration)}", flush=True)
