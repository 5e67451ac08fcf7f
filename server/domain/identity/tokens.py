"""Bearer tokens: shown once, stored as a SHA-256 hash."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from server.domain.model import Authentication, CredentialKind, Principal, Role
from server.domain.rows import from_row
from server.store import sql
from server.store.database import Database

TOKEN_PREFIX = "cw_"
# A token's last use is recorded to within this much: a lookup writes the note only when it
# is older, so a busy token costs one write a minute, not one per request.
LAST_USED_RESOLUTION_SECONDS = 60.0


def hash_token(token: str) -> str:
    # Tokens carry 256 random bits, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(token.encode()).hexdigest()


async def create_token(
    owner_db: Database,
    *,
    user: str,
    role: Role,
    queues: list[str],
    expires_at: datetime | None = None,
    demo: bool = False,
) -> str:
    """Needs the owner connection: the application role may only read tokens.

    demo: minted by `serve --demo`, whose next run revokes it (`revoke_demo_tokens`).
    """
    if role is Role.REVIEWER and not queues:
        raise ValueError("a reviewer token must name at least one queue (--queue)")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    await owner_db.fetchrow(
        sql.tokens.TOKEN_INSERT,
        token_hash=hash_token(token),
        user_name=user,
        role=role.value,
        queues=sorted(set(queues)),
        expires_at=expires_at,
        demo=demo,
    )
    return token


async def authenticate(db: Database, token: str) -> Principal | None:
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = await db.fetchrow(
        sql.tokens.TOKEN_GET_ACTIVE,
        token_hash=hash_token(token),
        used_resolution_seconds=LAST_USED_RESOLUTION_SECONDS,
    )
    if row is None:
        return None
    return Principal(
        user=row["user_name"],
        role=Role(row["role"]),
        queues=frozenset(row["queues"]),
        expires_at=row["expires_at"],
        authentication=Authentication(kind=CredentialKind.CLI_TOKEN, token_id=row["id"]),
    )


async def revoke_tokens(owner_db: Database, user: str) -> int:
    """Revokes every live token of a user; returns how many. Needs the owner connection."""
    return len(await owner_db.fetch(sql.tokens.TOKENS_REVOKE_FOR_USER, user_name=user))


async def revoke_demo_tokens(owner_db: Database) -> int:
    """Revokes the live tokens an earlier `serve --demo` minted; returns how many."""
    return len(await owner_db.fetch(sql.tokens.TOKENS_REVOKE_DEMO))


class Revocation(Enum):
    REVOKED = "revoked"
    ALREADY_REVOKED = "already revoked"
    NO_SUCH_TOKEN = "no such token"


@dataclass(frozen=True)
class TokenRevoked:
    outcome: Revocation
    user: str | None


async def revoke_token(owner_db: Database, token_id: int) -> TokenRevoked:
    """Revokes one token by its id (from `list_tokens`). Needs the owner connection."""
    row = await owner_db.fetchrow(sql.tokens.TOKEN_REVOKE, token_id=token_id)
    if row is None:
        return TokenRevoked(Revocation.NO_SUCH_TOKEN, None)
    outcome = Revocation.REVOKED if row["revoked"] else Revocation.ALREADY_REVOKED
    return TokenRevoked(outcome, row["user_name"])


class TokenState(Enum):
    ACTIVE = "active"
    EXPIRED = "expired"
    REVOKED = "revoked"


@dataclass(frozen=True)
class TokenRecord:
    """What an operator sees of a token: never the token, nor its hash."""

    id: int
    user: str
    role: Role
    queues: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    demo: bool

    def state(self, now: datetime) -> TokenState:
        if self.revoked_at is not None:
            return TokenState.REVOKED
        if self.expires_at is not None and self.expires_at <= now:
            return TokenState.EXPIRED
        return TokenState.ACTIVE


async def list_tokens(db: Database, *, include_inactive: bool = False) -> list[TokenRecord]:
    """Live tokens (with include_inactive, revoked and expired ones too), oldest first."""
    rows = await db.fetch(sql.tokens.TOKENS_LIST, include_inactive=include_inactive)
    return [
        from_row(
            TokenRecord,
            row,
            user=row["user_name"],
            role=Role(row["role"]),
            queues=tuple(row["queues"]),
        )
        for row in rows
    ]
