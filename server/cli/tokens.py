"""`casework token create|list|revoke`: bearer tokens, over the owner connection."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import asyncpg

from server.config import Settings
from server.domain.identity.tokens import (
    Revocation,
    TokenRecord,
    create_token,
    list_tokens,
    revoke_token,
    revoke_tokens,
)
from server.domain.model import Role
from server.domain.review.queues import get_queues
from server.runtime import (
    Databases,
    StartupError,
    connect_owner,
    resolve_databases,
)
from server.store.database import Database
from server.store.queries import Queries

if TYPE_CHECKING:
    pass


def run_token_create(args: argparse.Namespace, settings: Settings) -> int:
    role = Role(args.role)
    queues: list[str] = sorted(set(args.queues))
    if role is Role.REVIEWER and not queues:
        # Checked before touching the database: a reviewer with no queue could do nothing.
        args.parser.error("a reviewer token must name at least one queue: add --queue NAME")
    expires_at = None
    if args.expires_in_days is not None:
        expires_at = datetime.now(UTC) + timedelta(days=args.expires_in_days)
    databases = resolve_databases(settings)
    token, unknown_queues = asyncio.run(
        _create_token(
            databases, settings, user=args.user, role=role, queues=queues, expires_at=expires_at
        )
    )
    for queue in unknown_queues:
        print(
            f"casework: warning: queue {queue!r} does not exist yet; the token covers it "
            "once an admin configures it",
            file=sys.stderr,
        )
    scope = ", ".join(queues) if queues else "all queues"
    expiry = f"expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else "never expires"
    print(
        f"token for user {args.user!r}, role {role.value}, queues: {scope}; {expiry}. "
        "It is shown once; store it now:"
    )
    print(token, flush=True)
    return 0


async def _create_token(
    databases: Databases,
    settings: Settings,
    *,
    user: str,
    role: Role,
    queues: list[str],
    expires_at: datetime | None,
) -> tuple[str, list[str]]:
    async with owner_database(databases, settings) as owner_db:
        known = await get_queues(owner_db, queues)
        token = await create_token(
            owner_db, user=user, role=role, queues=queues, expires_at=expires_at
        )
    return token, [queue for queue in queues if queue not in known]


@asynccontextmanager
async def owner_database(databases: Databases, settings: Settings) -> AsyncIterator[Database]:
    """The owner connection (tokens are the owner's to write and read). A database without
    Casework's schema is a one-line error, not a traceback."""
    conn = await connect_owner(databases)
    try:
        yield Database(conn, Queries(settings.db_dir / "queries"))
    except asyncpg.UndefinedTableError as error:
        raise StartupError(
            f"the database has no Casework schema yet ({error}); run `casework migrate` first"
        ) from error
    finally:
        await conn.close()


def run_token_revoke(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)
    within = (
        f"running services refuse it within {settings.token_cache_seconds:g} seconds "
        "(CASEWORK_TOKEN_CACHE_SECONDS)"
    )

    async def revoke_by_user() -> int:
        async with owner_database(databases, settings) as owner_db:
            return await revoke_tokens(owner_db, args.user)

    if args.user is not None:
        count = asyncio.run(revoke_by_user())
        print(f"revoked {count} token(s) of user {args.user!r}; {within}")
        return 0

    async def revoke_by_id() -> tuple[Revocation, str | None]:
        async with owner_database(databases, settings) as owner_db:
            done = await revoke_token(owner_db, args.token_id)
        return done.outcome, done.user

    outcome, user = asyncio.run(revoke_by_id())
    if outcome is Revocation.NO_SUCH_TOKEN:
        raise StartupError(f"there is no token {args.token_id}; `casework token list` shows them")
    if outcome is Revocation.ALREADY_REVOKED:
        print(f"token {args.token_id} of user {user!r} was revoked already")
    else:
        print(f"revoked token {args.token_id} of user {user!r}; {within}")
    return 0


def run_token_list(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)

    async def fetch() -> list[TokenRecord]:
        async with owner_database(databases, settings) as owner_db:
            return await list_tokens(owner_db, include_inactive=args.all)

    print(format_token_table(asyncio.run(fetch()), now=datetime.now(UTC)), flush=True)
    return 0


TOKEN_COLUMNS = ("ID", "USER", "ROLE", "QUEUES", "CREATED", "EXPIRES", "LAST USED", "STATE")


def format_token_table(records: list[TokenRecord], *, now: datetime) -> str:
    """One line per token, in columns; times in UTC to the minute."""

    def moment(value: datetime | None, missing: str) -> str:
        return missing if value is None else f"{value.astimezone(UTC):%Y-%m-%d %H:%M}"

    rows = [TOKEN_COLUMNS] + [
        (
            str(record.id),
            record.user,
            record.role.value,
            ",".join(record.queues) or "(all)",
            moment(record.created_at, ""),
            moment(record.expires_at, "never"),
            moment(record.last_used_at, "never"),
            record.state(now).value + (" (demo)" if record.demo else ""),
        )
        for record in records
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(TOKEN_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
