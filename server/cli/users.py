"""`casework user revoke --user NAME [--reason TEXT]`: the one revocation routine, over the
owner connection, for an operator at the server."""

from __future__ import annotations

import argparse
import asyncio
import getpass

from server.cli.tokens import owner_database
from server.config import Settings
from server.domain.identity.revocation import (
    RevocationSource,
    UserNotFound,
    UserRevoked,
    revoke_user,
)
from server.runtime import StartupError, resolve_databases


def operator() -> str:
    """Who ran the command, as the revocation and each released lease's timeline record it."""
    try:
        return f"cli:{getpass.getuser()}"[:200]
    except (KeyError, OSError):  # no name for this uid (a container's anonymous user)
        return "cli"


def run_user_revoke(args: argparse.Namespace, settings: Settings) -> int:
    databases = resolve_databases(settings)

    async def revoke() -> UserRevoked | UserNotFound:
        async with owner_database(databases, settings) as owner_db:
            return await revoke_user(
                owner_db,
                args.user,
                source=RevocationSource.CLI,
                revoked_by=operator(),
                reason=args.reason,
            )

    result = asyncio.run(revoke())
    if isinstance(result, UserNotFound):
        raise StartupError(result.message)
    print(describe(result, cache_seconds=settings.token_cache_seconds), flush=True)
    return 0


def describe(revoked: UserRevoked, *, cache_seconds: float) -> str:
    """What the command prints: what it ended, and when running services notice."""
    released = ", ".join(str(item) for item in revoked.released_items) or "none"
    return (
        f"revoked user {revoked.user!r}: {revoked.sessions_ended} session(s) ended, "
        f"{revoked.tokens_revoked} token(s) revoked, {revoked.leases_released} lease(s) "
        f"released (items: {released}); credentials issued before now are refused. Running "
        f"services close their sockets within {cache_seconds:g} seconds "
        "(CASEWORK_TOKEN_CACHE_SECONDS)."
    )
