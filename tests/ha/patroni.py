"""A real failover cluster on loopback ports: one etcd and two Patroni nodes, each running a
PostgreSQL 15 (Debian's packages), in synchronous mode: a commit is on both nodes before the
primary acknowledges it. The Casework schema is migrated, and Casework reaches the cluster
with a multi-host DSN that picks whichever node is writable.

By hand: `python -m tests.ha patroni` starts one, prints its DSNs and waits for Ctrl-C.

Patroni's timings are cut down so that a failover takes seconds, not tens of seconds (see
DCS_SETTINGS); `primary_start_timeout: 0` makes a crashed primary fail over at once rather
than be restarted where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from server.store.dsn import APP_ROLE, with_user
from server.store.migrate import apply_migrations
from tests import pg
from tests.api.live_server import free_ports
from tests.ha import postgres
from tests.ha.postgres import PG_BIN

DATABASE = "casework"
REPLICATION_USER = "replicator"
# Patroni's loop and its etcd lease, cut down for tests (its defaults: 30, 10, 10). Patroni
# needs loop_wait + 2 * retry_timeout <= ttl. The leader key then lapses 10 s after a whole
# node (Patroni included) is lost; a crashed PostgreSQL under a living Patroni fails over at
# its next loop, within a second, because of primary_start_timeout 0.
DCS_SETTINGS: dict[str, Any] = {
    "ttl": 10,
    "loop_wait": 1,
    "retry_timeout": 3,
    "primary_start_timeout": 0,
    "synchronous_mode": True,
    "maximum_lag_on_failover": 1048576,
}
POSTGRES_PARAMETERS: dict[str, Any] = {
    "max_connections": 100,
    "shared_buffers": "32MB",
    "wal_level": "replica",
    "hot_standby": "on",
    "wal_log_hints": "on",
    "max_wal_senders": 5,
    "max_replication_slots": 5,
    "wal_keep_size": "64MB",
}
START_WITHIN_SECONDS = 90.0
STOP_WITHIN_SECONDS = 30.0
POLL_SECONDS = 0.1


@dataclass
class PatroniNode:
    name: str
    pg_port: int
    api_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def config_path(self) -> Path:
        return self.directory / "patroni.yml"

    @property
    def log_path(self) -> Path:
        return self.directory / "patroni.log"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.pg_port}"

    def postmaster_pid(self) -> int | None:
        return postgres.postmaster_pid(self.data_dir)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


class ProcessExited(AssertionError):
    """etcd or a Patroni node exited while the cluster should be running."""


@dataclass(frozen=True)
class Member:
    """One node as Patroni's /cluster reports it."""

    name: str
    role: str
    state: str


@dataclass
class PatroniCluster:
    directory: Path
    scope: str
    etcd_port: int
    etcd_peer_port: int
    nodes: tuple[PatroniNode, PatroniNode]
    etcd: subprocess.Popen[bytes] | None = None
    _opened: list[Any] = field(default_factory=list)

    @property
    def owner_dsn(self) -> str:
        """The owner role (PostgreSQL's superuser here) at whichever node is writable."""
        hosts = ",".join(node.address for node in self.nodes)
        return f"postgresql://postgres@{hosts}/{DATABASE}?target_session_attrs=read-write"

    @property
    def app_dsn(self) -> str:
        return with_user(self.owner_dsn, APP_ROLE)

    def node_dsn(self, node: PatroniNode, database: str = DATABASE) -> str:
        """The owner at one node, writable or not."""
        return f"postgresql://postgres@{node.address}/{database}"

    def node(self, name: str) -> PatroniNode:
        return next(node for node in self.nodes if node.name == name)

    def _start_etcd(self) -> None:
        data = postgres.make_owned(self.directory / "etcd")
        client = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        log = (self.directory / "etcd.log").open("wb")
        self._opened.append(log)
        self.etcd = subprocess.Popen(
            [
                "etcd",
                "--name=casework-ha",
                f"--data-dir={data}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=casework-ha={peer}",
                f"--initial-cluster-token={self.scope}",
                "--initial-cluster-state=new",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.directory,
            **postgres.as_server_user(),
        )

    def _config(self, node: PatroniNode) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "namespace": "/casework-ha/",
            "name": node.name,
            "log": {"level": "INFO"},
            "restapi": {
                "listen": f"127.0.0.1:{node.api_port}",
                "connect_address": f"127.0.0.1:{node.api_port}",
            },
            "etcd3": {"hosts": [f"127.0.0.1:{self.etcd_port}"]},
            "bootstrap": {
                "dcs": {
                    **DCS_SETTINGS,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "use_slots": True,
                        "parameters": POSTGRES_PARAMETERS,
                    },
                },
                # Throw-away data: nothing is synced to disk at creation (the running
                # servers fsync as usual).
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, "no-sync"],
                "pg_hba": [
                    "local all all trust",
                    f"host replication {REPLICATION_USER} 127.0.0.1/32 trust",
                    "host all all 127.0.0.1/32 trust",
                ],
            },
            "postgresql": {
                "listen": node.address,
                "connect_address": node.address,
                "data_dir": str(node.data_dir),
                "bin_dir": str(PG_BIN),
                "pgpass": str(node.directory / "pgpass"),
                # The standby's copy starts at once instead of after a spread checkpoint.
                "basebackup": [{"checkpoint": "fast"}, "no-sync"],
                "authentication": {
                    "superuser": {"username": "postgres", "password": "postgres"},
                    "replication": {"username": REPLICATION_USER, "password": "replicator"},
                    "rewind": {"username": "postgres", "password": "postgres"},
                },
                "parameters": {"unix_socket_directories": str(node.directory)},
            },
            "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False},
        }

    def _start_node(self, node: PatroniNode) -> None:
        postgres.make_owned(node.directory)
        # JSON is YAML: no YAML writer needed.
        postgres.write_owned(node.config_path, json.dumps(self._config(node), indent=2))
        log = node.log_path.open("wb")
        self._opened.append(log)
        node.process = subprocess.Popen(
            ["patroni", str(node.config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=node.directory,
            **postgres.as_server_user(),
        )

    async def start(self) -> None:
        """etcd, then both nodes; returns once one leads with the other as its synchronous
        standby, and the Casework database is migrated."""
        self._start_etcd()
        await self._wait(self._etcd_ready, within=30, what="etcd answering")
        for node in self.nodes:
            self._start_node(node)
        await self.wait_synchronous(within=START_WITHIN_SECONDS)
        await self._create_and_migrate()

    async def _etcd_ready(self) -> bool:
        async with httpx.AsyncClient(timeout=1) as client:
            try:
                response = await client.get(f"http://127.0.0.1:{self.etcd_port}/health")
            except httpx.HTTPError:
                return False
        return response.status_code == 200 and response.json().get("health") == "true"

    async def _create_and_migrate(self) -> None:
        leader = await self.leader(within=10)
        admin = await asyncpg.connect(self.node_dsn(leader, "postgres"))
        try:
            await admin.execute(f'CREATE DATABASE "{DATABASE}"')
        finally:
            await admin.close()
        # A client of the multi-host DSN tries the standby first when it is listed first,
        # and stops at "database does not exist" until the standby has replayed the CREATE.
        for node in self.nodes:

            async def replayed(node: PatroniNode = node) -> bool:
                return await self._has_database(node)

            await self._wait(replayed, within=30, what=f"database {DATABASE} on {node.name}")
        # Through the multi-host DSN, as Casework's own `migrate` would.
        conn = await asyncpg.connect(self.owner_dsn)
        try:
            await apply_migrations(conn, pg.MIGRATIONS_DIR)
        finally:
            await conn.close()

    async def _value(self, node: PatroniNode, query: str, database: str = "postgres") -> Any:
        """`query`'s one value on `node`, or None when the node does not answer."""
        try:
            conn = await asyncio.wait_for(asyncpg.connect(self.node_dsn(node, database)), 2)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
            return None
        try:
            return await conn.fetchval(query)
        finally:
            await conn.close()

    async def _has_database(self, node: PatroniNode) -> bool:
        return await self._value(node, "SELECT true", DATABASE) is True

    async def members(self) -> list[Member]:
        """The cluster as the first node that answers describes it (empty: none answers)."""
        async with httpx.AsyncClient(timeout=2) as client:
            for node in self.nodes:
                try:
                    response = await client.get(f"{node.api_url}/cluster")
                except httpx.HTTPError:
                    continue
                if response.status_code != 200:
                    continue
                members = response.json().get("members", [])
                return [Member(m["name"], m["role"], m.get("state", "")) for m in members]
        return []

    async def _leading(self, exclude: PatroniNode | None = None) -> PatroniNode | None:
        """The node Patroni calls leader, running and writable, other than `exclude`."""
        for member in await self.members():
            if member.role != "leader" or member.state != "running":
                continue
            if exclude is not None and member.name == exclude.name:
                continue
            node = self.node(member.name)
            if await self._writable(node):
                return node
        return None

    async def _writable(self, node: PatroniNode) -> bool:
        return await self._value(node, "SELECT NOT pg_is_in_recovery()") is True

    async def leader(self, *, within: float, exclude: PatroniNode | None = None) -> PatroniNode:
        """The writable leader (other than `exclude`), once there is one."""
        found: list[PatroniNode] = []

        async def led() -> bool:
            node = await self._leading(exclude)
            if node is not None:
                found.append(node)
            return node is not None

        await self._wait(led, within=within, what="a writable leader")
        return found[-1]

    async def wait_synchronous(self, *, within: float) -> PatroniNode:
        """Until a leader has the other node as its synchronous standby, streaming (the
        leader's pg_stat_replication says `sync`); returns the leader."""
        found: list[PatroniNode] = []

        async def synchronous() -> bool:
            members = await self.members()
            roles = {member.role for member in members}
            if roles != {"leader", "sync_standby"}:
                return False
            leader = await self._leading()
            if leader is None or not await self._streaming_sync(leader):
                return False
            found.append(leader)
            return True

        await self._wait(synchronous, within=within, what="a leader with a synchronous standby")
        return found[-1]

    async def _streaming_sync(self, leader: PatroniNode) -> bool:
        query = (
            "SELECT count(*) > 0 FROM pg_stat_replication"
            " WHERE state = 'streaming' AND sync_state = 'sync'"
        )
        return await self._value(leader, query) is True

    async def _wait(self, check: Callable[[], Any], *, within: float, what: str) -> None:
        deadline = time.monotonic() + within
        while not await check():
            self._assert_running()
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {within} s\n{self.describe_logs()}")
            await asyncio.sleep(POLL_SECONDS)

    def _assert_running(self) -> None:
        for name, process in [("etcd", self.etcd), *((n.name, n.process) for n in self.nodes)]:
            if process is not None and process.poll() is not None:
                raise ProcessExited(
                    f"{name} exited with status {process.returncode}\n"
                    f"{self.describe_logs(lines=150)}"
                )

    def describe_logs(self, lines: int = 40) -> str:
        parts = [
            f"--- {node.name} ({node.log_path}):\n{node.log_tail(lines)}" for node in self.nodes
        ]
        return "\n".join(parts)

    def kill_postmaster(self, node: PatroniNode) -> int:
        """SIGKILLs the node's postmaster (its backends notice and exit); returns its pid."""
        pid = node.postmaster_pid()
        assert pid is not None, f"{node.name} has no postmaster.pid"
        os.kill(pid, signal.SIGKILL)
        return pid

    async def stop_immediate(self, node: PatroniNode) -> None:
        """`pg_ctl stop -m immediate` on the node: every process quits without a checkpoint."""
        await asyncio.to_thread(
            postgres.run_as_server_user,
            str(PG_BIN / "pg_ctl"),
            "stop",
            "-D",
            str(node.data_dir),
            "-m",
            "immediate",
            "-w",
        )

    async def close(self) -> None:
        """Stops everything at once and removes the files: the data is thrown away, so
        nothing is shut down cleanly (Patroni is killed first, lest it restart PostgreSQL)."""
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.kill()
        for node in self.nodes:
            if node.process is not None:
                await _reap(node.process, STOP_WITHIN_SECONDS)
            pid = node.postmaster_pid()
            if pid is not None and postgres.process_alive(pid):
                # PostgreSQL's immediate shutdown: the postmaster quits its children, then itself.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGQUIT)
                await _gone(pid, STOP_WITHIN_SECONDS)
        if self.etcd is not None:
            if self.etcd.poll() is None:
                self.etcd.kill()
            await _reap(self.etcd, STOP_WITHIN_SECONDS)
        for opened in self._opened:
            opened.close()
        shutil.rmtree(self.directory, ignore_errors=True)


async def _gone(pid: int, within: float) -> None:
    deadline = time.monotonic() + within
    while postgres.process_alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return
        await asyncio.sleep(POLL_SECONDS)


async def _reap(process: subprocess.Popen[bytes], within: float) -> None:
    deadline = time.monotonic() + within
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            await asyncio.to_thread(process.wait)
            return
        await asyncio.sleep(POLL_SECONDS)


def new_cluster() -> PatroniCluster:
    directory = postgres.owned_directory("casework-patroni-")
    # Six ports, distinct: etcd's two and each node's PostgreSQL and REST API.
    etcd_port, etcd_peer_port, *node_ports = free_ports(6)
    nodes = tuple(
        PatroniNode(f"node{n}", node_ports[2 * i], node_ports[2 * i + 1], directory / f"node{n}")
        for i, n in enumerate((1, 2))
    )
    assert len(nodes) == 2
    return PatroniCluster(
        directory=directory,
        scope=f"casework-{secrets.token_hex(4)}",
        etcd_port=etcd_port,
        etcd_peer_port=etcd_peer_port,
        nodes=(nodes[0], nodes[1]),
    )


@asynccontextmanager
async def patroni_cluster() -> AsyncIterator[PatroniCluster]:
    """A started, migrated cluster, stopped and removed on the way out.

    A node whose first postmaster dies during bootstrap gets one fresh cluster on fresh
    ports: the ports are free when chosen, but another test process may bind one before
    PostgreSQL does (seen once in CI). That is the harness's race, not the failover's, and
    the failure is printed so a second cause would still be seen."""
    cluster = new_cluster()
    try:
        await cluster.start()
    except ProcessExited as exited:
        await cluster.close()
        print(f"the Patroni cluster did not start; trying once more:\n{exited}", file=sys.stderr)
        cluster = new_cluster()
        try:
            await cluster.start()
        except BaseException:
            await cluster.close()
            raise
    except BaseException:
        await cluster.close()
        raise
    try:
        yield cluster
    finally:
        await cluster.close()


async def _serve_by_hand() -> None:
    started = time.monotonic()
    async with patroni_cluster() as cluster:
        leader = await cluster.leader(within=10)
        print(f"Patroni cluster up in {time.monotonic() - started:.1f} s ({cluster.directory})")
        for node in cluster.nodes:
            role = "leader" if node is leader else "synchronous standby"
            print(f"  {node.name}: PostgreSQL {node.address}, Patroni {node.api_url} ({role})")
        print(f"  etcd: http://127.0.0.1:{cluster.etcd_port}")
        print(f"DATABASE_URL={cluster.owner_dsn}")
        print(f"CASEWORK_APP_DATABASE_URL={cluster.app_dsn}")
        print(
            f"Fail over: kill -9 $(head -1 {leader.data_dir}/postmaster.pid), or "
            f"patronictl -c {leader.config_path} list. Ctrl-C stops the cluster.",
            flush=True,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        print("stopping the cluster", file=sys.stderr)


def main(argv: list[str]) -> int:
    """`python -m tests.ha patroni`: a cluster until Ctrl-C."""
    reason = postgres.missing("patroni", "etcd")
    if reason is not None:
        print(reason, file=sys.stderr)
        return 2
    if argv:
        print("usage: python -m tests.ha patroni", file=sys.stderr)
        return 2
    asyncio.run(_serve_by_hand())
    return 0
