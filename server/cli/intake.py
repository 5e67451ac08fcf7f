"""`casework intake`: drains brokers' dead-letter queues into exceptions or review items
(server/intake), as an integration token (CASEWORK_INTAKE_TOKEN or --token)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from server.config import ConfigError, Settings
from server.runtime import check_schema_current, resolve_databases

# Exit codes: 2 a problem to fix before it can start (the file, the token, a queue); 1 it
# stopped while running: its token stopped working, or a source's broker went for good.
START_PROBLEM = 2
STOPPED = 1


def add_intake_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    intake = commands.add_parser(
        "intake",
        help="drain brokers' dead-letter queues into exceptions or review items (a TOML "
        "file of [[source]] tables; CASEWORK_INTAKE_TOKEN: an integration token)",
    )
    intake.add_argument(
        "--config", required=True, type=Path, metavar="FILE", help="the intake's TOML file"
    )
    intake.add_argument(
        "--token",
        metavar="TOKEN",
        help="the integration token to act as (default: CASEWORK_INTAKE_TOKEN)",
    )
    intake.add_argument(
        "--check",
        action="store_true",
        help="only check the file (every problem, one line each) and exit",
    )
    intake.add_argument(
        "--metrics-port", type=int, default=None, help="serve the intake's metrics on this port"
    )
    intake.add_argument(
        "--metrics-host", default="127.0.0.1", help="address for --metrics-port (127.0.0.1)"
    )
    intake.set_defaults(run=run_intake_command)


def run_intake_command(args: argparse.Namespace, settings: Settings) -> int:
    from server.cli.serve import _serve_worker_metrics, configure_observability, run_event_loop
    from server.intake.config import IntakeConfigError, load_config
    from server.intake.core import IntakeRefused
    from server.intake.redrive import redrive_until_stopped
    from server.intake.runner import TOKEN_VARIABLE, IntakeStartError, SourceEnded, run_intake

    try:
        config = load_config(args.config)
    except IntakeConfigError as error:
        for problem in error.problems:
            print(f"casework intake: error: {problem}", file=sys.stderr)
        return START_PROBLEM
    if args.check:
        print(f"casework intake: {args.config}: {len(config.sources)} source(s), no problem")
        return 0
    token = (args.token or os.environ.get(TOKEN_VARIABLE, "")).strip()
    if not token:
        raise ConfigError(
            f"{TOKEN_VARIABLE} is not set (nor --token): the intake acts with an integration "
            "token (`casework token create --role integration`)"
        )
    configure_observability(settings)
    if args.metrics_port is not None:
        _serve_worker_metrics(args.metrics_host, args.metrics_port)
    databases = resolve_databases(settings)
    asyncio.run(check_schema_current(databases, settings.db_dir / "migrations"))
    try:
        run_event_loop(
            run_intake(
                databases.app_dsn,
                settings,
                config,
                token,
                announce=lambda line: print(line, flush=True),
                # Approved corrections of broker workflows, published back where they failed.
                redrive=redrive_until_stopped,
            )
        )
    except IntakeStartError as error:
        for problem in error.problems:
            print(f"casework intake: error: {problem}", file=sys.stderr)
        return START_PROBLEM
    except (IntakeRefused, SourceEnded) as stopped:
        print(f"casework intake: stopped: {stopped}", file=sys.stderr)
        return STOPPED
    return 0
