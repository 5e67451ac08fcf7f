"""The Python client's tests import it from clients/python, as a user's checkout would run
it; its generator (ariadne-codegen) gets an environment of its own, made on first use."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import subprocess
import sys
import venv
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.config import REPO_ROOT
from tests.api.live_server import STARTUP_SECONDS, STOP_SECONDS, casework_process

CLIENT_DIR = REPO_ROOT / "clients" / "python"
if str(CLIENT_DIR) not in sys.path:
    sys.path.insert(0, str(CLIENT_DIR))

# ariadne-codegen 0.19 needs graphql-core < 3.3 (and ruff < 0.16, with which it formats
# what it writes); the server needs graphql-core 3.3. So it cannot join the test extra: it
# lives in this environment, made from codegen-requirements.txt once (one xdist worker at a
# time) and kept until that file changes.
CODEGEN_REQUIREMENTS = CLIENT_DIR / "codegen-requirements.txt"
CODEGEN_ENV = CLIENT_DIR / ".codegen-env"
_STAMP = ".casework-installed"


def codegen_command() -> Path:
    """The ariadne-codegen executable of the generator's environment, installed if needed."""
    executable = CODEGEN_ENV / "bin" / "ariadne-codegen"
    stamp = CODEGEN_ENV / _STAMP
    wanted = CODEGEN_REQUIREMENTS.read_text()
    with open(CLIENT_DIR / ".codegen-env.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == wanted:
            return executable
        venv.EnvBuilder(with_pip=True, clear=True).create(CODEGEN_ENV)
        pip = [str(CODEGEN_ENV / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "-r", str(CODEGEN_REQUIREMENTS)], check=True)
        stamp.write_text(wanted)
    return executable


@pytest.fixture(scope="session")
def ariadne_codegen() -> Path:
    return codegen_command()


# -- shared by the live tests ------------------------------------------------------------

# Every wait on the served process is bounded by this.
WAIT_SECONDS = 30.0


class ReadCounter(httpx.AsyncHTTPTransport):
    """The client's HTTP transport, counting the operations it sends by name: a test learns
    when a waiting helper read again, without a timer standing in for the signal."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []
        self.changed = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        name = json.loads(request.content or b"{}").get("operationName") or ""
        self.sent.append(name)
        self.changed.set()
        return await super().handle_async_request(request)

    def count(self, name: str) -> int:
        return self.sent.count(name)

    async def wait_for_more(self, name: str, than: int, within: float) -> bool:
        """True once more than `than` `name` operations were sent, False after `within` s."""
        deadline = asyncio.get_running_loop().time() + within
        while self.count(name) <= than:
            self.changed.clear()
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)
        return True


async def decide_next(
    reviewer: Any, queue: str = "kyc", verdict: str = "APPROVE", reason: str = "documents_ok"
) -> Any:
    """The reviewer claims the next item of `queue` and decides it: the decision."""
    from casework_client import raise_for_result
    from casework_client.generated import SubmitDecisionInput

    claim = (await reviewer.graphql.claim_next(queue=queue)).claim_next
    raise_for_result(claim)
    entry = SubmitDecisionInput.model_validate(
        {
            "itemId": claim.item.id,
            "leaseToken": claim.lease_token,
            "verdict": verdict,
            "reasonCode": reason,
            "evidenceHash": claim.evidence_hash,
        }
    )
    recorded = (await reviewer.graphql.submit_decision(input=entry)).submit_decision
    raise_for_result(recorded)
    return recorded.decision


@asynccontextmanager
async def serve_on(env: dict[str, str], port: int) -> AsyncIterator[str]:
    """`casework serve` on a given port (a restarted service keeps its address); yields its
    URL once started, and stops it with SIGTERM, within bounds."""
    process = await casework_process(
        env, "serve", "--port", str(port), cwd=None, stdout=asyncio.subprocess.DEVNULL
    )
    assert process.stderr is not None
    log: list[str] = []

    async def read_until(marker: str | None) -> None:
        assert process.stderr is not None
        while line := (await process.stderr.readline()).decode():
            log.append(line)
            if marker is not None and marker in line:
                return
        if marker is not None:
            raise RuntimeError("casework serve exited:\n" + "".join(log))

    try:
        await asyncio.wait_for(read_until("Application startup complete"), STARTUP_SECONDS)
        draining = asyncio.create_task(read_until(None))
        yield f"http://127.0.0.1:{port}"
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), STOP_SECONDS)
            except TimeoutError:
                process.kill()
                await process.wait()
                raise AssertionError("serve ignored SIGTERM:\n" + "".join(log[-40:])) from None
        if "draining" in locals():
            await draining
