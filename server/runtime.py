"""Which PostgreSQL the commands use, as which role, and getting its schema up to date.

With DATABASE_URL the operator's server is used as given. With only
CASEWORK_APP_DATABASE_URL, the commands that run as the service role (`serve --no-migrate`,
`worker`) work and the others say that they need DATABASE_URL. With neither, the embedded
server under CASEWORK_HOME is started, or joined if another casework process already runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg

from server.config import Settings
from server.store.database import connect
from server.store.dsn import APP_ROLE, database_name, hosts, with_user, writable
from server.store.embedded import (
    EMBEDDED_DATABASE,
    EmbeddedUnavailable,
    embedded_database_dsn,
    start_embedded,
)
from server.store.migrate import (
    Migration,
    MigrationError,
    apply_migrations,
    pending_migrations,
)

# asyncpg waits 60 s by default; an operator with a typo in DATABASE_URL should not.
CONNECT_TIMEOUT_SECONDS = 10

_CONNECT_ERRORS = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)
_EMBEDDED_HINT = "the embedded server did not answer; set DATABASE_URL to use another server"


class StartupError(Exception):
    """A problem the operator can fix; the CLI prints the message, not a traceback."""


@dataclass(frozen=True)
class Databases:
    # Runs migrations and creates tokens. None: only CASEWORK_APP_DATABASE_URL is set.
    owner_dsn: str | None
    # The service's role, which may not rewrite the decision log.
    app_dsn: str
    # Set when the embedded server is in use: where its data lives.
    embedded_data_dir: Path | None
    app_dsn_from_env: bool
    # CASEWORK_DATABASE_POOLER=transaction: the app DSN goes through a transaction pooler.
    transaction_pooler: bool = False

    @property
    def owner_user(self) -> str:
        if self.owner_dsn is None:
            return "(no DATABASE_URL)"
        return urlsplit(self.owner_dsn).username or "(default user)"

    @property
    def app_user(self) -> str:
        return urlsplit(self.app_dsn).username or "(default user)"

    def describe(self) -> str:
        if self.embedded_data_dir is not None:
            return f"embedded PostgreSQL, data in {self.embedded_data_dir}"
        return f"external PostgreSQL at {describe_location(self.owner_dsn or self.app_dsn)}"


def describe_location(dsn: str) -> str:
    """host:port/database for messages, never the password; every host of a multi-host DSN
    (h1:p1,h2:p2/database)."""
    named = [
        (f"[{host}]" if ":" in host and port else host) + (f":{port}" if port else "")
        for host, port in hosts(dsn)
    ]
    return f"{','.join(named) or 'localhost'}/{database_name(dsn)}"


def resolve_databases(settings: Settings) -> Databases:
    """Starts or joins the embedded server when there is no DATABASE_URL."""
    embedded_data_dir: Path | None = None
    owner_dsn: str | None
    if settings.database_url:
        owner_dsn = writable(settings.database_url)
    elif settings.app_database_url:
        # A serving container holds the service role's credentials only.
        owner_dsn = None
    else:
        server_dsn = _start_embedded(settings.home)
        owner_dsn = asyncio.run(ensure_embedded_database(server_dsn))
        embedded_data_dir = settings.home / "pgdata"
    return Databases(
        owner_dsn=owner_dsn,
        app_dsn=writable(settings.app_database_url or with_user(_given(owner_dsn), APP_ROLE)),
        embedded_data_dir=embedded_data_dir,
        app_dsn_from_env=settings.app_database_url is not None,
        transaction_pooler=settings.transaction_pooler,
    )


def _given(dsn: str | None) -> str:
    assert dsn is not None, "resolve_databases sets the owner DSN unless the app DSN is given"
    return dsn


def _start_embedded(home: Path) -> str:
    try:
        return start_embedded(home)
    except EmbeddedUnavailable as error:
        raise StartupError(str(error)) from error
    except Exception as error:
        # The wheel reports failures as whatever its subprocesses raised; all of them
        # leave the operator with the same choices, so they become one message.
        pgdata = home / "pgdata"
        reason = _reason(error)
        message = f"cannot start the embedded PostgreSQL in {pgdata}: {reason}"
        if (pgdata / "log").exists():
            message += f" (its log: {pgdata / 'log'})"
        if "DATABASE_URL" not in reason:
            message += "; choose another CASEWORK_HOME, or set DATABASE_URL to use another server"
        raise StartupError(message) from error


async def ensure_embedded_database(server_dsn: str) -> str:
    """Creates the `casework` database on first use; returns its owner DSN."""
    conn = await _connect(server_dsn, hint=_EMBEDDED_HINT)
    try:
        exists = await conn.fetchval(
            "SELECT 1 FROM pg_database WHERE datname = $1", EMBEDDED_DATABASE
        )
        # Another casework process may create it between our check and our CREATE. When
        # both CREATEs overlap, the loser sees a unique violation on pg_database rather
        # than duplicate_database.
        if not exists:
            with contextlib.suppress(asyncpg.DuplicateDatabaseError, asyncpg.UniqueViolationError):
                await conn.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE}"')
    finally:
        await conn.close()
    return embedded_database_dsn(server_dsn)


async def connect_owner(databases: Databases) -> asyncpg.Connection:
    if databases.owner_dsn is None:
        raise StartupError(
            "this command needs the owner connection: set DATABASE_URL "
            f"(CASEWORK_APP_DATABASE_URL is {APP_ROLE}'s, which may not do this)"
        )
    if databases.embedded_data_dir is not None:
        hint = _EMBEDDED_HINT
    else:
        hint = "check DATABASE_URL (or unset it to use the embedded server)"
    return await _connect(databases.owner_dsn, hint=hint)


async def _connect(dsn: str, *, hint: str, transaction_pooler: bool = False) -> asyncpg.Connection:
    try:
        conn: asyncpg.Connection = await asyncio.wait_for(
            connect(dsn, transaction_pooler=transaction_pooler), CONNECT_TIMEOUT_SECONDS
        )
    except _CONNECT_ERRORS as error:
        raise StartupError(
            f"cannot reach PostgreSQL at {describe_location(dsn)} as "
            f"{urlsplit(dsn).username or 'the default user'}: {_reason(error)}; {hint}"
        ) from error
    return conn


def _reason(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return f"no answer within {CONNECT_TIMEOUT_SECONDS} s"
    return str(error).strip() or type(error).__name__


async def migrate(databases: Databases, migrations_dir: Path) -> list[Migration]:
    """Applies pending migrations and returns them; an empty list means up to date."""
    conn = await connect_owner(databases)
    try:
        return await apply_migrations(conn, migrations_dir)
    except MigrationError as error:
        raise StartupError(f"migrations: {error}") from error
    except asyncpg.PostgresError as error:
        raise StartupError(
            f"applying migrations failed: {error}; the DATABASE_URL user must own the schema "
            f"and be allowed to create the role {APP_ROLE}"
        ) from error
    finally:
        await conn.close()


async def check_app_role(databases: Databases) -> None:
    """Fails before the service starts if it could not connect as its own role."""
    conn = await connect_app(databases)
    await conn.close()


async def connect_app(databases: Databases) -> asyncpg.Connection:
    """A connection as the service role, which reads everything and may rewrite no record."""
    if databases.app_dsn_from_env:
        hint = "check CASEWORK_APP_DATABASE_URL"
    else:
        hint = (
            f"the service connects as {APP_ROLE} without a password; if that role needs "
            "one, set CASEWORK_APP_DATABASE_URL"
        )
    return await _connect(
        databases.app_dsn, hint=hint, transaction_pooler=databases.transaction_pooler
    )


MIGRATE_FIRST = "run `casework migrate` with the owner's DATABASE_URL first"


async def check_schema_current(databases: Databases, migrations_dir: Path) -> None:
    """As the service role: fails unless every migration of this release is applied.

    What `serve --no-migrate` and `worker` check before they start, so that a release never
    runs its queries against the schema of an older one.
    """
    conn = await connect_app(databases)
    try:
        pending = await pending_migrations(conn, migrations_dir)
    except MigrationError as error:
        raise StartupError(f"migrations: {error}") from error
    except asyncpg.InsufficientPrivilegeError as error:
        # Migration 0010 lets the service role read the log; before it, it cannot.
        raise StartupError(
            f"migrations are pending ({APP_ROLE} may not read schema_migrations yet); "
            + MIGRATE_FIRST
        ) from error
    finally:
        await conn.close()
    if pending:
        labels = ", ".join(migration_label(migration) for migration in pending)
        raise StartupError(f"{len(pending)} migration(s) pending ({labels}); " + MIGRATE_FIRST)


def migration_label(migration: Migration) -> str:
    return f"{migration.version:04d}_{migration.name}"
