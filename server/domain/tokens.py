"""Bearer tokens: shown once, stored as a SHA-256 hash."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime

from server.domain.model import Principal, Role
from server.store import sql
from server.store.database import Database

TOKEN_PREFIX = "cw_"


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
) -> str:
    """Needs the owner connection: the application role may only read tokens."""
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
    )
    return token


async def authenticate(db: Database, token: str) -> Principal | None:
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = await db.fetchrow(sql.tokens.TOKEN_GET_ACTIVE, token_hash=hash_token(token))
    if row is None:
        return None
    return Principal(
        user=row["user_name"],
        role=Role(row["role"]),
        queues=frozenset(row["queues"]),
        expires_at=row["expires_at"],
    )


async def revoke_tokens(owner_db: Database, user: str) -> int:
    """Revokes every live token of a user; returns how many. Needs the owner connection."""
    return len(await owner_db.fetch(sql.tokens.TOKENS_REVOKE_FOR_USER, user_name=user))
