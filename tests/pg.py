"""The PostgreSQL the tests run against: TEST_DATABASE_URL, or an embedded server.

A template database is migrated once per session; every test gets its own clone of it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from pathlib import Path

import asyncpg

from server.config import REPO_ROOT
from server.store.database import connect
from server.store.dsn import APP_ROLE, with_database, with_user
from server.store.migrate import apply_migrations

MIGRATIONS_DIR = REPO_ROOT / "db" / "migrations"
QUERIES_DIR = REPO_ROOT / "db" / "queries"


def server_dsn() -> str:
    """The owner DSN of a server the tests may create databases on."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        return url
    from server.store.embedded import start_embedded

    home = Path(tempfile.mkdtemp(prefix="casework-test-", dir="/tmp"))
    # atexit runs last-registered first: registered before the server's own stop hook,
    # this removal runs after PostgreSQL has stopped.
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return start_embedded(home, delete_on_exit=True)


async def admin_execute(server: str, statement: str) -> None:
    """One statement on the server's maintenance connection (CREATE or DROP DATABASE)."""
    admin = await asyncpg.connect(server)
    try:
        await admin.execute(statement)
    finally:
        await admin.close()


async def create_empty_database(server: str, prefix: str) -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    await admin_execute(server, f'CREATE DATABASE "{name}"')
    return name


async def create_template(server: str) -> str:
    name = await create_empty_database(server, "casework_template")
    conn = await connect(with_database(server, name))
    try:
        await apply_migrations(conn, MIGRATIONS_DIR)
    finally:
        await conn.close()
    return name


async def clone_database(server: str, template: str) -> str:
    name = f"casework_test_{uuid.uuid4().hex[:12]}"
    await admin_execute(server, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return name


async def drop_database(server: str, name: str) -> None:
    await admin_execute(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def owner_dsn(server: str, database: str) -> str:
    return with_database(server, database)


def app_dsn(server: str, database: str) -> str:
    return with_user(with_database(server, database), APP_ROLE)
