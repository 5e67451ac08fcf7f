"""The first README command's promise: an embedded PostgreSQL, shared with the other commands."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import httpx

from tests.api.live_server import casework_serve, casework_serve_process, run_casework


def embedded_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if "DATABASE_URL" not in key}
    return {**env, "CASEWORK_HOME": str(home)}


async def test_commands_share_the_embedded_server_while_serve_runs(tmp_path: Path) -> None:
    home = tmp_path / "casework-home"
    env = embedded_env(home)
    async with (
        casework_serve(env) as base_url,
        httpx.AsyncClient(base_url=base_url) as client,
    ):
        created = await run_casework(env, "token", "create", "--user", "rita", "--role", "manager")
        assert created.code == 0, created.stderr
        token = created.stdout.splitlines()[-1]
        migrated = await run_casework(env, "migrate")
        assert (migrated.code, migrated.stdout.strip()) == (0, "migrations: up to date")

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


async def test_serving_processes_reach_the_embedded_server_and_it_stops_after_them(
    tmp_path: Path,
) -> None:
    """--workers 2 without DATABASE_URL: the parent starts the embedded server once and
    both processes use it (each reports its startup complete only once its pool and its
    listener are connected; no second data directory appears); SIGTERM stops them, then
    the server."""
    home = tmp_path / "casework-home"
    env = embedded_env(home)
    async with (
        casework_serve_process(env, "--workers", "2", started=2) as served,
        httpx.AsyncClient(base_url=served.url) as client,
    ):
        assert (await client.get("/readyz")).status_code == 200
        created = await run_casework(env, "token", "create", "--user", "rita", "--role", "admin")
        assert created.code == 0, created.stderr
        token = created.stdout.splitlines()[-1]
        me = await client.post(
            "/graphql",
            json={"query": "{ me { user } }"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert me.json() == {"data": {"me": {"user": "rita"}}}
        assert [path.name for path in home.iterdir()] == ["pgdata"]
        served.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(served.process.wait(), 60) == 0, "".join(served.log)

    assert "".join(served.log).count("Application shutdown complete") == 2
    assert not (home / "pgdata" / "postmaster.pid").exists()
