"""Resolving bearer tokens to principals, with a short cache on the hot path."""

from __future__ import annotations

import asyncio
import functools
import time

from server.domain.identity.tokens import authenticate
from server.domain.model import Principal
from server.store.database import Database

# Tokens trusted at once per process. A full cache forgets the entry it trusted first (with
# one TTL for every entry, the first to lapse anyway), one at a time: a deployment with more
# live tokens than this re-reads the oldest, never all of them at once.
CACHE_LIMIT = 10_000


class TokenResolver:
    def __init__(self, db: Database, *, ttl: float) -> None:
        """ttl: how long a resolved token is trusted; a revoked one works that long at most."""
        self._db = db
        self._ttl = ttl
        self._cache: dict[str, tuple[float, Principal]] = {}
        # One lookup per token in flight: a burst of sockets or requests with the same token
        # (a console reconnecting its subscriptions, many consoles after a restart) waits for
        # one round trip instead of sending one each.
        self._lookups: dict[str, asyncio.Future[Principal | None]] = {}

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
        cached = self._cache.get(token)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        lookup = self._lookups.get(token)
        if lookup is None:
            lookup = asyncio.ensure_future(self._look_up(token))
            self._lookups[token] = lookup
            lookup.add_done_callback(functools.partial(self._looked_up, token))
        # Shielded: one caller going away (a client that hung up) does not cancel the lookup
        # the others wait for. Every caller still sees its outcome, an outage included.
        return await asyncio.shield(lookup)

    async def _look_up(self, token: str) -> Principal | None:
        # Only a miss reaches the database, and that lookup also notes the token's last use
        # (for `casework token list`), writing at most once a minute per token.
        principal = await authenticate(self._db, token)
        if principal is not None:
            self._remember(token, principal)
        return principal

    def _remember(self, token: str, principal: Principal) -> None:
        now = time.monotonic()
        trusted_until = now + self._ttl
        if principal.expires_at is not None:
            # An expiring token is not trusted past its expiry, cache or not.
            trusted_until = min(trusted_until, now + principal.expires_at.timestamp() - time.time())
        # Re-inserted at the end, so the first entry is always the one trusted longest ago.
        self._cache.pop(token, None)
        while len(self._cache) >= CACHE_LIMIT:
            del self._cache[next(iter(self._cache))]
        self._cache[token] = (trusted_until, principal)

    def _looked_up(self, token: str, lookup: asyncio.Future[Principal | None]) -> None:
        if self._lookups.get(token) is lookup:
            del self._lookups[token]
        # Read by every caller that waited; this marks the outcome as seen when all of them
        # went away before it came (asyncio would otherwise log it as never retrieved).
        if not lookup.cancelled():
            lookup.exception()
