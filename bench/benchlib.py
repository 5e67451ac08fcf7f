"""Shared helpers of the benchmarks: scratch databases, seeding, statistics.

Every database a benchmark creates is named `casework_bench_*` and dropped when it ends.
Only local servers are accepted: 127.0.0.1, localhost, ::1 or a unix socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import asyncpg
import httpx
from http1 import KeepAliveConnection

from server.app import WS_PER_MESSAGE_DEFLATE
from server.config import REPO_ROOT
from server.domain.failures import is_failure
from server.domain.model import Claim, Decision, Principal, Role, Verdict
from server.domain.review.decisions import DecisionInput, submit_decision
from server.domain.review.items import MAX_BATCH, NewItem, enqueue_items
from server.domain.review.queues import QueueSettings, configure_queue, define_reason_code
from server.store.database import Database, connect
from server.store.dsn import APP_ROLE, with_database, with_user
from server.store.migrate import apply_migrations
from server.store.queries import Queries

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
MIGRATIONS_DIR = REPO_ROOT / "db" / "migrations"
QUERIES_DIR = REPO_ROOT / "db" / "queries"

QUEUE = "bench"
REASON_CODE = "bench_ok"
ADMIN = Principal("bench-admin", Role.ADMIN, frozenset())
INTEGRATION = Principal("bench-integration", Role.INTEGRATION, frozenset())
REVIEWER = Principal("bench-reviewer", Role.REVIEWER, frozenset({QUEUE}))

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}

T = TypeVar("T")


def database_url_from_env() -> str:
    return os.environ.get("BENCH_DATABASE_URL") or DEFAULT_DATABASE_URL


def require_local(url: str) -> str:
    """The benchmarks talk to this machine only: refuse any other host."""
    parts = urlsplit(url)
    socket_dir = parse_qs(parts.query).get("host", [""])[0]
    host = parts.hostname
    if host is None and (socket_dir == "" or socket_dir.startswith("/")):
        return url
    if host in _LOCAL_HOSTS and (socket_dir == "" or socket_dir.startswith("/")):
        return url
    raise SystemExit(f"refusing {host or socket_dir!r}: benchmarks only use a local PostgreSQL")


def owner_dsn(server: str, name: str) -> str:
    return with_database(server, name)


def app_dsn(server: str, name: str) -> str:
    return with_user(with_database(server, name), APP_ROLE)


def new_name(kind: str) -> str:
    return f"casework_bench_{kind}_{uuid.uuid4().hex[:10]}"


async def create_database(server: str, name: str, *, template: str | None = None) -> None:
    admin = await asyncpg.connect(server)
    try:
        clause = f' TEMPLATE "{template}"' if template else ""
        await admin.execute(f'CREATE DATABASE "{name}"{clause}')
    finally:
        await admin.close()


async def drop_database(server: str, name: str) -> None:
    admin = await asyncpg.connect(server)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def create_migrated(server: str, name: str) -> None:
    await create_database(server, name)
    conn = await connect(owner_dsn(server, name))
    try:
        await apply_migrations(conn, MIGRATIONS_DIR)
    finally:
        await conn.close()


def check(result: object, what: str) -> None:
    if is_failure(result):
        raise RuntimeError(f"{what} failed: {result}")


async def seed_queue(db: Database) -> None:
    """The queue `bench` with one reason code per verdict, through the domain as an admin."""
    check(await configure_queue(db, ADMIN, QueueSettings(QUEUE, lease_ttl_seconds=600)), "queue")
    for code, verdict in ((REASON_CODE, Verdict.APPROVE), ("bench_escalate", Verdict.ESCALATE)):
        check(
            await define_reason_code(
                db, ADMIN, queue=QUEUE, code=code, label=code, verdicts=[verdict]
            ),
            "reason code",
        )


async def approve(db: Database, claim: Claim, what: str) -> Decision:
    """Approves a claimed item through the domain, as a reviewer's console would."""
    decision = await submit_decision(
        db,
        REVIEWER,
        DecisionInput(
            item_id=str(claim.item.id),
            lease_token=str(claim.lease_token),
            verdict=Verdict.APPROVE,
            reason_code=REASON_CODE,
            evidence_hash=claim.evidence_hash,
        ),
    )
    if not isinstance(decision, Decision):
        raise RuntimeError(f"decision on {what} returned {decision}")
    return decision


def approve_arguments(claimed: Mapping[str, Any], user: str) -> dict[str, Any]:
    """decision_submit's arguments for approving a claimed row, as the domain passes them:
    the raw paths of the benches run the same statement with the same values."""
    return {
        "item_id": claimed["id"],
        "lease_token": claimed["lease_token"],
        "actor": user,
        "actor_role": Role.REVIEWER.value,
        "verdict": "approve",
        "reason_code": REASON_CODE,
        "evidence_hash": claimed["evidence_hash"],
        "note": None,
        "queue_scope": [QUEUE],
        "traceparent": None,
        # A token's principal: no sign-in time or acr to fence, no authentication row.
        "auth_time": None,
        "acr": None,
        "authentication_id": None,
    }


def new_item(key: str, rng: random.Random) -> NewItem:
    payload = {
        "applicant": {"name": f"Applicant {key}", "country": rng.choice(["DE", "FR", "NL"])},
        "score": rng.randint(0, 1000),
        "documents": ["passport", "utility_bill"],
    }
    return NewItem(key, payload, rng.randint(0, 9))


async def enqueue(db: Database, keys: list[str], rng: random.Random) -> None:
    """Enqueues through the domain as an integration, in batches of the largest size."""
    for start in range(0, len(keys), MAX_BATCH):
        batch = [new_item(key, rng) for key in keys[start : start + MAX_BATCH]]
        check(await enqueue_items(db, INTEGRATION, QUEUE, batch), "enqueue")


def load_queries() -> Queries:
    return Queries(QUERIES_DIR)


def history_label(history: int) -> str:
    """1000000 -> "1M", 100000 -> "100k": how the history benches name a database."""
    if history >= 1_000_000 and history % 1_000_000 == 0:
        return f"{history // 1_000_000}M"
    if history >= 1000 and history % 1000 == 0:
        return f"{history // 1000}k"
    return str(history)


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of values sorted ascending."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _numeric(cell: str) -> bool:
    """A figure (right-aligned in a table): starts with a digit, or a sign and a digit, or is
    empty or "-" (not measured, or not this row's)."""
    return cell in ("", "-") or cell[:1].isdigit() or (cell[:1] in "-+~<>" and cell[1:2].isdigit())


def print_table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], *, title: str | None = None
) -> None:
    """Prints a markdown table, the shape docs/benchmarks.md shows each bench's figures in:
    each cell padded to its column, columns of figures right-aligned. Cells are printed as
    given (str() of anything not a string), so each script keeps its own precision."""
    body = [[cell if isinstance(cell, str) else str(cell) for cell in row] for row in rows]
    for row in body:
        if len(row) != len(headers):
            raise ValueError(f"a row of {len(row)} cells under {len(headers)} headers: {row}")
    widths = [
        max(3, len(header), *(len(row[n]) for row in body)) for n, header in enumerate(headers)
    ]
    right = [all(_numeric(row[n]) for row in body) and bool(body) for n in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.rjust(width) if flush else cell.ljust(width)
            for cell, width, flush in zip(cells, widths, right, strict=True)
        )
        return "| " + " | ".join(padded) + " |"

    if title:
        print(title)
    print(line(headers))
    print(
        "| "
        + " | ".join(
            "-" * (w - 1) + ":" if flush else "-" * w
            for w, flush in zip(widths, right, strict=True)
        )
        + " |"
    )
    for row in body:
        print(line(row), flush=True)


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Runs on uvloop, the loop uvicorn picks for the server, so both sides use the same one."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] installs it
        return asyncio.run(main())
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main())


# --- the server process under measurement ---------------------------------------------------

BENCH_DIR = REPO_ROOT / "bench"
# Generous: a server starting on a machine busy with others may take 20 s to import.
HEALTH_ATTEMPTS = 1200
HEALTH_INTERVAL_SECONDS = 0.05


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    base_url: str
    pid: int
    log: IO[bytes]

    @property
    def ws_url(self) -> str:
        return self.base_url.replace("http://", "ws://") + "/graphql"

    def log_tail(self, limit: int = 4000) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-limit:]


@contextlib.asynccontextmanager
async def uvicorn_server(
    app_dsn: str,
    *,
    pool_min: int,
    pool_max: int,
    env: dict[str, str],
    ws: str = "auto",
    factory: str = "app_factory:create",
) -> AsyncIterator[Server]:
    """A uvicorn process serving bench/app_factory.py on 127.0.0.1 with the settings of
    `casework serve`, stopped on exit."""
    port = free_port()
    environment = {
        **os.environ,
        "CASEWORK_BENCH_APP_DSN": app_dsn,
        "CASEWORK_POOL_MIN": str(pool_min),
        "CASEWORK_POOL_MAX": str(pool_max),
        **env,
    }
    with tempfile.TemporaryFile() as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "--app-dir",
            str(BENCH_DIR),
            factory,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--ws",
            ws,
            "--ws-per-message-deflate",
            "false" if not WS_PER_MESSAGE_DEFLATE else "true",
            "--log-level",
            "warning",
            "--no-access-log",
            env=environment,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        server = Server(f"http://127.0.0.1:{port}", process.pid, log)
        try:
            if not await _wait_healthy(server.base_url, process):
                raise RuntimeError(f"the server did not become healthy:\n{server.log_tail()}")
            yield server
        finally:
            await _stop(process, within=10)


SERVING_WITHIN_SECONDS = 60.0


async def _stop(process: asyncio.subprocess.Process, *, within: float) -> None:
    """SIGTERM, then SIGKILL if the process is still there `within` seconds later."""
    if process.returncode is not None:
        return
    process.terminate()
    try:
        await asyncio.wait_for(process.wait(), timeout=within)
    except TimeoutError:
        process.kill()
        await process.wait()


@contextlib.asynccontextmanager
async def casework_serve_server(
    app_dsn: str, *, workers: int, pool_min: int, pool_max: int, env: dict[str, str]
) -> AsyncIterator[Server]:
    """`casework serve --no-migrate --no-worker --workers N` on 127.0.0.1 as the service
    role, each process with a pool of pool_min..pool_max; yields once all N processes have
    started. Its pid is the parent's: the serving processes are its children."""
    port = free_port()
    environment = {key: value for key, value in os.environ.items() if "DATABASE_URL" not in key} | {
        "CASEWORK_APP_DATABASE_URL": app_dsn,
        "CASEWORK_POOL_MIN": str(pool_min),
        "CASEWORK_POOL_MAX": str(pool_max),
        **env,
    }
    with tempfile.TemporaryFile() as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "server.cli",
            "serve",
            "--no-migrate",
            "--no-worker",
            "--workers",
            str(workers),
            "--port",
            str(port),
            cwd=REPO_ROOT,
            env=environment,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        server = Server(f"http://127.0.0.1:{port}", process.pid, log)
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + SERVING_WITHIN_SECONDS
            # Every process says so on its own line; then one health check for the port.
            while server.log_tail(10**7).count("Application startup complete") < workers:
                if process.returncode is not None or loop.time() > deadline:
                    raise RuntimeError(f"casework serve did not start:\n{server.log_tail()}")
                await asyncio.sleep(HEALTH_INTERVAL_SECONDS)
            if not await _wait_healthy(server.base_url, process):
                raise RuntimeError(f"the server did not become healthy:\n{server.log_tail()}")
            yield server
        finally:
            await _stop(process, within=30)


def process_tree(pid: int) -> list[int]:
    """pid and its descendants, from /proc (the serving processes of `serve --workers`)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
    tree, frontier = [pid], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


async def _wait_healthy(base_url: str, process: asyncio.subprocess.Process) -> bool:
    """Polls GET /healthz until it answers 200, a bounded number of times."""
    async with httpx.AsyncClient(base_url=base_url, trust_env=False) as client:
        for _ in range(HEALTH_ATTEMPTS):
            if process.returncode is not None:
                return False
            try:
                if (await client.get("/healthz", timeout=1.0)).status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            await asyncio.sleep(HEALTH_INTERVAL_SECONDS)
    return False


# --- timed cycles and where their CPU went ---------------------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds over the timed window, and what the whole machine did meanwhile."""

    client: float  # this process: the workers and their client library
    server: float  # the server's processes (uvicorn, node, casework serve), summed
    postgres: float  # the backends connected to the database under test
    machine_busy: float  # all processes, every core: user + system + irq
    machine_steal: float  # taken by the hypervisor for other guests

    def __add__(self, other: CpuUse) -> CpuUse:
        return CpuUse(
            self.client + other.client,
            self.server + other.server,
            self.postgres + other.postgres,
            self.machine_busy + other.machine_busy,
            self.machine_steal + other.machine_steal,
        )


# CPU ms per cycle in a timed window, and the machine's cores busy and stolen on average.
CPU_HEADERS = ["client ms", "server ms", "postgres ms", "sum ms", "machine", "steal"]


@dataclass(frozen=True)
class Measurement:
    cycles: int
    seconds: float
    warmup_cycles: int
    decisions: int
    cpu: CpuUse

    @property
    def rate(self) -> float:
        return self.cycles / self.seconds

    def cpu_ms_per_cycle(self, seconds: float) -> float:
        return 1000 * seconds / self.cycles

    def cpu_cells(self, *, has_server: bool) -> list[str]:
        """The cells under CPU_HEADERS: CPU ms per cycle of the client, the server ("-" for
        a path without one) and the database's backends, their sum, then the cores busy and
        stolen on average over the timed window (all processes)."""
        client, server, postgres = (
            self.cpu_ms_per_cycle(seconds)
            for seconds in (self.cpu.client, self.cpu.server, self.cpu.postgres)
        )
        return [
            f"{client:.2f}",
            f"{server:.2f}" if has_server else "-",
            f"{postgres:.2f}",
            f"{client + server + postgres:.2f}",
            f"{self.cpu.machine_busy / self.seconds:.2f}",
            f"{self.cpu.machine_steal / self.seconds:.2f}",
        ]

    def __add__(self, other: Measurement) -> Measurement:
        """Pools repeats: total cycles over total seconds."""
        return Measurement(
            self.cycles + other.cycles,
            self.seconds + other.seconds,
            self.warmup_cycles + other.warmup_cycles,
            self.decisions + other.decisions,
            self.cpu + other.cpu,
        )


class Tickets:
    """The timed cycles the workers share; taking one is synchronous, so no lock is needed."""

    def __init__(self, count: int) -> None:
        self.remaining = count

    def take(self) -> bool:
        if self.remaining <= 0:
            return False
        self.remaining -= 1
        return True


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process, 0 if it is gone or /proc is not there."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rpartition(")")[2].split()
    # Fields 14 and 15 of stat(5); the first two fields (pid, comm) were cut off above.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def self_cpu() -> float:
    times = os.times()
    return times.user + times.system


def machine_cpu() -> tuple[float, float]:
    """Busy and stolen CPU seconds of the whole machine, summed over cores, from /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(value) for value in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0, 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq) / CLK_TCK, steal / CLK_TCK


async def backend_pids(owner: asyncpg.Connection, database: str) -> list[int]:
    rows = await owner.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        database,
    )
    return [row["pid"] for row in rows]


class CpuWindow:
    """CPU seconds of this process, a server (its process and their children: the serving
    processes of `casework serve --workers N`) and a database's backends."""

    def __init__(self, owner: asyncpg.Connection, database: str, server_pid: int | None) -> None:
        self._owner = owner
        self._database = database
        self._server_pids = process_tree(server_pid) if server_pid else []
        self._server_start: dict[int, float] = {}
        # CPU seconds of each server process over the window, largest first.
        self.server_split: list[float] = []
        self._start: tuple[float, float, dict[int, float], tuple[float, float]] = (
            0.0,
            0.0,
            {},
            (0.0, 0.0),
        )

    def _server(self) -> dict[int, float]:
        return {pid: process_cpu(pid) for pid in self._server_pids}

    async def start(self) -> None:
        pids = await backend_pids(self._owner, self._database)
        backends = {pid: process_cpu(pid) for pid in pids}
        self._server_start = self._server()
        self._start = (self_cpu(), sum(self._server_start.values()), backends, machine_cpu())

    async def stop(self) -> CpuUse:
        client, (busy, steal) = self_cpu(), machine_cpu()
        by_process = self._server()
        server = sum(by_process.values())
        self.server_split = sorted(
            (cpu - self._server_start.get(pid, 0.0) for pid, cpu in by_process.items()),
            reverse=True,
        )
        pids = await backend_pids(self._owner, self._database)
        start_client, start_server, start_backends, (start_busy, start_steal) = self._start
        backends = sum(process_cpu(pid) - start_backends.get(pid, 0.0) for pid in pids)
        return CpuUse(
            client - start_client,
            server - start_server,
            backends,
            busy - start_busy,
            steal - start_steal,
        )


Worker = Callable[[int, Tickets | None, int], Awaitable[int]]


async def drive(
    worker: Worker,
    concurrency: int,
    cycles: int,
    warmup: int,
    cpu: CpuWindow,
) -> tuple[int, int, float, CpuUse]:
    """Warm-up cycles per worker, then the timed budget shared by all workers."""
    warmed = await asyncio.gather(*(worker(index, None, warmup) for index in range(concurrency)))
    tickets = Tickets(cycles)
    await cpu.start()
    started = time.perf_counter()
    done = await asyncio.gather(*(worker(index, tickets, 0) for index in range(concurrency)))
    elapsed = time.perf_counter() - started
    used = await cpu.stop()
    return sum(warmed), sum(done), elapsed, used


async def graphql_post(
    connection: KeepAliveConnection, token: str, query: str, variables: dict[str, Any]
) -> dict[str, Any]:
    body = await connection.post_json(
        "/graphql",
        {"query": query, "variables": variables},
        {"authorization": f"Bearer {token}"},
    )
    if body.get("errors"):
        raise RuntimeError(f"GraphQL call failed: {body}")
    data: dict[str, Any] = body["data"]
    return data


def sum_runs(runs: list[Measurement]) -> Measurement:
    total = runs[0]
    for run in runs[1:]:
        total = total + run
    return total
