"""Forward-only SQL migrations, each applied once, in order, under an advisory lock."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import asyncpg

# Any fixed number works; it only has to be the same in every process that migrates.
MIGRATION_LOCK_ID = 0x6361_7365_776F_726B & 0x7FFF_FFFF_FFFF_FFFF

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


class MigrationError(Exception):
    pass


def load_migrations(migrations_dir: Path) -> list[Migration]:
    migrations = []
    for path in sorted(migrations_dir.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: migration files are named NNNN_name.sql")
        migrations.append(Migration(int(match.group(1)), match.group(2), path.read_text()))
    versions = [m.version for m in migrations]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migrations share a version number")
    return migrations


async def apply_migrations(conn: asyncpg.Connection, migrations_dir: Path) -> list[Migration]:
    """Applies what is missing and returns it. Safe to run from many processes at once."""
    migrations = load_migrations(migrations_dir)
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_ID)
    try:
        await conn.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        )
        applied = await _applied(conn)
        done = []
        for migration in _not_applied(migrations, applied):
            await _apply_one(conn, migration)
            done.append(migration)
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_ID)


async def pending_migrations(conn: asyncpg.Connection, migrations_dir: Path) -> list[Migration]:
    """What apply_migrations would apply, found without writing or locking anything, so the
    service role can ask (`casework serve --no-migrate`). Raises MigrationError as
    apply_migrations does, and asyncpg's InsufficientPrivilegeError where the role may not
    read the log yet (before migration 0010)."""
    migrations = load_migrations(migrations_dir)
    try:
        applied = await _applied(conn)
    except asyncpg.UndefinedTableError:
        return migrations
    return _not_applied(migrations, applied)


async def _applied(conn: asyncpg.Connection) -> dict[int, str]:
    """version -> checksum of what the database has applied."""
    rows = await conn.fetch("SELECT version, checksum FROM schema_migrations")
    return {row["version"]: row["checksum"] for row in rows}


def _not_applied(migrations: list[Migration], applied: dict[int, str]) -> list[Migration]:
    known = {m.version for m in migrations}
    unknown = sorted(set(applied) - known)
    if unknown:
        raise MigrationError(
            f"the database has migrations this code does not know: {unknown}; "
            "is an older release running against a newer database?"
        )
    for migration in migrations:
        if migration.version in applied and applied[migration.version] != migration.checksum:
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name} was edited after "
                "it was applied; migrations are forward-only, add a new one instead"
            )
    return [m for m in migrations if m.version not in applied]


# Roles belong to the cluster, not to a database, and the advisory lock is per database:
# two databases of one cluster migrated at once (test runs in parallel, two environments on
# one server) can both find the role missing and both create it. The loser's transaction
# rolled back whole, and on the second try its `IF NOT EXISTS` sees the winner's role.
_ROLE_NAME_INDEX = "pg_authid_rolname_index"


async def _apply_one(conn: asyncpg.Connection, migration: Migration) -> None:
    for attempt in (1, 2):
        try:
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            return
        except asyncpg.UniqueViolationError as error:
            if attempt == 2 or error.constraint_name != _ROLE_NAME_INDEX:
                raise
