"""The provider's signing keys (its JWKS, found through its discovery document), fetched on
demand and at most once per interval, for the verifier in access_tokens.py; and the
discovery document's endpoints (the token endpoint, for refreshing sessions)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, OKPKey, RSAKey, import_key

log = logging.getLogger("casework.identity")

HTTP_TIMEOUT_SECONDS = 5.0
KEY_TYPES: Mapping[str, tuple[type[Key], str | None]] = {
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


class ProviderUnavailable(Exception):
    """The provider's keys could not be fetched and none were ever fetched: an outage."""


def fits(key: Key, alg: str) -> bool:
    key_type, curve = KEY_TYPES[alg]
    if not isinstance(key, key_type):
        return False
    if curve is not None and key.get("crv") != curve:
        return False
    if alg == "EdDSA" and key.get("crv") not in ("Ed25519", "Ed448"):
        return False
    return key.get("alg") in (None, alg) and key.get("use") in (None, "sig")


def import_keys(jwks: Any) -> dict[str | None, list[Key]]:
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


class ProviderKeys:
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
        self._metadata: dict[str, Any] | None = None
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

    async def endpoint(self, name: str) -> str:
        try:
            if self._metadata is None:
                self._jwks_uri = await self._discover()
        except (httpx.HTTPError, ValueError) as error:
            raise ProviderUnavailable(f"{self._issuer}'s discovery document: {error}") from None
        url = (self._metadata or {}).get(name)
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise ProviderUnavailable(f"the discovery document of {self._issuer} has no {name}")
        return url

    def _lookup(self, kid: str | None, alg: str) -> list[Key]:
        if self._keys is None:
            return []
        if kid is None:
            candidates = [key for keys in self._keys.values() for key in keys]
        else:
            candidates = self._keys.get(kid, [])
        return [key for key in candidates if fits(key, alg)]

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
            keys = import_keys(response.json())
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
        self._metadata = document
        jwks_uri = document.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise ValueError(f"{url} has no jwks_uri")
        return jwks_uri
