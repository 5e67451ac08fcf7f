"""The `casework` command: serve, worker, mcp, intake (server/cli/intake.py), migrate, token
create/list/revoke, session list/revoke, user revoke, export, auth explain, privacy
rotate-keys/replay (server/cli/privacy.py)."""

from __future__ import annotations

import argparse
import importlib.metadata
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from server.cli.arguments import (
    expiry_days,
    item_id,
    moment,
    queue_name,
    revocation_reason,
    session_id,
    token_id,
    user_name,
    workers,
)
from server.cli.auth import run_auth_explain
from server.cli.export import run_export_item, run_export_queue
from server.cli.export_search import add_export_search_command
from server.cli.intake import add_intake_command
from server.cli.mcp import add_mcp_command
from server.cli.privacy import add_privacy_commands
from server.cli.serve import run_migrate, run_serve, run_worker
from server.cli.sessions import run_session_list, run_session_revoke
from server.cli.tokens import run_token_create, run_token_list, run_token_revoke
from server.cli.users import run_user_revoke
from server.config import ConfigError, Settings
from server.domain.model import Role
from server.runtime import StartupError

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
        type=workers,
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
    serve.set_defaults(run=run_serve)

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
    worker.set_defaults(run=run_worker, parser=worker)

    migrate_command = commands.add_parser("migrate", help="apply pending database migrations")
    migrate_command.set_defaults(run=run_migrate)

    token = commands.add_parser("token", help="manage bearer tokens")
    token_commands = token.add_subparsers(title="token commands", required=True, metavar="ACTION")
    create = token_commands.add_parser(
        "create", help="create a bearer token; it is printed once, on the last line"
    )
    create.add_argument("--user", required=True, type=user_name, help="who the token is for")
    create.add_argument(
        "--role", required=True, choices=[role.value for role in Role], help="what it may do"
    )
    create.add_argument(
        "--queue",
        action="append",
        default=[],
        type=queue_name,
        dest="queues",
        metavar="QUEUE",
        help="a queue the token covers; repeat for several. Required for reviewers; "
        "for other roles, none means all queues",
    )
    create.add_argument(
        "--expires-in-days", type=expiry_days, metavar="N", help="default: never expires"
    )
    create.set_defaults(run=run_token_create, parser=create)
    listing = token_commands.add_parser(
        "list", help="list live tokens: user, role, queues, created, expires, last used"
    )
    listing.add_argument("--all", action="store_true", help="include revoked and expired tokens")
    listing.set_defaults(run=run_token_list)
    revoke = token_commands.add_parser(
        "revoke", help="revoke one token (--token-id, from `token list`) or every token of a user"
    )
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("--user", type=user_name, help="revoke every token of this user")
    which.add_argument(
        "--token-id", type=token_id, metavar="ID", help="revoke this token (see `token list`)"
    )
    revoke.set_defaults(run=run_token_revoke)

    user = commands.add_parser("user", help="act on a person's access")
    user_commands = user.add_subparsers(title="user commands", required=True, metavar="ACTION")
    user_revoke = user_commands.add_parser(
        "revoke",
        help="revoke a person everywhere: end their sessions, revoke their tokens, refuse "
        "their provider tokens issued before now, release their leases",
    )
    user_revoke.add_argument("--user", required=True, type=user_name, help="whom to revoke")
    user_revoke.add_argument(
        "--reason", type=revocation_reason, metavar="TEXT", help="why, for the record"
    )
    user_revoke.set_defaults(run=run_user_revoke)

    _add_auth_commands(commands)
    _add_session_commands(commands)
    add_privacy_commands(commands)
    add_mcp_command(commands)
    add_intake_command(commands)

    export = commands.add_parser(
        "export",
        help="write audit packs (everything recorded about items, hashed, JSON) or a "
        "search's results (CSV)",
    )
    export_commands = export.add_subparsers(title="export commands", required=True, metavar="WHAT")
    export_item = export_commands.add_parser(
        "item", help="one item's audit pack, the document ReviewItem.auditPack returns"
    )
    export_item.add_argument("id", type=item_id, metavar="ID", help="the item's id")
    export_item.add_argument(
        "--output", type=Path, metavar="FILE", help="write to FILE (default: standard output)"
    )
    export_item.set_defaults(run=run_export_item)
    export_queue = export_commands.add_parser(
        "queue",
        help="one line per item first enqueued to the queue from --since up to (not "
        "including) --until: its audit pack",
    )
    export_queue.add_argument("name", type=queue_name, metavar="NAME", help="the queue")
    for bound, meaning in (("--since", "from (included)"), ("--until", "up to (excluded)")):
        export_queue.add_argument(
            bound,
            required=True,
            type=moment,
            metavar="WHEN",
            help=f"enqueue times {meaning}: an ISO date (2026-11-01, midnight UTC) or date "
            "and time (2026-11-01T09:30:00+01:00; UTC without an offset)",
        )
    export_queue.add_argument(
        "--output", type=Path, metavar="FILE", help="write to FILE (default: standard output)"
    )
    export_queue.set_defaults(run=run_export_queue, parser=export_queue)
    add_export_search_command(export_commands)
    return parser


def _add_session_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    session = commands.add_parser("session", help="single sign-on sessions of the console")
    session_commands = session.add_subparsers(
        title="session commands", required=True, metavar="ACTION"
    )
    listing = session_commands.add_parser(
        "list", help="list live sessions: user, grants, signed in, last seen, when they end"
    )
    listing.add_argument("--all", action="store_true", help="include ended and timed-out ones")
    listing.set_defaults(run=run_session_list)
    revoke = session_commands.add_parser(
        "revoke", help="end one session (its id, from `session list`)"
    )
    revoke.add_argument(
        "session_id", type=session_id, metavar="ID", help="the session (see `session list`)"
    )
    revoke.set_defaults(run=run_session_revoke)


def _add_auth_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    auth = commands.add_parser("auth", help="single sign-on: test the claim-mapping rules")
    auth_commands = auth.add_subparsers(title="auth commands", required=True, metavar="ACTION")
    explain = auth_commands.add_parser(
        "explain",
        help="which rules match a set of claims and the grants that result (exit 0: granted, "
        "1: denied, 2: a bad rule file or input)",
    )
    explain.add_argument(
        "--rules",
        type=Path,
        metavar="FILE",
        help="the rule file, TOML or YAML (default: CASEWORK_AUTH_RULES)",
    )
    source = explain.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--claims", metavar="FILE", help="a JSON object of claims; - reads standard input"
    )
    source.add_argument(
        "--token",
        metavar="JWT",
        help="read the claims from this token (its signature is NOT checked)",
    )
    explain.add_argument(
        "--json", action="store_true", help="print the explanation as JSON, for scripts"
    )
    explain.set_defaults(run=run_auth_explain)


def _version() -> str:
    try:
        return importlib.metadata.version("casework")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
