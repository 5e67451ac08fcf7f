"""Migrations on an empty database: each applied once, even by racing processes."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import AsyncIterator

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
