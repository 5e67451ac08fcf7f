"""The `casework` command as real processes: one-shot commands, and `serve`."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from server.config import REPO_ROOT

STARTUP_SECONDS = 60
# A served process stops within this of SIGTERM (its lifespan closes the pool and the
# listener); beyond it the test fails with the log instead of waiting for ever.
STOP_SECONDS = 30
COMMAND_SECONDS = 120


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


async def casework_process(
    env: dict[str, str],
    *args: str,
    cwd: Path | None = REPO_ROOT,
    stdin: int | None = None,
    stdout: int = asyncio.subprocess.PIPE,
    stderr: int = asyncio.subprocess.PIPE,
) -> asyncio.subprocess.Process:
    """`casework ARGS` in a process of its own (this interpreter's `-m server.cli`)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        *args,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
    )


async def run_casework(env: dict[str, str], *args: str, stdin: bytes | None = None) -> Run:
    """`casework ARGS` to its end; stdin, when given, is what the command reads."""
    process = await casework_process(
        env, *args, stdin=None if stdin is None else asyncio.subprocess.PIPE
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(stdin), timeout=COMMAND_SECONDS)
    assert process.returncode is not None
    return Run(process.returncode, stdout.decode(), stderr.decode())


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports of 127.0.0.1. Probed together, each socket held until all
    are bound: probed one after another, the kernel may hand out a just-released port again,
    and two servers of one harness would then race for it."""
    with contextlib.ExitStack() as probes:
        ports = []
        for _ in range(count):
            probe = probes.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
        return ports


@dataclass(frozen=True)
class Served:
    """A running `casework serve`: where it answers, and its process (for pid and RSS)."""

    url: str
    process: asyncio.subprocess.Process
    # What it wrote to stderr so far, for failure messages.
    log: list[str]

    @property
    def pid(self) -> int:
        return self.process.pid


@asynccontextmanager
async def casework_serve(env: dict[str, str], *extra_args: str) -> AsyncIterator[str]:
    """Yields the base URL once uvicorn reports that the application started."""
    async with casework_serve_process(env, *extra_args) as served:
        yield served.url


@asynccontextmanager
async def casework_serve_process(
    env: dict[str, str], *extra_args: str, started: int = 1
) -> AsyncIterator[Served]:
    """As casework_serve, but yields the process too; `started`: how many serving processes
    to wait for (serve --workers N)."""
    port = free_port()
    process = await casework_process(
        env, "serve", "--port", str(port), *extra_args, cwd=None, stdout=asyncio.subprocess.DEVNULL
    )
    assert process.stderr is not None
    log: list[str] = []

    async def wait_until_started() -> None:
        assert process.stderr is not None
        waiting = started
        while line := (await process.stderr.readline()).decode():
            log.append(line)
            if "Application startup complete" in line:
                waiting -= 1
                if waiting == 0:
                    return
        raise RuntimeError("casework serve exited:\n" + "".join(log))

    async def drain() -> None:
        assert process.stderr is not None
        while line := (await process.stderr.readline()).decode():
            log.append(line)

    try:
        await asyncio.wait_for(wait_until_started(), STARTUP_SECONDS)
        draining = asyncio.create_task(drain())
        yield Served(f"http://127.0.0.1:{port}", process, log)
    finally:
        stopped = True
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), STOP_SECONDS)
            except TimeoutError:
                # A service that ignores SIGTERM is a failure to report, not a hung suite.
                stopped = False
                process.kill()
                await process.wait()
        if "draining" in locals():
            await draining
        if not stopped:
            raise AssertionError(
                f"casework serve did not stop within {STOP_SECONDS} s of SIGTERM; its log "
                "ends:\n" + "".join(log[-40:])
            )
