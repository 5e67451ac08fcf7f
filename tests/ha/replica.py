"""A PostgreSQL 15 primary and a streaming standby on loopback ports, for the read-replica
tests (docs/operations.md, "Read replicas").

The primary is made with initdb, the standby with `pg_basebackup -R` (streaming
replication, asynchronous); the Casework schema is migrated onto the primary and reaches the
standby as WAL. Both run as the `postgres` OS user (PostgreSQL refuses root) with their data
under one directory in /tmp, removed on stop. The standby can be stopped and started again,
and its replay paused and resumed, which makes real lag: the primary goes on committing and
the standby shows the database as it was.

By hand: `.venv/bin/python -m tests.ha.replica` starts a pair, prints the DSNs and the
CASEWORK_READ_DATABASE_URL to export, and stops it on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from server.config import REPO_ROOT
from server.store.dsn import APP_ROLE, with_user
from server.store.migrate import apply_migrations
from tests.api.live_server import free_ports
from tests.ha.postgres import OS_USER, PG_BIN, missing

DATABASE = "casework"
START_TIMEOUT_SECONDS = 60


class HarnessError(RuntimeError):
    """The cluster could not be made; the message carries the tool's output or log tail."""


def available() -> str | None:
    """Why the harness cannot run here, or None when it can."""
    return missing()


def _as_postgres(*command: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    # Run as root (CI, this machine), the tools run as the postgres user; run as that user
    # already, directly.
    prefix = ["runuser", "-u", OS_USER, "--"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [*prefix, *(str(part) for part in command)],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_SECONDS * 2,
        check=False,
    )
    if check and done.returncode != 0:
        raise HarnessError(
            f"{Path(str(command[0])).name} failed ({done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-2000:]}"
        )
    return done


@dataclass
class Node:
    name: str
    data_dir: Path
    port: int
    log_file: Path

    @property
    def owner_dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def app_dsn(self) -> str:
        return with_user(self.owner_dsn, APP_ROLE)

    def start(self) -> None:
        done = _as_postgres(
            PG_BIN / "pg_ctl",
            "-D",
            self.data_dir,
            "-l",
            self.log_file,
            "-w",
            "-t",
            str(START_TIMEOUT_SECONDS),
            "start",
            check=False,
        )
        if done.returncode != 0:
            raise HarnessError(f"{self.name} did not start: {self.log_tail()}")

    def stop(self, mode: str = "fast") -> None:
        _as_postgres(PG_BIN / "pg_ctl", "-D", self.data_dir, "-m", mode, "-w", "stop")

    def pids(self) -> list[int]:
        """The postmaster and its children."""
        postmaster = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        found = [postmaster]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == postmaster:
                    found.append(int(stat.parent.name))
        return found

    def running(self) -> bool:
        done = _as_postgres(PG_BIN / "pg_ctl", "-D", self.data_dir, "status", check=False)
        return done.returncode == 0

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_file.read_text().splitlines()[-lines:])
        return "(no log)"


@dataclass
class ReplicaPair:
    """A primary and its streaming standby. Use `async with started_pair() as pair`."""

    root: Path
    primary: Node
    standby: Node

    async def owner(self, node: Node) -> asyncpg.Connection:
        conn: asyncpg.Connection = await asyncpg.connect(node.owner_dsn, timeout=10)
        return conn

    async def primary_lsn(self) -> str:
        conn = await self.owner(self.primary)
        try:
            return str(await conn.fetchval("SELECT pg_current_wal_lsn()::text"))
        finally:
            await conn.close()

    async def caught_up(self, within: float = 30.0) -> None:
        """Waits until the standby has replayed everything the primary had written when
        this was called (a condition polled with a deadline)."""
        target = await self.primary_lsn()
        deadline = time.monotonic() + within
        conn = await self.owner(self.standby)
        try:
            while True:
                behind = await conn.fetchval(
                    "SELECT pg_wal_lsn_diff($1::text::pg_lsn, pg_last_wal_replay_lsn())", target
                )
                if behind is not None and behind <= 0:
                    return
                if time.monotonic() > deadline:
                    raise HarnessError(f"the standby is still {behind} bytes behind {target}")
                await asyncio.sleep(0.05)
        finally:
            await conn.close()

    async def pause_replay(self) -> None:
        """Stops applying WAL on the standby (it keeps receiving it): real, growing lag."""
        await self._on_standby("SELECT pg_wal_replay_pause()")
        await self._wait_standby("SELECT pg_get_wal_replay_pause_state() = 'paused'")

    async def resume_replay(self) -> None:
        await self._on_standby("SELECT pg_wal_replay_resume()")
        await self._wait_standby("SELECT pg_get_wal_replay_pause_state() = 'not paused'")

    def freeze_standby(self) -> None:
        """SIGSTOPs every process of the standby: a replica that accepts TCP connections and
        answers nothing, as a hung machine does (thaw_standby undoes it)."""
        for pid in self.standby.pids():
            os.kill(pid, signal.SIGSTOP)

    def thaw_standby(self) -> None:
        for pid in self.standby.pids():
            os.kill(pid, signal.SIGCONT)

    def stop_standby(self, mode: str = "immediate") -> None:
        self.standby.stop(mode)

    def start_standby(self) -> None:
        self.standby.start()

    async def _on_standby(self, statement: str) -> None:
        conn = await self.owner(self.standby)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    async def _wait_standby(self, condition: str, within: float = 10.0) -> None:
        deadline = time.monotonic() + within
        conn = await self.owner(self.standby)
        try:
            while not await conn.fetchval(condition):
                if time.monotonic() > deadline:
                    raise HarnessError(f"the standby never satisfied: {condition}")
                await asyncio.sleep(0.02)
        finally:
            await conn.close()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.thaw_standby()
        for node in (self.standby, self.primary):
            if node.running():
                with contextlib.suppress(HarnessError, subprocess.TimeoutExpired):
                    node.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def _configure(node: Node, socket_dir: Path, extra: str = "") -> None:
    settings = (
        f"\nport = {node.port}\n"
        "listen_addresses = '127.0.0.1'\n"
        f"unix_socket_directories = '{socket_dir}'\n"
        # Test clusters: a crash of the machine is not what is tested, and it is shared.
        # synchronous_commit stays on, as in production: a commit is in the WAL position
        # the lag check reads (pg_current_wal_lsn) once it is acknowledged.
        "fsync = off\nfull_page_writes = off\n"
        "shared_buffers = 32MB\nmax_connections = 60\n"
        "wal_receiver_status_interval = 1s\n" + extra
    )
    conf = node.data_dir / "postgresql.auto.conf"
    with conf.open("a") as out:
        out.write(settings)


def make_pair(root: Path | None = None) -> ReplicaPair:
    """Makes and starts the primary, migrates it, then makes and starts the standby."""
    reason = available()
    if reason is not None:
        raise HarnessError(reason)
    root = root or Path(tempfile.mkdtemp(prefix="casework-replica-", dir="/tmp"))
    if os.geteuid() == 0:
        postgres = pwd.getpwnam(OS_USER)
        os.chown(root, postgres.pw_uid, postgres.pw_gid)
    root.chmod(0o700)
    primary_port, standby_port = free_ports(2)
    primary = Node("primary", root / "primary", primary_port, root / "primary.log")
    standby = Node("standby", root / "standby", standby_port, root / "standby.log")
    pair = ReplicaPair(root, primary, standby)
    try:
        _as_postgres(
            PG_BIN / "initdb",
            "-D",
            primary.data_dir,
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        )
        _configure(primary, root)
        primary.start()
        asyncio.run(_create_and_migrate(primary))
        _as_postgres(
            PG_BIN / "pg_basebackup",
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            "postgres",
            "-D",
            standby.data_dir,
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
            "--no-sync",
        )
        # The copy carries the primary's port; the standby listens on its own.
        _configure(standby, root, "hot_standby = on\n")
        standby.start()
    except BaseException:
        pair.close()
        raise
    return pair


async def _create_and_migrate(primary: Node) -> None:
    admin = await asyncpg.connect(primary.owner_dsn.rsplit("/", 1)[0] + "/postgres", timeout=10)
    try:
        await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(primary.owner_dsn, timeout=10)
    try:
        await apply_migrations(conn, REPO_ROOT / "db" / "migrations")
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def started_pair() -> AsyncIterator[ReplicaPair]:
    """A running pair, the standby caught up; stopped and removed on exit."""
    pair = await asyncio.to_thread(make_pair)
    try:
        await pair.caught_up()
        yield pair
    finally:
        await asyncio.to_thread(pair.close)


def main() -> None:
    # Ctrl-C, or a TERM from whoever started it in the background (where SIGINT may be
    # ignored), stops both servers and removes their data.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    pair = make_pair()
    try:
        asyncio.run(pair.caught_up())
        print(f"primary (owner): {pair.primary.owner_dsn}")
        print(f"standby (owner): {pair.standby.owner_dsn}")
        print(f"export DATABASE_URL={pair.primary.owner_dsn}")
        print(f"export CASEWORK_READ_DATABASE_URL={pair.standby.app_dsn}")
        print(f"data and logs in {pair.root}; Ctrl-C stops both", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    finally:
        pair.close()


if __name__ == "__main__":
    main()
