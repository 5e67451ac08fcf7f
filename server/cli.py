"""The `casework` command: serve, worker, migrate, token create/list/revoke, export."""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import signal
import socket
import sys
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, BinaryIO

import asyncpg

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
from server.domain.identity.tokens import (
    Revocation,
    TokenRecord,
    create_token,
    list_tokens,
    revoke_token,
    revoke_tokens,
)
from server.domain.model import Role
from server.domain.quality import audit
from server.domain.review.queues import QUEUE_NAME, get_queues
from server.runtime import (
    Databases,
    StartupError,
    check_app_role,
    check_schema_current,
    connect_app,
    connect_owner,
    migrate,
    migration_label,
    resolve_databases,
)
from server.store.database import Database
from server.store.migrate import Migration
from server.store.queries import Queries

if TYPE_CHECKING:
    import uvicorn

# What argparse returns for a bad argument: a problem the operator fixes, then retries.
OPERATOR_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    # The embedded server stops from an atexit hook, which a default SIGTERM would skip,
    # leaving PostgreSQL running and this process counted as one of its users forever.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        code: int = args.run(args, Settings.from_env())
    except (StartupError, ConfigError) as error:
        print(f"casework: error: {error}", file=sys.stderr)
        return OPERATOR_ERROR
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    return code


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="casework",
        description="Casework: hands review items to people and records what they decided.",
    )
    parser.add_argument("--version", action="version", version=f"casework {_version()}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve", help="run the GraphQL API (migrates first, unless --no-migrate)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    serve.add_argument("--dev", action="store_true", help="development mode: GraphiQL and more")
    serve.add_argument(
        "--demo",
        action="store_true",
        help="seed demo queues, items and tokens, and print the tokens (implies --dev)",
    )
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="do not carry decisions out in this process (run `casework worker` instead)",
    )
    serve.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="serving processes sharing the port (default 1, or CASEWORK_WORKERS); each has "
        "its own pool of up to CASEWORK_POOL_MAX connections",
    )
    serve.add_argument(
        "--no-migrate",
        action="store_true",
        help="do not migrate: run as the service role alone (CASEWORK_APP_DATABASE_URL) and "
        "refuse to start while a migration is pending (run `casework migrate` as a job)",
    )
    serve.set_defaults(run=_serve)

    worker = commands.add_parser(
        "worker", help="carry recorded decisions out (webhooks, handlers); several may run"
    )
    worker.add_argument(
        "--concurrency", type=int, default=None, help="attempts in flight (default 16)"
    )
    # Observability: the worker's own /metrics (docs/observability.md).
    worker.add_argument(
        "--metrics-port", type=int, default=None, help="serve this worker's metrics on this port"
    )
    worker.add_argument(
        "--metrics-host", default="127.0.0.1", help="address for --metrics-port (127.0.0.1)"
    )
    worker.set_defaults(run=_worker, parser=worker)

    migrate_command = commands.add_parser("migrate", help="apply pending database migrations")
    migrate_command.set_defaults(run=_migrate)

    token = commands.add_parser("token", help="manage bearer tokens")
    token_commands = token.add_subparsers(title="token commands", required=True, metavar="ACTION")
    create = token_commands.add_parser(
        "create", help="create a bearer token; it is printed once, on the last line"
    )
    create.add_argument("--user", required=True, type=_user_name, help="who the token is for")
    create.add_argument(
        "--role", required=True, choices=[role.value for role in Role], help="what it may do"
    )
    create.add_argument(
        "--queue",
        action="append",
        default=[],
        type=_queue_name,
        dest="queues",
        metavar="QUEUE",
        help="a queue the token covers; repeat for several. Required for reviewers; "
        "for other roles, none means all queues",
    )
    create.add_argument(
        "--expires-in-days", type=_expiry_days, metavar="N", help="default: never expires"
    )
    create.set_defaults(run=_token_create, parser=create)
    listing = token_commands.add_parser(
        "list", help="list live tokens: user, role, queues, created, expires, last used"
    )
    listing.add_argument("--all", action="store_true", help="include revoked and expired tokens")
    listing.set_defaults(run=_token_list)
    revoke = token_commands.add_parser(
        "revoke", help="revoke one token (--token-id, from `token list`) or every token of a user"
    )
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("--user", type=_user_name, help="revoke every token of this user")
    which.add_argument(
        "--token-id", type=_token_id, metavar="ID", help="revoke this token (see `token list`)"
    )
    revoke.set_defaults(run=_token_revoke)

    export = commands.add_parser(
        "export", help="write audit packs: everything recorded about items, hashed (JSON)"
    )
    export_commands = export.add_subparsers(title="export commands", required=True, metavar="WHAT")
    export_item = export_commands.add_parser(
        "item", help="one item's audit pack, the document ReviewItem.auditPack returns"
    )
    export_item.add_argument("id", type=_item_id, metavar="ID", help="the item's id")
    export_item.add_argument(
        "--output", type=Path, metavar="FILE", help="write to FILE (default: standard output)"
    )
    export_item.set_defaults(run=_export_item)
    export_queue = export_commands.add_parser(
        "queue",
        help="one line per item first enqueued to the queue from --since up to (not "
        "including) --until: its audit pack",
    )
    export_queue.add_argument("name", type=_queue_name, metavar="NAME", help="the queue")
    for bound, meaning in (("--since", "from (included)"), ("--until", "up to (excluded)")):
        export_queue.add_argument(
            bound,
            required=True,
            type=_moment,
            metavar="WHEN",
            help=f"enqueue times {meaning}: an ISO date (2026-11-01, midnight UTC) or date "
            "and time (2026-11-01T09:30:00+01:00; UTC without an offset)",
        )
    export_queue.add_argument(
        "--output", type=Path, metavar="FILE", help="write to FILE (default: standard output)"
    )
    export_queue.set_defaults(run=_export_queue, parser=export_queue)
    return parser


def _version() -> str:
    try:
        return importlib.metadata.version("casework")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def _workers(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, at least 1: {value!r}")
    return int(value)


def _token_id(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"a token id is a positive whole number: {value!r}")
    return int(value)


def _item_id(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) < 2**63:
        raise argparse.ArgumentTypeError(f"an item id is a positive whole number: {value!r}")
    return int(value)


def _moment(value: str) -> datetime:
    """An ISO-8601 date (midnight UTC) or date and time (UTC unless it says otherwise)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO date or date and time (2026-11-01, 2026-11-01T09:30:00Z): {value!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _user_name(value: str) -> str:
    if not 1 <= len(value.strip()) <= 200:
        raise argparse.ArgumentTypeError("a user name is 1 to 200 characters")
    return value.strip()


def _queue_name(value: str) -> str:
    if not QUEUE_NAME.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a queue name (a-z, 0-9, '_', '.', '-'; at most 63 characters)"
        )
    return value


MAX_EXPIRY_DAYS = 3650


def _expiry_days(value: str) -> int:
    try:
        days = int(value)
    except ValueError:
        days = 0
    if not 1 <= days <= MAX_EXPIRY_DAYS:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of days from 1 to {MAX_EXPIRY_DAYS}: {value!r} "
            "(leave the option out for a token that never expires)"
        )
    return days


def _serve(args: argparse.Namespace, settings: Settings) -> int:
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
                args, create_app(databases.app_dsn, dev=dev, run_worker=not args.no_worker)
            )
        )
        server.run(sockets=[listening])
    finally:
        listening.close()
    if not server.started:
        print("casework: error: the service did not start; see the log above", file=sys.stderr)
        return 1
    return 0


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
        ws_per_message_deflate=WS_PER_MESSAGE_DEFLATE,
        # About 4.6 kB less per socket (server/lean_websocket.py).
        ws=lean_websocket.IMPORT_STRING,
        # Logging is configured by configure_observability; each GraphQL request has its
        # access line.
        log_config=None,
        access_log=False,
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
    each = settings.pool_max_size + (1 if listener else 0)
    return (
        f"{workers} on this port, each with up to {settings.pool_max_size} pooled "
        f"connections (CASEWORK_POOL_MAX){' and a listener' if listener else ''}: "
        f"up to {workers * each} PostgreSQL connections in all"
    )


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    from server.worker import run_standalone

    if args.concurrency is not None:
        if not 1 <= args.concurrency <= 1000:
            args.parser.error("--concurrency must be between 1 and 1000")
        settings = replace(settings, worker_concurrency=args.concurrency)
    configure_observability(settings)
    if args.metrics_port is not None:
        _serve_worker_metrics(args.metrics_host, args.metrics_port)
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


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)
    _print_migrations(asyncio.run(migrate(databases, settings.db_dir / "migrations")))
    return 0


def _print_migrations(applied: list[Migration]) -> None:
    if not applied:
        print("migrations: up to date", flush=True)
    for migration in applied:
        print(f"migrations: applied {migration_label(migration)}", flush=True)


def _token_create(args: argparse.Namespace, settings: Settings) -> int:
    role = Role(args.role)
    queues: list[str] = sorted(set(args.queues))
    if role is Role.REVIEWER and not queues:
        # Checked before touching the database: a reviewer with no queue could do nothing.
        args.parser.error("a reviewer token must name at least one queue: add --queue NAME")
    expires_at = None
    if args.expires_in_days is not None:
        expires_at = datetime.now(UTC) + timedelta(days=args.expires_in_days)
    databases = resolve_databases(settings)
    token, unknown_queues = asyncio.run(
        _create_token(
            databases, settings, user=args.user, role=role, queues=queues, expires_at=expires_at
        )
    )
    for queue in unknown_queues:
        print(
            f"casework: warning: queue {queue!r} does not exist yet; the token covers it "
            "once an admin configures it",
            file=sys.stderr,
        )
    scope = ", ".join(queues) if queues else "all queues"
    expiry = f"expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else "never expires"
    print(
        f"token for user {args.user!r}, role {role.value}, queues: {scope}; {expiry}. "
        "It is shown once; store it now:"
    )
    print(token, flush=True)
    return 0


async def _create_token(
    databases: Databases,
    settings: Settings,
    *,
    user: str,
    role: Role,
    queues: list[str],
    expires_at: datetime | None,
) -> tuple[str, list[str]]:
    async with _owner_database(databases, settings) as owner_db:
        known = await get_queues(owner_db, queues)
        token = await create_token(
            owner_db, user=user, role=role, queues=queues, expires_at=expires_at
        )
    return token, [queue for queue in queues if queue not in known]


@asynccontextmanager
async def _owner_database(databases: Databases, settings: Settings) -> AsyncIterator[Database]:
    """The owner connection (tokens are the owner's to write and read). A database without
    Casework's schema is a one-line error, not a traceback."""
    conn = await connect_owner(databases)
    try:
        yield Database(conn, Queries(settings.db_dir / "queries"))
    except asyncpg.UndefinedTableError as error:
        raise StartupError(
            f"the database has no Casework schema yet ({error}); run `casework migrate` first"
        ) from error
    finally:
        await conn.close()


def _token_revoke(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)
    within = (
        f"running services refuse it within {settings.token_cache_seconds:g} seconds "
        "(CASEWORK_TOKEN_CACHE_SECONDS)"
    )

    async def revoke_by_user() -> int:
        async with _owner_database(databases, settings) as owner_db:
            return await revoke_tokens(owner_db, args.user)

    if args.user is not None:
        count = asyncio.run(revoke_by_user())
        print(f"revoked {count} token(s) of user {args.user!r}; {within}")
        return 0

    async def revoke_by_id() -> tuple[Revocation, str | None]:
        async with _owner_database(databases, settings) as owner_db:
            done = await revoke_token(owner_db, args.token_id)
        return done.outcome, done.user

    outcome, user = asyncio.run(revoke_by_id())
    if outcome is Revocation.NO_SUCH_TOKEN:
        raise StartupError(f"there is no token {args.token_id}; `casework token list` shows them")
    if outcome is Revocation.ALREADY_REVOKED:
        print(f"token {args.token_id} of user {user!r} was revoked already")
    else:
        print(f"revoked token {args.token_id} of user {user!r}; {within}")
    return 0


def _token_list(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)

    async def fetch() -> list[TokenRecord]:
        async with _owner_database(databases, settings) as owner_db:
            return await list_tokens(owner_db, include_inactive=args.all)

    print(format_token_table(asyncio.run(fetch()), now=datetime.now(UTC)), flush=True)
    return 0


@contextmanager
def _output(path: Path | None) -> Iterator[BinaryIO]:
    """Standard output, or FILE written beside itself and renamed into place once complete,
    so that a FILE that exists is never half an export."""
    if path is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    partial = path.with_name(path.name + ".partial")
    try:
        out = partial.open("wb")
    except OSError as error:
        raise StartupError(f"cannot write {path}: {error.strerror or error}") from error
    try:
        with out:
            yield out
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


@asynccontextmanager
async def _export_database(databases: Databases, settings: Settings) -> AsyncIterator[Database]:
    """As the service role, the one the API reads with (no owner credentials needed), once
    the schema is this release's (as `worker` checks). The export itself only reads."""
    await check_schema_current(databases, settings.db_dir / "migrations")
    conn = await connect_app(databases)
    try:
        yield Database(conn, Queries(settings.db_dir / "queries"))
    finally:
        await conn.close()


def _export_item(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)

    async def read() -> dict[str, Any] | None:
        async with _export_database(databases, settings) as db:
            return (await audit.audit_packs(db, [args.id])).get(args.id)

    document = asyncio.run(read())
    if document is None:
        raise StartupError(f"there is no item {args.id}")
    with _output(args.output) as out:
        out.write(audit.pack_bytes(document))
    return 0


def _export_queue(args: argparse.Namespace, settings: Settings) -> int:
    if args.since >= args.until:
        args.parser.error("--since must be before --until")
    databases = resolve_databases(settings)

    async def write(out: BinaryIO) -> int:
        async with _export_database(databases, settings) as db:
            if not await get_queues(db, [args.name]):
                raise StartupError(f"there is no queue {args.name!r}")
            count = 0
            async for line in audit.export_queue(db, args.name, args.since, args.until):
                out.write(line)
                count += 1
            return count

    with _output(args.output) as out:
        count = asyncio.run(write(out))
    window = f"[{audit.timestamp(args.since)}, {audit.timestamp(args.until)})"
    print(
        f"casework export: {count} item(s) first enqueued to {args.name} in {window}",
        file=sys.stderr,
    )
    return 0


TOKEN_COLUMNS = ("ID", "USER", "ROLE", "QUEUES", "CREATED", "EXPIRES", "LAST USED", "STATE")


def format_token_table(records: list[TokenRecord], *, now: datetime) -> str:
    """One line per token, in columns; times in UTC to the minute."""

    def moment(value: datetime | None, missing: str) -> str:
        return missing if value is None else f"{value.astimezone(UTC):%Y-%m-%d %H:%M}"

    rows = [TOKEN_COLUMNS] + [
        (
            str(record.id),
            record.user,
            record.role.value,
            ",".join(record.queues) or "(all)",
            moment(record.created_at, ""),
            moment(record.expires_at, "never"),
            moment(record.last_used_at, "never"),
            record.state(now).value + (" (demo)" if record.demo else ""),
        )
        for record in records
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(TOKEN_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


if __name__ == "__main__":
    sys.exit(main())
