"""bench/busy_day.py's processes and database: the scratch database with its queue and
tokens, the idle consoles' process, and the CPU (and run-queue wait) of each process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import benchlib
from apply_bench import SIGNING_SECRET
from busy_day_figures import Config
from busy_day_load import DOCUMENTS, LEASE_EVENTS

from server.domain.identity.tokens import create_token
from server.domain.model import EffectKind, Role
from server.domain.review.queues import Effect, QueueSettings, configure_queue
from server.store.database import Database, create_pool

IDLE_SCRIPT = Path(__file__).resolve().parent / "busy_day_idle.py"


# --- set-up --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tokens:
    reviewers: list[str]
    managers: list[str]
    idle: list[str]
    integration: str


async def prepare(config: Config, database: str, hook_url: str) -> Tokens:
    """Queue `bench` with a signed webhook to the receiver, --backlog items, the tokens."""
    await benchlib.create_migrated(config.server, database)
    queries = benchlib.load_queries()
    app_pool = await create_pool(benchlib.app_dsn(config.server, database), min_size=1, max_size=2)
    owner_pool = await create_pool(
        benchlib.owner_dsn(config.server, database), min_size=1, max_size=1
    )
    try:
        db = Database(app_pool, queries)
        await benchlib.seed_queue(db)
        settings = QueueSettings(
            benchlib.QUEUE,
            lease_ttl_seconds=600,
            effect=Effect(EffectKind.WEBHOOK, hook_url, SIGNING_SECRET),
            effect_timeout_seconds=10,
        )
        benchlib.check(await configure_queue(db, benchlib.ADMIN, settings), "effect")
        rng = random.Random(config.seed)
        await benchlib.enqueue(db, [f"item-{n:07d}" for n in range(config.backlog)], rng)
        owner = Database(owner_pool, queries)

        async def mint(user: str, role: Role) -> str:
            return await create_token(owner, user=user, role=role, queues=[benchlib.QUEUE])

        tokens = Tokens(
            reviewers=[await mint(f"reviewer-{n:04d}", Role.REVIEWER) for n in range(config.most)],
            managers=[await mint(f"manager-{n:03d}", Role.MANAGER) for n in range(config.managers)],
            idle=[await mint(f"idle-{n:03d}", Role.REVIEWER) for n in range(config.idle_tokens)],
            integration=await mint("integration", Role.INTEGRATION),
        )
        async with owner_pool.acquire() as conn:
            await conn.execute("VACUUM ANALYZE")
        return tokens
    finally:
        await app_pool.close()
        await owner_pool.close()


class IdleConsoles:
    """The process of bench/busy_day_idle.py, driven over its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def call(self, body: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write((json.dumps(body) + "\n").encode())
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError("the idle consoles' process ended early")
        answer: dict[str, Any] = json.loads(line)
        return answer


@contextlib.asynccontextmanager
async def idle_consoles(config: Config, url: str, tokens: list[str]) -> AsyncIterator[IdleConsoles]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(IDLE_SCRIPT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=16 * 1024 * 1024,
    )
    idle = IdleConsoles(process)
    try:
        ready = await idle.call(
            {
                "url": url,
                "tokens": tokens,
                "queue": benchlib.QUEUE,
                "count": config.idle,
                "batch": 100,
                "backlog": DOCUMENTS["QUEUE_BACKLOG"],
                "leases": LEASE_EVENTS,
            }
        )
        print(f"  {ready['ready']} idle consoles subscribed in {ready['seconds']:.1f} s")
        yield idle
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


def serve_processes(pid: int) -> dict[str, int]:
    """`casework serve`'s processes by role: the parent (uvicorn's supervisor), the
    serving processes it spawned, and multiprocessing's resource tracker."""
    named = {"supervisor": pid}
    for child in benchlib.process_tree(pid)[1:]:
        command = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"resource_tracker" in command:
            named["tracker"] = child
        else:
            named[f"serving {sum(name.startswith('serving') for name in named) + 1}"] = child
    return named


# --- CPU per process -----------------------------------------------------------------------


def run_queue_wait(pid: int) -> float:
    """Seconds the process's main thread (a serving process's event loop) has waited,
    runnable, for a core (schedstat(5)'s second field): what it wanted and did not get."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class Cores:
    """CPU seconds of each process over a window, as cores (seconds over the window)."""

    def __init__(self, owner: asyncpg.Connection, database: str, named: dict[str, int]) -> None:
        self._owner = owner
        self._database = database
        self._named = named
        self._start: dict[str, float] = {}
        self._backends: dict[int, float] = {}
        self._machine = (0.0, 0.0)
        self._at = 0.0

    def _own(self) -> dict[str, float]:
        values = {name: benchlib.process_cpu(pid) for name, pid in self._named.items()}
        waits = {f"wait {name}": run_queue_wait(pid) for name, pid in self._named.items()}
        return values | waits | {"bench": benchlib.self_cpu()}

    async def start(self) -> None:
        pids = await benchlib.backend_pids(self._owner, self._database)
        self._backends = {pid: benchlib.process_cpu(pid) for pid in pids}
        self._start, self._machine, self._at = self._own(), benchlib.machine_cpu(), time.time()

    async def stop(self) -> dict[str, float]:
        own, (busy, steal), seconds = self._own(), benchlib.machine_cpu(), time.time() - self._at
        pids = await benchlib.backend_pids(self._owner, self._database)
        postgres = sum(benchlib.process_cpu(pid) - self._backends.get(pid, 0.0) for pid in pids)
        cores = {name: (own[name] - self._start[name]) / seconds for name in own}
        cores["postgres"] = postgres / seconds
        cores["machine"] = (busy - self._machine[0]) / seconds
        cores["steal"] = (steal - self._machine[1]) / seconds
        return cores
