"""A real `casework intake` process: started on a configuration file, its output collected,
waited for until it drains."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from server.intake.runner import TOKEN_VARIABLE
from tests.api.live_server import casework_process
from tests.conftest import TestDatabase

STARTUP_SECONDS = 60
STOP_SECONDS = 30


def intake_env(test_database: TestDatabase, token: str, home: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": test_database.owner_dsn,
        "CASEWORK_HOME": str(home),
        "CASEWORK_TOKEN_CACHE_SECONDS": "0",
        TOKEN_VARIABLE: token,
    }
    env.pop("CASEWORK_APP_DATABASE_URL", None)
    return env


@dataclass
class IntakeProcess:
    process: asyncio.subprocess.Process
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    _readers: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def log(self) -> str:
        return "".join(self.stdout + self.stderr)

    async def _read(self, stream: asyncio.StreamReader | None, into: list[str]) -> None:
        assert stream is not None
        while line := await stream.readline():
            into.append(line.decode(errors="replace"))

    async def wait_draining(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STARTUP_SECONDS
        while not any("draining" in line for line in self.stdout):
            if self.process.returncode is not None:
                raise AssertionError(f"casework intake exited:\n{self.log}")
            if loop.time() > deadline:
                raise AssertionError(f"casework intake did not start:\n{self.log}")
            await asyncio.sleep(0.05)

    async def kill(self) -> None:
        self.process.kill()
        await self.ended()

    async def terminate(self) -> int:
        self.process.terminate()
        return await self.ended()

    async def ended(self) -> int:
        code = await asyncio.wait_for(self.process.wait(), STOP_SECONDS)
        await asyncio.gather(*self._readers)
        return code


async def start_intake(env: dict[str, str], config: Path, *args: str) -> IntakeProcess:
    process = await casework_process(env, "intake", "--config", str(config), *args)
    started = IntakeProcess(process)
    started._readers = [
        asyncio.create_task(started._read(process.stdout, started.stdout)),
        asyncio.create_task(started._read(process.stderr, started.stderr)),
    ]
    return started
