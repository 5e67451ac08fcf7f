"""Verifying the provider's JWTs: access tokens presented as `Authorization: Bearer` (RFC 9068
profile) and back-channel logout tokens (OpenID Connect Back-Channel Logout 1.0).

`AccessTokenVerifier(issuer, audience)` discovers the provider's `jwks_uri` from
`<issuer>/.well-known/openid-configuration` and keeps its keys. A token is accepted only when:

- it is at most `MAX_TOKEN_BYTES` (checked before parsing);
- its `alg` is in the allowlist: asymmetric algorithms only, so neither `none` nor an HMAC
  signed with the provider's public key as the secret can pass;
- its header `typ`, when present, is `at+jwt` (`logout+jwt` for logout tokens); with
  `accept_typ_jwt` also `JWT`, for providers (Entra ID) that type their access tokens so, and
  then a token with a `nonce` is refused as the ID token it is;
- its signature verifies with the provider's key named by `kid`;
- `iss` is exactly the issuer, `aud` (a string or a list) contains the audience, `exp` has not
  passed and `nbf` has, both with `leeway_seconds`.

Keys are cached. An unknown `kid` makes the verifier fetch the JWKS again, as does a key set
older than `max_key_age_seconds` (so a retired key stops working), but never more than one
fetch per `refetch_interval_seconds`, the first fetch included: a flood of tokens with made-up
kids costs the provider one request per interval. Concurrent callers share the fetch in
flight. When the provider cannot be reached the last good keys stay in use; only when there
are none at all does `verify` raise `ProviderUnavailable` (an outage, not the caller's fault).

Refusals raise `AccessTokenRefused` (or `LogoutTokenRefused`) with a `RefusalReason` and a
detail meant for one log line: never the token itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import httpx
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, OKPKey, RSAKey, import_key

log = logging.getLogger("casework.identity")

MAX_TOKEN_BYTES = 8 * 1024
DEFAULT_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})
LOGOUT_TOKEN_TYPES = frozenset({"logout+jwt", "application/logout+jwt"})
BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout"
# A logout token older than this is refused: whoever records the jti of accepted tokens (to
# refuse a replay) needs to keep them this long, plus the leeway.
LOGOUT_TOKEN_MAX_AGE_SECONDS = 600
# Claims only an ID token carries: a token with one of them is not an access token.
ID_TOKEN_CLAIMS = ("nonce", "at_hash", "c_hash", "s_hash")
HTTP_TIMEOUT_SECONDS = 5.0
_KEY_TYPES: Mapping[str, tuple[type[Key], str | None]] = {
    "RS256": (RSAKey, None),
    "RS384": (RSAKey, None),
    "RS512": (RSAKey, None),
    "PS256": (RSAKey, None),
    "PS384": (RSAKey, None),
    "PS512": (RSAKey, None),
    "ES256": (ECKey, "P-256"),
    "ES384": (ECKey, "P-384"),
    "ES512": (ECKey, "P-521"),
    "EdDSA": (OKPKey, None),
}


class RefusalReason(StrEnum):
    MALFORMED = "malformed"
    TOO_LARGE = "too_large"
    ALGORITHM = "algorithm"
    TYPE = "type"
    UNKNOWN_KEY = "unknown_key"
    SIGNATURE = "signature"
    ISSUER = "issuer"
    AUDIENCE = "audience"
    EXPIRED = "expired"
    NOT_YET_VALID = "not_yet_valid"
    ID_TOKEN = "id_token"
    MISSING_CLAIM = "missing_claim"
    # Logout tokens only.
    NOT_A_LOGOUT_EVENT = "not_a_logout_event"
    NONCE = "nonce"
    ISSUED_AT = "issued_at"


class TokenRefused(Exception):
    """A token that does not prove what it claims: the caller's mistake, not an outage."""

    def __init__(self, reason: RefusalReason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


class AccessTokenRefused(TokenRefused):
    pass


class LogoutTokenRefused(TokenRefused):
    pass


class ProviderUnavailable(Exception):
    """The provider's keys could not be fetched and none were ever fetched: an outage."""


@dataclass(frozen=True)
class VerifiedToken:
    issuer: str
    subject: str
    claims: dict[str, Any]
    issued_at: datetime | None
    expires_at: datetime
    auth_time: datetime | None
    acr: str | None
    # The client the token was issued to (RFC 9068 `client_id`, else Entra ID's `azp`/`appid`).
    client_id: str | None


@dataclass(frozen=True)
class LogoutToken:
    issuer: str
    subject: str | None
    sid: str | None
    jti: str
    issued_at: datetime


def _time(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return datetime.fromtimestamp(value, UTC)


def _audiences(claims: Mapping[str, Any]) -> list[str]:
    aud = claims.get("aud")
    if isinstance(aud, str):
        return [aud]
    if isinstance(aud, list):
        return [item for item in aud if isinstance(item, str)]
    return []


def _looks_like_id_token(claims: Mapping[str, Any]) -> bool:
    return any(name in claims for name in ID_TOKEN_CLAIMS)


def _id_token_detail(claims: Mapping[str, Any]) -> str:
    marks = ", ".join(name for name in ID_TOKEN_CLAIMS if name in claims)
    return (
        f"an ID token is not an access token: it carries {marks} and its audience "
        f"{_audiences(claims)} is the client it was issued to, not this API"
    )


@dataclass(frozen=True)
class _Parsed:
    header: dict[str, Any]
    claims: dict[str, Any]


class AccessTokenVerifier:
    """Verifies one issuer's JWTs for one audience. Share one per issuer: it holds the keys."""

    def __init__(
        self,
        issuer: str,
        audience: str,
        *,
        algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS,
        accept_typ_jwt: bool = False,
        leeway_seconds: int = 30,
        refetch_interval_seconds: float = 30,
        max_key_age_seconds: float = 3600,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        unsupported = [alg for alg in algorithms if alg not in _KEY_TYPES]
        if unsupported or not algorithms:
            raise ValueError(
                f"algorithms must be asymmetric signature algorithms from {sorted(_KEY_TYPES)};"
                f" refused: {unsupported or 'an empty list'}"
            )
        self.issuer = issuer
        self.audience = audience
        self.algorithms = algorithms
        self.accept_typ_jwt = accept_typ_jwt
        self.leeway_seconds = leeway_seconds
        self._keys = _KeyCache(
            issuer, http, refetch_interval=refetch_interval_seconds, max_age=max_key_age_seconds
        )

    async def aclose(self) -> None:
        """Closes the HTTP client if the verifier made its own."""
        await self._keys.aclose()

    async def verify(self, token: str) -> VerifiedToken:
        """The access token's identity, or AccessTokenRefused / ProviderUnavailable."""
        parsed = await self._verified(token, AccessTokenRefused, ACCESS_TOKEN_TYPES)
        header, claims = parsed.header, parsed.claims
        typ = header.get("typ")
        if isinstance(typ, str) and typ.lower() == "jwt" and "nonce" in claims:
            raise AccessTokenRefused(RefusalReason.ID_TOKEN, _id_token_detail(claims))
        audiences = _audiences(claims)
        if self.audience not in audiences:
            if _looks_like_id_token(claims):
                raise AccessTokenRefused(RefusalReason.ID_TOKEN, _id_token_detail(claims))
            raise AccessTokenRefused(
                RefusalReason.AUDIENCE, f"audience {audiences} does not include {self.audience}"
            )
        now = time.time()
        expires_at = self._check_times(claims, now, AccessTokenRefused)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise AccessTokenRefused(RefusalReason.MISSING_CLAIM, "the token has no sub")
        client_id = claims.get("client_id", claims.get("azp", claims.get("appid")))
        acr = claims.get("acr")
        return VerifiedToken(
            issuer=self.issuer,
            subject=subject,
            claims=claims,
            issued_at=_time(claims.get("iat")),
            expires_at=expires_at,
            auth_time=_time(claims.get("auth_time")),
            acr=acr if isinstance(acr, str) else None,
            client_id=client_id if isinstance(client_id, str) else None,
        )

    async def verify_logout_token(self, token: str, *, client_id: str) -> LogoutToken:
        """A back-channel logout token for `client_id`, or LogoutTokenRefused. Replays are
        the caller's to refuse (by the returned jti)."""
        parsed = await self._verified(token, LogoutTokenRefused, LOGOUT_TOKEN_TYPES)
        claims = parsed.claims
        if client_id not in _audiences(claims):
            raise LogoutTokenRefused(
                RefusalReason.AUDIENCE,
                f"audience {_audiences(claims)} does not include the client {client_id}",
            )
        events = claims.get("events")
        if not isinstance(events, dict) or not isinstance(
            events.get(BACKCHANNEL_LOGOUT_EVENT), dict
        ):
            raise LogoutTokenRefused(
                RefusalReason.NOT_A_LOGOUT_EVENT,
                f"events does not hold {BACKCHANNEL_LOGOUT_EVENT} with an object",
            )
        if "nonce" in claims:
            raise LogoutTokenRefused(RefusalReason.NONCE, "a logout token never has a nonce")
        jti, subject, sid = claims.get("jti"), claims.get("sub"), claims.get("sid")
        if not isinstance(jti, str) or not jti:
            raise LogoutTokenRefused(RefusalReason.MISSING_CLAIM, "the logout token has no jti")
        subject = subject if isinstance(subject, str) and subject else None
        sid = sid if isinstance(sid, str) and sid else None
        if subject is None and sid is None:
            raise LogoutTokenRefused(
                RefusalReason.MISSING_CLAIM, "the logout token has neither sub nor sid"
            )
        now = time.time()
        if "exp" in claims:
            self._check_times(claims, now, LogoutTokenRefused)
        issued_at = _time(claims.get("iat"))
        if issued_at is None:
            raise LogoutTokenRefused(RefusalReason.ISSUED_AT, "the logout token has no iat")
        age = now - issued_at.timestamp()
        if age < -self.leeway_seconds:
            raise LogoutTokenRefused(RefusalReason.ISSUED_AT, "the logout token is from the future")
        if age > LOGOUT_TOKEN_MAX_AGE_SECONDS + self.leeway_seconds:
            raise LogoutTokenRefused(
                RefusalReason.ISSUED_AT, f"the logout token is {int(age)} seconds old"
            )
        return LogoutToken(self.issuer, subject, sid, jti, issued_at)

    async def _verified(
        self, token: str, refused: type[TokenRefused], types: frozenset[str]
    ) -> _Parsed:
        """Size, header, algorithm, type, key, signature and issuer: what every JWT needs."""
        if len(token) > MAX_TOKEN_BYTES:
            raise refused(RefusalReason.TOO_LARGE, f"{len(token)} bytes, over {MAX_TOKEN_BYTES}")
        try:
            compact = jws.extract_compact(token.encode("ascii"))
            header = compact.headers()
            claims = json.loads(compact.payload)
        except (JoseError, ValueError, UnicodeError) as error:
            raise refused(RefusalReason.MALFORMED, f"not a signed JWT ({error})") from None
        if not isinstance(claims, dict):
            raise refused(RefusalReason.MALFORMED, "the payload is not a JSON object")
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise refused(
                RefusalReason.ALGORITHM, f"alg {alg!r} is not one of {list(self.algorithms)}"
            )
        typ = header.get("typ")
        if typ is not None:
            allowed = types | {"jwt"} if self.accept_typ_jwt else types
            if not isinstance(typ, str) or typ.lower() not in allowed:
                if refused is AccessTokenRefused and _looks_like_id_token(claims):
                    raise refused(RefusalReason.ID_TOKEN, _id_token_detail(claims))
                raise refused(RefusalReason.TYPE, f"typ {typ!r} is not one of {sorted(allowed)}")
        kid = header.get("kid")
        keys = await self._keys.keys_for(kid if isinstance(kid, str) else None, alg)
        if not keys:
            raise refused(
                RefusalReason.UNKNOWN_KEY,
                f"the provider publishes no {alg} key with kid {kid!r}"
                + ("" if self._keys.last_fetch_ok else " (its JWKS could not be fetched)"),
            )
        if not any(_signature_ok(token, key, alg) for key in keys):
            raise refused(RefusalReason.SIGNATURE, f"the signature does not verify (kid {kid!r})")
        if claims.get("iss") != self.issuer:
            raise refused(
                RefusalReason.ISSUER, f"issuer {claims.get('iss')!r} is not {self.issuer!r}"
            )
        return _Parsed(header, claims)

    def _check_times(
        self, claims: Mapping[str, Any], now: float, refused: type[TokenRefused]
    ) -> datetime:
        expires_at = _time(claims.get("exp"))
        if expires_at is None:
            raise refused(RefusalReason.MISSING_CLAIM, "the token has no exp")
        if expires_at.timestamp() + self.leeway_seconds < now:
            raise refused(RefusalReason.EXPIRED, f"expired at {expires_at.isoformat()}")
        if "nbf" in claims:
            not_before = _time(claims["nbf"])
            if not_before is None:
                raise refused(RefusalReason.MALFORMED, "nbf is not a number")
            if not_before.timestamp() - self.leeway_seconds > now:
                raise refused(
                    RefusalReason.NOT_YET_VALID, f"not valid before {not_before.isoformat()}"
                )
        return expires_at


def _signature_ok(token: str, key: Key, alg: str) -> bool:
    try:
        jws.deserialize_compact(token, key, algorithms=[alg])
    except JoseError:
        return False
    return True


def _fits(key: Key, alg: str) -> bool:
    key_type, curve = _KEY_TYPES[alg]
    if not isinstance(key, key_type):
        return False
    if curve is not None and key.get("crv") != curve:
        return False
    if alg == "EdDSA" and key.get("crv") not in ("Ed25519", "Ed448"):
        return False
    return key.get("alg") in (None, alg) and key.get("use") in (None, "sig")


def _import_keys(jwks: Any) -> dict[str | None, list[Key]]:
    """The usable public keys of a JWKS by kid; keys this verifier cannot use are skipped."""
    if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
        raise ValueError("the JWKS has no keys list")
    found: dict[str | None, list[Key]] = {}
    for data in jwks["keys"]:
        if not isinstance(data, dict) or data.get("kty") not in ("RSA", "EC", "OKP"):
            continue
        try:
            key = import_key(data)
        except (JoseError, ValueError) as error:
            log.warning("skipping a JWKS key (kid %r): %s", data.get("kid"), error)
            continue
        found.setdefault(key.kid, []).append(key)
    return found


class _KeyCache:
    """The provider's keys, fetched on demand, at most once per refetch interval."""

    def __init__(
        self,
        issuer: str,
        http: httpx.AsyncClient | None,
        *,
        refetch_interval: float,
        max_age: float,
    ) -> None:
        self._issuer = issuer
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS)
        self._refetch_interval = refetch_interval
        self._max_age = max_age
        self._keys: dict[str | None, list[Key]] | None = None
        self._jwks_uri: str | None = None
        self._fetched_at = float("-inf")  # the last good fetch (time.monotonic())
        self._tried_at = float("-inf")  # the last attempt, good or not
        self._fetch: asyncio.Task[None] | None = None
        self.last_fetch_ok = True

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def keys_for(self, kid: str | None, alg: str) -> list[Key]:
        """The keys that may have signed an `alg` token with `kid` (no kid: every key of that
        type). Raises ProviderUnavailable when no keys were ever fetched."""
        now = time.monotonic()
        if self._keys is None or now - self._fetched_at > self._max_age:
            await self._refetch()
        found = self._lookup(kid, alg)
        if not found:
            await self._refetch()
            found = self._lookup(kid, alg)
        return found

    def _lookup(self, kid: str | None, alg: str) -> list[Key]:
        if self._keys is None:
            return []
        if kid is None:
            candidates = [key for keys in self._keys.values() for key in keys]
        else:
            candidates = self._keys.get(kid, [])
        return [key for key in candidates if _fits(key, alg)]

    async def _refetch(self) -> None:
        """Fetches the JWKS unless one was tried within the interval; callers arriving while
        a fetch runs share it. Raises ProviderUnavailable when there are still no keys."""
        if self._fetch is None:
            if time.monotonic() - self._tried_at < self._refetch_interval:
                if self._keys is None:
                    raise ProviderUnavailable(f"the keys of {self._issuer} could not be fetched")
                return
            self._tried_at = time.monotonic()
            self._fetch = asyncio.ensure_future(self._fetch_keys())
        # Shielded: a caller that gives up does not cancel the fetch the others wait for.
        await asyncio.shield(self._fetch)
        if self._keys is None:
            raise ProviderUnavailable(f"the keys of {self._issuer} could not be fetched")

    async def _fetch_keys(self) -> None:
        try:
            await self._fetch_keys_once()
        finally:
            self._fetch = None

    async def _fetch_keys_once(self) -> None:
        try:
            if self._jwks_uri is None:
                self._jwks_uri = await self._discover()
            response = await self._http.get(self._jwks_uri)
            response.raise_for_status()
            keys = _import_keys(response.json())
        except (httpx.HTTPError, ValueError) as error:
            self.last_fetch_ok = False
            kept = "keeping the last good keys" if self._keys is not None else "no keys yet"
            log.warning("the JWKS of %s could not be fetched (%s); %s", self._issuer, error, kept)
            return
        self._keys = keys
        self._fetched_at = time.monotonic()
        self.last_fetch_ok = True

    async def _discover(self) -> str:
        url = f"{self._issuer.rstrip('/')}/.well-known/openid-configuration"
        response = await self._http.get(url)
        response.raise_for_status()
        document = response.json()
        if not isinstance(document, dict) or document.get("issuer") != self._issuer:
            raise ValueError(f"{url} names another issuer")
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise ValueError(f"{url} has no jwks_uri")
        return jwks_uri
