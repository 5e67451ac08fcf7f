"""A real PgBouncer (Debian's /usr/sbin/pgbouncer) in transaction mode, on a free loopback
port, in front of the tests' PostgreSQL: TEST_DATABASE_URL's server over TCP, or the embedded
server over its unix socket.

Every database name is passed through (`* =`), so a test's cloned database is reachable as
it is; the owner and `casework_app` log in with the passwords their DSNs carry (none with the
tests' servers). Its admin console answers SHOW STATS, POOLS, SERVERS, CLIENTS (`show`).

By hand, against a server of your own (prints the pooler's DSN; Ctrl-C stops it):

    python -m tests.ha.pgbouncer postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

from server.store.dsn import APP_ROLE
from tests.api.live_server import free_port

PGBOUNCER = "/usr/sbin/pgbouncer"
START_SECONDS = 20.0
STOP_SECONDS = 10.0
POLL_SECONDS = 0.05


class PgBouncerUnavailable(RuntimeError):
    """Debian's pgbouncer (or psql, to read its console) is not installed here."""


@dataclass(frozen=True)
class Upstream:
    """Where PgBouncer finds PostgreSQL: a host name, or a unix socket directory."""

    host: str
    port: int
    users: dict[str, str] = field(default_factory=dict)

    @property
    def unix_socket(self) -> bool:
        return self.host.startswith("/")


def upstream_of(server_dsn: str) -> Upstream:
    """The server of an owner DSN such as the tests' `pg_server`: TCP (`@127.0.0.1:5432`) or
    a socket directory (`@/postgres?host=/tmp/x/pgdata`, the embedded server)."""
    parts = urlsplit(server_dsn)
    socket_dir = parse_qs(parts.query).get("host", [""])[0]
    host = socket_dir or parts.hostname or "127.0.0.1"
    owner = unquote(parts.username or "postgres")
    return Upstream(
        host=host,
        port=parts.port or 5432,
        users={owner: unquote(parts.password or ""), APP_ROLE: ""},
    )


def _run_as(upstream: Upstream) -> str | None:
    """PgBouncer refuses to run as root: as root, it runs as the user that can reach the
    server (the socket directory's owner; `postgres` over TCP)."""
    if os.geteuid() != 0:
        return None
    if upstream.unix_socket:
        return pwd.getpwuid(Path(upstream.host).stat().st_uid).pw_name
    return "postgres"


def _psql() -> str:
    found = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
    if not Path(found).exists():
        raise PgBouncerUnavailable("psql is not installed (Debian: postgresql-client-15)")
    return found


@dataclass
class PgBouncer:
    """A running PgBouncer: its port, its console, and DSNs through it."""

    port: int
    admin_user: str
    directory: Path
    process: subprocess.Popen[bytes]
    pool_size: int

    def dsn(self, target: str) -> str:
        """`target` (a DSN of the upstream server) with PgBouncer's address instead."""
        parts = urlsplit(target)
        netloc = f"127.0.0.1:{self.port}"
        if parts.username:
            credentials = parts.username + (f":{parts.password}" if parts.password else "")
            netloc = f"{credentials}@{netloc}"
        query = "&".join(
            f"{key}={value}"
            for key, values in parse_qs(parts.query).items()
            if key != "host"
            for value in values
        )
        return urlunsplit(("postgresql", netloc, parts.path, query, ""))

    def show(self, what: str) -> list[dict[str, str]]:
        """`SHOW <what>` on the admin console (STATS, POOLS, SERVERS, CLIENTS, ...), one dict
        per row. The console speaks the simple query protocol only, so psql asks."""
        if not what.replace("_", "").isalpha():
            raise ValueError(f"not a SHOW subject: {what!r}")
        result = subprocess.run(
            [
                _psql(),
                "-X",
                "-q",
                "-A",
                "-F",
                "\t",
                "-P",
                "footer=off",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                self.admin_user,
                "-d",
                "pgbouncer",
                "-c",
                f"SHOW {what}",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"SHOW {what} failed: {result.stderr.strip()}")
        lines = result.stdout.splitlines()
        header = lines[0].split("\t")
        return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            # SIGTERM: an immediate shutdown, as the console's SHUTDOWN.
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _config(upstream: Upstream, directory: Path, port: int, pool_size: int, admin: str) -> str:
    return f"""\
[databases]
* = host={upstream.host} port={upstream.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir = {directory}
pidfile = {directory}/pgbouncer.pid
logfile = {directory}/pgbouncer.log
pool_mode = transaction
default_pool_size = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 1000
auth_type = trust
auth_file = {directory}/userlist.txt
admin_users = {admin}
stats_users = {admin}
server_login_retry = 1
"""


def _wait_for_port(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Polls until PgBouncer accepts on `port`: the signal that it serves."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"pgbouncer exited with {process.returncode}: "
                + (log.read_text(errors="replace") if log.exists() else "(no log)")
            )
        with socket.socket() as probe:
            probe.settimeout(1)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"pgbouncer did not listen on {port} within {START_SECONDS} s")
        time.sleep(POLL_SECONDS)


@contextmanager
def pgbouncer(server_dsn: str, *, pool_size: int = 2) -> Iterator[PgBouncer]:
    """PgBouncer in transaction mode in front of `server_dsn`'s server, with at most
    `pool_size` server connections per database and user: few, so that clients share them
    and whatever one leaves on a session is met by another."""
    if not Path(PGBOUNCER).exists():
        raise PgBouncerUnavailable(f"{PGBOUNCER} is not installed (Debian: pgbouncer)")
    upstream = upstream_of(server_dsn)
    run_as = _run_as(upstream)
    admin = next(iter(upstream.users))
    directory = Path(tempfile.mkdtemp(prefix="casework-pgbouncer-", dir="/tmp"))
    port = free_port()
    (directory / "pgbouncer.ini").write_text(_config(upstream, directory, port, pool_size, admin))
    (directory / "userlist.txt").write_text(
        "".join(f'"{user}" "{password}"\n' for user, password in upstream.users.items())
    )
    if run_as is not None:
        account = pwd.getpwnam(run_as)
        for path in (directory, *directory.iterdir()):
            os.chown(path, account.pw_uid, account.pw_gid)
    command = [PGBOUNCER, *(["-u", run_as] if run_as else []), str(directory / "pgbouncer.ini")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    bouncer = PgBouncer(port, admin, directory, process, pool_size)
    try:
        _wait_for_port(process, port, directory / "pgbouncer.log")
        yield bouncer
    finally:
        bouncer.stop()
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(f"usage: python -m tests.ha.pgbouncer SERVER_DSN\n{__doc__}", file=sys.stderr)
        return 2
    with pgbouncer(argv[0]) as bouncer:
        print(bouncer.dsn(argv[0]), flush=True)
        print(f"console: psql -h 127.0.0.1 -p {bouncer.port} -U {bouncer.admin_user} pgbouncer")
        with suppress(KeyboardInterrupt):
            bouncer.process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
