"""`casework export item|queue`: audit packs written to a file or standard output."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, BinaryIO

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


class OutputFailed(StartupError):
    """The export could not be written (a full disk, a closed pipe): one line, status 2."""


class _Output:
    """Where the export goes. A write that fails (ENOSPC, EPIPE, EIO) becomes OutputFailed
    naming the destination, so that it is told apart from a failure to read."""

    def __init__(self, stream: BinaryIO, name: str, *, after: str = "") -> None:
        self._stream = stream
        self.name = name
        self._after = after

    def failed(self, error: OSError) -> OutputFailed:
        reason = error.strerror or str(error) or type(error).__name__
        return OutputFailed(f"cannot write {self.name}: {reason}{self._after}")

    def write(self, data: bytes) -> None:
        try:
            self._stream.write(data)
        except OSError as error:
            raise self.failed(error) from error

    def finish(self, *, sync: bool) -> None:
        """Flushes what is buffered (and, for a file, to the disk: a full disk may only say
        so now)."""
        try:
            self._stream.flush()
            if sync:
                os.fsync(self._stream.fileno())
        except OSError as error:
            raise self.failed(error) from error


@contextmanager
def _output(path: Path | None) -> Iterator[_Output]:
    """Standard output, or FILE written beside itself and renamed into place once complete
    and on disk, so that a FILE that exists is never half an export: on any failure the
    partial file is removed and FILE is left as it was (absent, or the previous export)."""
    if path is None:
        out = _Output(sys.stdout.buffer, "standard output")
        try:
            yield out
            out.finish(sync=False)
        except OutputFailed:
            _discard_standard_output()
            raise
        return
    partial = path.with_name(path.name + ".partial")
    try:
        stream = partial.open("wb")
    except OSError as error:
        raise StartupError(f"cannot write {path}: {error.strerror or error}") from error
    out = _Output(stream, str(path), after=f" ({partial.name} removed, {path.name} not written)")
    try:
        yield out
        out.finish(sync=True)
        try:
            stream.close()
            partial.replace(path)
        except OSError as error:
            raise out.failed(error) from error
    except BaseException:
        # What is still buffered cannot be written either: closing says so again.
        with contextlib.suppress(OSError):
            stream.close()
        partial.unlink(missing_ok=True)
        raise


def _discard_standard_output() -> None:
    """What could not be written stays buffered, and the interpreter would try (and fail)
    again at exit, printing a second error: send it nowhere instead."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


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

    async def write(out: _Output) -> int:
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
