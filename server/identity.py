"""Resolving bearer tokens to principals, with a short cache on the hot path."""

from __future__ import annotations

import time

from server.domain.model import Principal
from server.domain.tokens import authenticate
from server.store.database import Database

CACHE_LIMIT = 10_000


class TokenResolver:
    def __init__(self, db: Database, *, ttl: float) -> None:
        """ttl: how long a resolved token is trusted; a revoked one works that long at most."""
        self._db = db
        self._ttl = ttl
        self._cache: dict[str, tuple[float, Principal]] = {}

    @property
    def ttl(self) -> float:
        return self._ttl

    async def resolve(self, authorization: str | None) -> Principal | None:
        """From an `Authorization: Bearer <token>` header value (or the bare token).

        Raises what the database raises when it cannot be asked and the cache has no answer:
        callers tell an outage from a refusal (`server.store.errors.is_unavailable`).
        """
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        now = time.monotonic()
        cached = self._cache.get(token)
        if cached and cached[0] > now:
            return cached[1]
        # Only a miss reaches the database, and that lookup also notes the token's last use
        # (for `casework token list`), writing at most once a minute per token.
        principal = await authenticate(self._db, token)
        if principal is not None:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            trusted_until = now + self._ttl
            if principal.expires_at is not None:
                # An expiring token is not trusted past its expiry, cache or not.
                trusted_until = min(
                    trusted_until, now + principal.expires_at.timestamp() - time.time()
                )
            self._cache[token] = (trusted_until, principal)
        return principal
