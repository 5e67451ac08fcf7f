"""`casework export item|queue`: audit packs written to a file or standard output."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from server.config import Settings
from server.domain.quality import audit
from server.domain.review.queues import get_queues
from server.runtime import (
    Databases,
    StartupError,
    check_schema_current,
    connect_app,
    resolve_databases,
)
from server.store.database import Database
from server.store.queries import Queries
from server.store.routing import replica_for_export

if TYPE_CHECKING:
    pass


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
        # With a read replica, an export reads it (server/store/routing.py) once it holds
        # everything committed before the command started; else the primary.
        replica, line = await replica_for_export(
            conn,
            settings.read_database_url,
            max_lag_seconds=settings.read_max_lag_seconds,
            timeout_seconds=settings.read_timeout_seconds,
        )
        if line:
            print(f"casework export: {line}", file=sys.stderr)
        try:
            yield Database(replica or conn, Queries(settings.db_dir / "queries"))
        finally:
            if replica is not None:
                await replica.close()
    finally:
        await conn.close()


def run_export_item(args: argparse.Namespace, settings: Settings) -> int:
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


def run_export_queue(args: argparse.Namespace, settings: Settings) -> int:
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
