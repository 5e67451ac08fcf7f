"""The first README command's promise: an embedded PostgreSQL, shared with the other commands."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import httpx

from server.config import REPO_ROOT
from tests.api.live_server import casework_serve


def embedded_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if "DATABASE_URL" not in key}
    return {**env, "CASEWORK_HOME": str(home)}


async def casework(env: dict[str, str], *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        *args,
        cwd=REPO_ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, output.decode()


async def test_commands_share_the_embedded_server_while_serve_runs(tmp_path: Path) -> None:
    home = tmp_path / "casework-home"
    env = embedded_env(home)
    async with (
        casework_serve(env) as base_url,
        httpx.AsyncClient(base_url=base_url) as client,
    ):
        code, output = await casework(env, "token", "create", "--user", "rita", "--role", "manager")
        assert code == 0, output
        token = output.splitlines()[-1]
        code, output = await casework(env, "migrate")
        assert (code, output.strip()) == (0, "migrations: up to date")

        # The commands joined serve's server and left it running.
        assert (await client.get("/healthz")).status_code == 200
        me = await client.post(
            "/graphql",
            json={"query": "{ me { user role } }"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert me.json() == {"data": {"me": {"user": "rita", "role": "manager"}}}
        assert (home / "pgdata" / "postmaster.pid").exists()

    # The last casework process to leave stops the embedded server.
    assert not (home / "pgdata" / "postmaster.pid").exists()
