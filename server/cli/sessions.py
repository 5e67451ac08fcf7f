"""`casework session list|revoke`: the console's single sign-on sessions."""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime

from server.cli.tokens import owner_database
from server.config import Settings
from server.domain.identity.sessions import (
    SessionRecord,
    SessionRevocation,
    end_session_by_id,
    list_sessions,
)
from server.domain.model import Grant
from server.runtime import StartupError, resolve_databases

SESSION_COLUMNS = ("ID", "USER", "NAME", "GRANTS", "SIGNED IN", "LAST SEEN", "ENDS", "STATE")


def run_session_list(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)

    async def fetch() -> list[SessionRecord]:
        async with owner_database(databases, settings) as owner_db:
            return await list_sessions(owner_db, include_ended=args.all)

    print(format_session_table(asyncio.run(fetch()), now=datetime.now(UTC)), flush=True)
    return 0


def run_session_revoke(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)

    async def revoke() -> tuple[SessionRevocation, str | None]:
        async with owner_database(databases, settings) as owner_db:
            return await end_session_by_id(owner_db, args.session_id)

    outcome, user = asyncio.run(revoke())
    if outcome is SessionRevocation.NO_SUCH_SESSION:
        raise StartupError(
            f"there is no session {args.session_id}; `casework session list` shows them"
        )
    if outcome is SessionRevocation.ALREADY_ENDED:
        print(f"session {args.session_id} of user {user!r} had ended already")
    else:
        print(
            f"ended session {args.session_id} of user {user!r}; running services refuse it "
            f"within {settings.token_cache_seconds:g} seconds (CASEWORK_TOKEN_CACHE_SECONDS)"
        )
    return 0


def describe_grants(grants: tuple[Grant, ...]) -> str:
    return "; ".join(
        f"{grant.role.value} in {','.join(grant.queues) or '(all)'}" for grant in grants
    )


def session_state(record: SessionRecord, now: datetime) -> str:
    if record.ended_at is not None:
        return f"ended: {record.end_reason}"
    if record.ends_at <= now:
        return "timed out" if record.expires_at > now else "expired"
    return "live"


def format_session_table(records: list[SessionRecord], *, now: datetime) -> str:
    """One line per session, in columns; times in UTC to the minute."""

    def moment(value: datetime | None) -> str:
        return "" if value is None else f"{value.astimezone(UTC):%Y-%m-%d %H:%M}"

    rows = [SESSION_COLUMNS] + [
        (
            str(record.id),
            record.user_name,
            record.display_name or "",
            describe_grants(record.grants),
            moment(record.created_at),
            moment(record.last_seen_at),
            moment(record.ended_at or record.ends_at),
            session_state(record, now),
        )
        for record in records
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(SESSION_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
