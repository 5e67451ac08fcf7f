"""The one resolver: a CLI token, a console session or a provider's access token, to the
principal it belongs to, with one short cache on the hot path for all three."""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from server.config import AuthSettings
from server.domain.identity import sessions
from server.domain.identity.authentications import recorded
from server.domain.identity.grants import RoleNotHeld, acting_principal
from server.domain.identity.tokens import TOKEN_PREFIX, authenticate
from server.domain.model import Authentication, CredentialKind, Principal
from server.store.database import Database

# Credentials trusted at once per process. A full cache forgets the entry it trusted first
# (with one TTL for every entry, the first to lapse anyway), one at a time: a deployment with
# more live credentials than this re-reads the oldest, never all of them at once.
CACHE_LIMIT = 10_000


@dataclass(frozen=True)
class Credentials:
    """What a request or a socket presented."""

    # `Authorization: Bearer <x>`: a CLI token (cw_...) or the provider's access token.
    bearer: str | None = None
    # The console's session cookie.
    session: str | None = None
    # The role to act under (X-Casework-Role, or `role` in connection_init); None: the first.
    role: str | None = None

    @classmethod
    def of(
        cls, authorization: str | None, *, session: str | None = None, role: str | None = None
    ) -> Credentials:
        """From an Authorization header value (`Bearer <token>`, or the bare token)."""
        bearer = None
        if authorization:
            scheme, _, token = authorization.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                bearer = token.strip()
        return cls(bearer=bearer, session=session or None, role=(role or "").strip() or None)

    @property
    def presented(self) -> bool:
        return bool(self.bearer or self.session)


class AccessTokenPrincipals(Protocol):
    """Turns a provider's access token into a principal (server/domain/identity/jwt.py)."""

    async def principal(self, token: str, role: str | None) -> Principal | None: ...


class CredentialResolver:
    def __init__(
        self,
        db: Database,
        *,
        ttl: float,
        auth: AuthSettings | None = None,
        access_tokens: AccessTokenPrincipals | None = None,
    ) -> None:
        """ttl: how long a resolved credential is trusted; a revoked one works that long at
        most. access_tokens: how provider JWTs resolve; None refuses them."""
        self._db = db
        self._ttl = ttl
        self._auth = auth or AuthSettings()
        self._access_tokens = access_tokens
        self._cache: dict[Credentials, tuple[float, Principal]] = {}
        # One lookup per credential in flight: a burst of sockets or requests with the same
        # one (a console reconnecting its subscriptions, many consoles after a restart) waits
        # for one round trip instead of sending one each.
        self._lookups: dict[Credentials, asyncio.Future[Principal | None]] = {}

    @property
    def ttl(self) -> float:
        return self._ttl

    @property
    def auth(self) -> AuthSettings:
        return self._auth

    async def resolve(self, credentials: Credentials) -> Principal | None:
        """The principal, or None for a credential that is not (or no longer) valid.

        Raises RoleNotHeld for a role the principal does not hold, NoAccess for a verified
        identity no rule grants anything, and what the database raises when it cannot be
        asked and the cache has no answer: callers tell an outage from a refusal
        (`server.store.errors.is_unavailable`).
        """
        if not credentials.presented:
            return None
        cached = self._cache.get(credentials)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        lookup = self._lookups.get(credentials)
        if lookup is None:
            lookup = asyncio.ensure_future(self._look_up(credentials))
            self._lookups[credentials] = lookup
            lookup.add_done_callback(functools.partial(self._looked_up, credentials))
        # Shielded: one caller going away (a client that hung up) does not cancel the lookup
        # the others wait for. Every caller still sees its outcome, an outage included.
        return await asyncio.shield(lookup)

    async def _look_up(self, credentials: Credentials) -> Principal | None:
        principal = await self._principal(credentials)
        if principal is None:
            return None
        principal = await recorded(self._db, principal)
        self._remember(credentials, principal)
        return principal

    async def _principal(self, credentials: Credentials) -> Principal | None:
        bearer, role = credentials.bearer, credentials.role
        if bearer is not None:
            if bearer.startswith(TOKEN_PREFIX):
                return await self._cli_token(bearer, role) if self._auth.tokens else None
            if self._access_tokens is None:
                return None
            return await self._access_tokens.principal(bearer, role)
        if credentials.session is not None and self._auth.oidc:
            return await self._session(credentials.session, role)
        return None

    async def _cli_token(self, token: str, role: str | None) -> Principal | None:
        # Only a miss reaches the database, and that lookup also notes the token's last use
        # (for `casework token list`), writing at most once a minute per token.
        principal = await authenticate(self._db, token)
        if principal is not None and role is not None and role != principal.role.value:
            raise RoleNotHeld(role, (principal.role.value,))
        return principal

    async def _session(self, secret: str, role: str | None) -> Principal | None:
        live = await sessions.live_session(self._db, secret)
        if live is None:
            return None
        return await acting_principal(
            self._db,
            user=live.user_name,
            display_name=live.display_name,
            grants=live.grants,
            requested_role=role,
            expires_at=live.expires_at,
            authentication=Authentication(
                kind=CredentialKind.SESSION,
                issuer=live.issuer,
                subject=live.subject,
                session_id=live.id,
                auth_time=live.auth_time,
                acr=live.acr,
            ),
        )

    def forget_session(self, secret: str) -> None:
        """A session ended here (its logout): this process refuses it at once, not after the
        cache window. Other processes still take up to `ttl` to see the end."""
        for credentials in [c for c in self._cache if c.session == secret]:
            del self._cache[credentials]

    def _remember(self, credentials: Credentials, principal: Principal) -> None:
        now = time.monotonic()
        trusted_until = now + self._ttl
        if principal.expires_at is not None:
            # An expiring credential is not trusted past its expiry, cache or not.
            trusted_until = min(trusted_until, now + seconds_until(principal.expires_at))
        # Re-inserted at the end, so the first entry is always the one trusted longest ago.
        self._cache.pop(credentials, None)
        while len(self._cache) >= CACHE_LIMIT:
            del self._cache[next(iter(self._cache))]
        self._cache[credentials] = (trusted_until, principal)

    def _looked_up(
        self, credentials: Credentials, lookup: asyncio.Future[Principal | None]
    ) -> None:
        if self._lookups.get(credentials) is lookup:
            del self._lookups[credentials]
        # Read by every caller that waited; this marks the outcome as seen when all of them
        # went away before it came (asyncio would otherwise log it as never retrieved).
        if not lookup.cancelled():
            lookup.exception()


def seconds_until(moment: datetime) -> float:
    return moment.timestamp() - time.time()
