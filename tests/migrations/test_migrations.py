"""Migrations on an empty database: each applied once, even by racing processes."""

from __future__ import annotations

import asyncio
import difflib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from server.config import REPO_ROOT
from server.store.migrate import MigrationError, apply_migrations, load_migrations
from server.store.queries import Queries
from tests import pg
from tests.migrations.dump_schema import migrated_schema

EXPECTED_SCHEMA = REPO_ROOT / "tests" / "migrations" / "expected_schema.txt"
MIGRATIONS = load_migrations(pg.MIGRATIONS_DIR)


@pytest.fixture
async def fresh_dsn(pg_server: str) -> AsyncIterator[str]:
    name = await pg.create_empty_database(pg_server, "casework_fresh")
    yield pg.owner_dsn(pg_server, name)
    await pg.drop_database(pg_server, name)


@pytest.fixture
async def fresh_conn(fresh_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(fresh_dsn)
    try:
        yield conn
    finally:
        await conn.close()


async def recorded(conn: asyncpg.Connection) -> list[tuple[int, str, str]]:
    rows = await conn.fetch("SELECT version, name, checksum FROM schema_migrations ORDER BY 1")
    return [tuple(row) for row in rows]


EVERY_MIGRATION = [(m.version, m.name, m.checksum) for m in MIGRATIONS]


async def test_first_run_applies_all_and_second_run_none(fresh_conn: asyncpg.Connection) -> None:
    assert await fresh_conn.fetchval("SELECT to_regclass('review_items')") is None

    first = await apply_migrations(fresh_conn, pg.MIGRATIONS_DIR)
    second = await apply_migrations(fresh_conn, pg.MIGRATIONS_DIR)

    assert first == MIGRATIONS
    assert second == []
    assert await recorded(fresh_conn) == EVERY_MIGRATION


async def test_concurrent_runs_apply_each_migration_once(fresh_dsn: str) -> None:
    conns = await asyncio.gather(asyncpg.connect(fresh_dsn), asyncpg.connect(fresh_dsn))
    try:
        results = await asyncio.gather(
            *(apply_migrations(conn, pg.MIGRATIONS_DIR) for conn in conns)
        )
        assert sorted(results, key=len) == [[], MIGRATIONS]
        assert await recorded(conns[0]) == EVERY_MIGRATION
    finally:
        await asyncio.gather(*(conn.close() for conn in conns))


async def test_an_edited_migration_is_refused(fresh_conn: asyncpg.Connection) -> None:
    await apply_migrations(fresh_conn, pg.MIGRATIONS_DIR)
    await fresh_conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")

    with pytest.raises(MigrationError, match="was edited after it was applied"):
        await apply_migrations(fresh_conn, pg.MIGRATIONS_DIR)


async def test_a_newer_database_is_refused(fresh_conn: asyncpg.Connection) -> None:
    await apply_migrations(fresh_conn, pg.MIGRATIONS_DIR)
    await fresh_conn.execute(
        "INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, 'future', 'x')"
    )

    with pytest.raises(MigrationError, match=r"does not know: \[9999\]"):
        await apply_migrations(fresh_conn, pg.MIGRATIONS_DIR)


async def test_every_named_query_prepares(fresh_conn: asyncpg.Connection) -> None:
    await apply_migrations(fresh_conn, pg.MIGRATIONS_DIR)
    queries = Queries(pg.QUERIES_DIR)
    failures: dict[str, str] = {}

    for name in queries.names():
        try:
            await fresh_conn.prepare(queries[name])
        except asyncpg.PostgresError as error:
            failures[name] = f"{type(error).__name__}: {error}"

    assert failures == {}
    assert len(queries.names()) > 10


async def test_catalog_matches_the_committed_snapshot(pg_server: str) -> None:
    actual = await migrated_schema(pg_server)
    expected = EXPECTED_SCHEMA.read_text()

    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=str(EXPECTED_SCHEMA.relative_to(REPO_ROOT)),
                tofile="migrated database",
            )
        )
        pytest.fail(
            "The migrated schema differs from the committed snapshot:\n"
            f"{diff}\n"
            "If the change is intended, regenerate the snapshot and commit it:\n"
            "    python -m tests.migrations.dump_schema > tests/migrations/expected_schema.txt",
            pytrace=False,
        )


async def wait_until_blocked(watcher: asyncpg.Connection, pid: int) -> None:
    """Until the backend waits on a lock: PostgreSQL says so in pg_stat_activity."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        waiting = await watcher.fetchval(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid
        )
        if waiting:
            return
        assert asyncio.get_running_loop().time() < deadline, f"backend {pid} never blocked"
        await asyncio.sleep(0.01)


async def test_two_databases_creating_one_role_at_once_both_migrate(
    pg_server: str, tmp_path: Path
) -> None:
    """Roles are cluster-wide while the migration lock is per database: the second creator
    of a role fails on the role's unique index, and its migration is tried again."""
    role = f"casework_race_{uuid.uuid4().hex[:8]}"
    gate = 0x7261_6365
    (tmp_path / "0001_role.sql").write_text(
        f"DO $$ BEGIN\n"
        f"    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN\n"
        f"        CREATE ROLE {role};\n"
        f"    END IF;\n"
        f"    PERFORM pg_advisory_xact_lock({gate});\n"
        f"END $$;\n"
    )
    names = [await pg.create_empty_database(pg_server, "casework_race") for _ in range(2)]
    first, second, holder = await asyncio.gather(
        asyncpg.connect(pg.owner_dsn(pg_server, names[0])),
        asyncpg.connect(pg.owner_dsn(pg_server, names[1])),
        asyncpg.connect(pg.owner_dsn(pg_server, names[0])),
    )
    try:
        # The first migration creates the role, then waits for the gate, its transaction
        # open; the second then blocks on the role's index until the first commits.
        await holder.execute("SELECT pg_advisory_lock($1)", gate)
        first_run = asyncio.create_task(apply_migrations(first, tmp_path))
        await wait_until_blocked(holder, first.get_server_pid())
        second_run = asyncio.create_task(apply_migrations(second, tmp_path))
        await wait_until_blocked(holder, second.get_server_pid())
        await holder.execute("SELECT pg_advisory_unlock($1)", gate)

        applied = await asyncio.gather(first_run, second_run)

        assert [[m.name for m in run] for run in applied] == [["role"], ["role"]]
        assert await holder.fetchval("SELECT count(*) FROM pg_roles WHERE rolname = $1", role) == 1
    finally:
        await asyncio.gather(first.close(), second.close(), holder.close())
        for name in names:
            await pg.drop_database(pg_server, name)
        await pg.admin_execute(pg_server, f"DROP ROLE IF EXISTS {role}")
