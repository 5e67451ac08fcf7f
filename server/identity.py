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

    async def resolve(self, authorization: str | None) -> Principal | None:
        """From an `Authorization: Bearer <token>` header value (or the bare token)."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        now = time.monotonic()
        cached = self._cache.get(token)
        if cached and cached[0] > now:
            return cached[1]
        principal = await authenticate(self._db, token)
        if principal is not None:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[token] = (now + self._ttl, principal)
        return principal
