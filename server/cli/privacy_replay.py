"""`casework privacy replay [--ledger PATH]`: after restoring a backup, erases again
everything the erasure ledger records (docs/privacy.md).

`add_replay_command(privacy_commands)` adds the subcommand to the `privacy` group; the
group itself lives with the other privacy commands.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from server.config import Settings
from server.domain.privacy.erasure import Replayed, replay
from server.domain.privacy.ledger import ErasureLedger, LedgerError
from server.runtime import StartupError, check_schema_current, connect_app, resolve_databases
from server.store.database import Database
from server.store.queries import Queries


def add_replay_command(
    privacy_commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    command = privacy_commands.add_parser(
        "replay",
        help="after restoring a backup: erase again everything the erasure ledger records "
        "(idempotent; each entry is logged as erasure_replayed)",
    )
    command.add_argument(
        "--ledger",
        type=Path,
        metavar="PATH",
        help="the ledger (default: CASEWORK_ERASURE_LEDGER, else CASEWORK_HOME/"
        "erasure-ledger.jsonl)",
    )
    command.set_defaults(run=run_privacy_replay)


def ledger_path(args: argparse.Namespace, settings: Settings) -> Path:
    given: Path | None = getattr(args, "ledger", None)
    return given or settings.privacy.erasure_ledger or settings.home / "erasure-ledger.jsonl"


def run_privacy_replay(args: argparse.Namespace, settings: Settings) -> int:
    path = ledger_path(args, settings)
    if not path.exists():
        raise StartupError(f"there is no erasure ledger at {path}")
    databases = resolve_databases(settings)

    async def apply() -> Replayed:
        await check_schema_current(databases, settings.db_dir / "migrations")
        conn = await connect_app(databases)
        try:
            db = Database(conn, Queries(settings.db_dir / "queries"))
            return await replay(db, ErasureLedger(path))
        finally:
            await conn.close()

    try:
        done = asyncio.run(apply())
    except LedgerError as error:
        raise StartupError(str(error)) from error
    print(
        f"casework privacy replay: {done.entries} entr{'y' if done.entries == 1 else 'ies'} "
        f"from {path}; erased again {done.fields_erased} field(s), {done.notes_erased} "
        f"note(s), {done.keys_shredded} key(s)",
        file=sys.stderr,
    )
    if done.held_item_ids:
        shown = ", ".join(str(i) for i in done.held_item_ids[:20])
        print(
            f"casework privacy replay: {len(done.held_item_ids)} item(s) are under a hold in "
            f"this database and were not erased ({shown}): a hold released after the backup "
            "was taken is live again here; release it again, then replay again",
            file=sys.stderr,
        )
        return 1
    return 0
