"""A real OpenID Connect provider for the identity tests, and the helpers that drive it.

The provider is the npm `oidc-provider` (pinned in tests/identity/provider/package-lock.json)
run by this machine's Node from tests/identity/provider/provider.mjs: `OidcProvider` writes its
configuration and runs it (tests/identity/provider_process.py: `npm ci` on first use, then
`node provider.mjs`, awaited on the readiness line it prints).

What the provider offers (its clients, accounts and keys are set from Python):

- `console`: a confidential client (client_secret_basic), authorization code with PKCE S256
  (required), refresh tokens; its redirect, post-logout and back-channel logout URIs are
  given by the test (`configure_console`, which restarts the provider), since Casework's port
  is known only then. Its ID tokens carry `sid` and the account's claims.
- `integration`: a confidential client with the client_credentials grant; its tokens carry
  `INTEGRATION_CLAIMS` (e.g. `groups`), so rules can map integrations as they map people.
- Access tokens are `at+jwt` JWTs for `api_audience` (RFC 9068: iss, sub, aud, client_id,
  scope, iat, exp, jti), from the code flow and from client credentials; a person's carry
  their `groups`, `name`, `preferred_username`, `email`.
- Accounts are a JSON file read at every lookup: `set_account` / `remove_account` take effect
  at the next login or refresh, without a restart.
- The login page is oidc-provider's development interaction: a form taking any login (the
  account's `sub`) and any password; there is no consent page. In a browser:
  `page.fill("input[name=login]", sub); page.fill("input[name=password]", "x");
  page.click("button[type=submit]")`.
- Keys: an RS256 and an ES256 key with distinct kids, generated here; the first key of a type
  signs. `rotate_keys` puts new keys first (keeping or dropping the old) and restarts the
  provider on the same port, so the issuer does not change (its sessions do not survive a
  restart). `signing_key(alg)` hands the private key to tests that forge tokens.
- Every request the provider receives is logged (`requests()`, `jwks_fetches()`), so a test
  can count what a verifier fetched without mocking it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
from joserfc.jwk import ECKey, Key, RSAKey

from tests.identity.provider_process import ProviderProcess

API_AUDIENCE = "https://casework.test/api"
API_SCOPE = "casework"
CONSOLE_CLIENT_ID = "casework-console"
INTEGRATION_CLIENT_ID = "casework-integration"
INTEGRATION_CLAIMS: dict[str, Any] = {"groups": ["integrations"]}
# Registered on the console client beside the test's own: `code_flow_tokens` stops at the
# redirect to it and never connects (port 9 is discard).
TOKEN_ONLY_REDIRECT_URI = "http://127.0.0.1:9/oidc-test-callback"
UNUSED_BACKCHANNEL_URI = "http://127.0.0.1:9/oidc-test-backchannel-logout"
DEFAULT_TTL = {
    "AccessToken": 300,
    "ClientCredentials": 300,
    "IdToken": 300,
    "AuthorizationCode": 60,
    "Interaction": 600,
    "RefreshToken": 86400,
    "Session": 86400,
    "Grant": 86400,
}


def generate_key(alg: str) -> Key:
    """A private signing key for `alg` (RS256 or ES256) with a random kid."""
    kid = f"{alg.lower()}-{secrets.token_hex(4)}"
    if alg == "RS256":
        return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig"})
    if alg == "ES256":
        return ECKey.generate_key("P-256", parameters={"kid": kid, "use": "sig"})
    raise ValueError(f"no key generator for {alg}")


def _kty_of(alg: str) -> str:
    return {"RS": "RSA", "PS": "RSA", "ES": "EC"}[alg[:2]]


@dataclass(frozen=True)
class ClientCredentials:
    client_id: str
    client_secret: str

    @property
    def basic_auth(self) -> tuple[str, str]:
        return (self.client_id, self.client_secret)


@dataclass(frozen=True)
class ConsoleUris:
    """Where the provider sends the console client's browser and its logout tokens."""

    redirect_uris: tuple[str, ...] = ()
    post_logout_redirect_uris: tuple[str, ...] = ()
    backchannel_logout_uri: str | None = None


@dataclass(frozen=True)
class Tokens:
    """A token endpoint response."""

    access_token: str
    id_token: str | None
    refresh_token: str | None
    expires_in: int
    raw: dict[str, Any]

    @classmethod
    def of(cls, body: dict[str, Any]) -> Tokens:
        return cls(
            body["access_token"],
            body.get("id_token"),
            body.get("refresh_token"),
            int(body["expires_in"]),
            body,
        )


@dataclass(frozen=True)
class AuthorizationRequest:
    url: str
    redirect_uri: str
    state: str
    nonce: str
    code_verifier: str


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str


@dataclass
class OidcProvider:
    """The provider's configuration and its process. Start with `start()`; see the module."""

    workdir: Path
    access_token_alg: str = "RS256"
    ttl: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_TTL))
    api_audience: str = API_AUDIENCE
    api_scope: str = API_SCOPE
    console: ClientCredentials = field(
        default_factory=lambda: ClientCredentials(CONSOLE_CLIENT_ID, secrets.token_urlsafe(24))
    )
    integration: ClientCredentials = field(
        default_factory=lambda: ClientCredentials(INTEGRATION_CLIENT_ID, secrets.token_urlsafe(24))
    )
    console_uris: ConsoleUris = ConsoleUris()
    keys: list[Key] = field(default_factory=lambda: [generate_key("RS256"), generate_key("ES256")])
    _port: int = 0
    _issuer: str | None = None
    _process: ProviderProcess = field(init=False)

    def __post_init__(self) -> None:
        self._process = ProviderProcess(self.log_file)

    # -- the process ------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        if self._issuer is None:
            raise RuntimeError("the provider has not been started")
        return self._issuer

    @property
    def running(self) -> bool:
        return self._process.running

    @property
    def accounts_file(self) -> Path:
        return self.workdir / "accounts.json"

    @property
    def request_log(self) -> Path:
        return self.workdir / "requests.jsonl"

    @property
    def log_file(self) -> Path:
        return self.workdir / "provider.log"

    def start(self) -> float:
        """Starts the provider (on the port it had, if it ran before); returns the seconds it
        took to answer. Raises with the provider's log when it does not come up."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.accounts_file.exists():
            self.accounts_file.write_text("{}")
        config = self.workdir / "config.json"
        config.write_text(json.dumps(self._config()))
        started = time.monotonic()
        ready = self._process.start(config)
        self._issuer, self._port = ready["issuer"], int(ready["port"])
        return time.monotonic() - started

    def stop(self) -> None:
        self._process.stop()

    def restart(self) -> float:
        """Stops and starts again with the current configuration, on the same port."""
        self.stop()
        return self.start()

    def _config(self) -> dict[str, Any]:
        uris = self.console_uris
        console: dict[str, Any] = {
            "client_id": self.console.client_id,
            "client_secret": self.console.client_secret,
            "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "redirect_uris": [*uris.redirect_uris, TOKEN_ONLY_REDIRECT_URI],
            "post_logout_redirect_uris": list(uris.post_logout_redirect_uris),
        }
        # oidc-provider puts `sid` in ID tokens only for clients with a back-channel logout
        # URI: without the test's, one where nothing listens (the provider logs the refusal).
        console["backchannel_logout_uri"] = uris.backchannel_logout_uri or UNUSED_BACKCHANNEL_URI
        console["backchannel_logout_session_required"] = True
        integration = {
            "client_id": self.integration.client_id,
            "client_secret": self.integration.client_secret,
            "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["client_credentials"],
            "response_types": [],
            "redirect_uris": [],
        }
        return {
            "port": self._port,
            "jwks": {"keys": [key.as_dict(private=True) for key in self.keys]},
            "clients": [console, integration],
            "client_claims": {self.integration.client_id: INTEGRATION_CLAIMS},
            "api_audience": self.api_audience,
            "api_scope": self.api_scope,
            "access_token_alg": self.access_token_alg,
            "accounts_file": str(self.accounts_file),
            "request_log": str(self.request_log),
            "ttl": self.ttl,
        }

    # -- what tests change --------------------------------------------------------------------

    def configure_console(
        self,
        *,
        redirect_uris: Iterable[str] = (),
        post_logout_redirect_uris: Iterable[str] = (),
        backchannel_logout_uri: str | None = None,
    ) -> None:
        """Registers the console client's URIs (Casework's, once its port is known); restarts
        the provider when it runs."""
        self.console_uris = ConsoleUris(
            tuple(redirect_uris), tuple(post_logout_redirect_uris), backchannel_logout_uri
        )
        if self.running:
            self.restart()

    def set_account(self, sub: str, claims: Mapping[str, Any]) -> None:
        """Creates or replaces an account (`groups`, `name`, `preferred_username`, `email`,
        ...); seen at its next login or refresh, no restart."""
        accounts = self._accounts()
        accounts[sub] = dict(claims)
        self._write_accounts(accounts)

    def remove_account(self, sub: str) -> None:
        """The person is gone: their next login and refresh fail."""
        accounts = self._accounts()
        accounts.pop(sub, None)
        self._write_accounts(accounts)

    def _accounts(self) -> dict[str, Any]:
        if not self.accounts_file.exists():
            return {}
        accounts: dict[str, Any] = json.loads(self.accounts_file.read_text())
        return accounts

    def _write_accounts(self, accounts: dict[str, Any]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        partial = self.accounts_file.with_suffix(".tmp")
        partial.write_text(json.dumps(accounts))
        os.replace(partial, self.accounts_file)

    def rotate_keys(
        self, *, keep_old: bool = True, algs: Iterable[str] = ("RS256", "ES256")
    ) -> list[Key]:
        """New keys for `algs` go first (they sign from now on); the old stay published when
        `keep_old`, else they are retired. Restarts the provider when it runs. Returns the
        new keys."""
        new = [generate_key(alg) for alg in algs]
        self.keys = new + (self.keys if keep_old else [])
        if self.running:
            self.restart()
        return new

    def signing_key(self, alg: str = "RS256") -> Key:
        """The private key the provider signs `alg` tokens with now (the first of its type)."""
        kty = _kty_of(alg)
        return next(key for key in self.keys if key.key_type == kty)

    def public_jwks(self) -> dict[str, Any]:
        return {"keys": [key.as_dict(private=False) for key in self.keys]}

    # -- what the provider saw ----------------------------------------------------------------

    def requests(self, path: str | None = None) -> list[LoggedRequest]:
        if not self.request_log.exists():
            return []
        logged = [
            LoggedRequest(**json.loads(line))
            for line in self.request_log.read_text().splitlines()
            if line
        ]
        return [request for request in logged if path is None or request.path == path]

    def jwks_fetches(self) -> int:
        return len(self.requests("/jwks"))

    # -- the protocol, from a test ------------------------------------------------------------

    def url(self, path: str) -> str:
        return f"{self.issuer}{path}"

    async def client_credentials_token(self, client: ClientCredentials | None = None) -> str:
        """An at+jwt access token for the API, to the integration client (or `client`)."""
        client = client or self.integration
        async with httpx.AsyncClient() as http:
            response = await http.post(
                self.url("/token"),
                auth=client.basic_auth,
                data={
                    "grant_type": "client_credentials",
                    "resource": self.api_audience,
                    "scope": self.api_scope,
                },
            )
        response.raise_for_status()
        token: str = response.json()["access_token"]
        return token

    async def login_with_http(
        self, http: httpx.AsyncClient, start_url: str, subject: str
    ) -> httpx.Response:
        """Logs `subject` in without a browser: GETs `start_url` (the relying party's login
        route, or a provider authorization URL), follows redirects, submits the provider's
        login form, and returns the relying party's answer at its redirect_uri (the first
        redirect away from the provider). `http` keeps the cookies of both sides (it must not
        follow redirects itself)."""
        location = await self._authorize(http, start_url, subject)
        return await http.get(location)

    def authorization_request(
        self,
        redirect_uri: str = TOKEN_ONLY_REDIRECT_URI,
        *,
        scope: str = "openid profile email groups",
        **extra: str,
    ) -> AuthorizationRequest:
        """An authorization request of the console client with PKCE S256, state and nonce,
        for the API's resource (`extra`: prompt, max_age, login_hint, ...)."""
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        params = {
            "client_id": self.console.client_id,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "scope": scope,
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": self.api_audience,
            **extra,
        }
        url = self.url(f"/auth?{urlencode(params)}")
        return AuthorizationRequest(url, redirect_uri, state, nonce, verifier)

    async def exchange_code(self, request: AuthorizationRequest, callback_url: str) -> Tokens:
        """The token endpoint's answer for the code in `callback_url` (the provider's redirect
        back), checked against `request`'s state."""
        query = parse_qs(urlsplit(callback_url).query)
        if query.get("state") != [request.state] or "code" not in query:
            raise AssertionError(f"the provider redirected to {callback_url}")
        async with httpx.AsyncClient() as http:
            response = await http.post(
                self.url("/token"),
                auth=self.console.basic_auth,
                data={
                    "grant_type": "authorization_code",
                    "code": query["code"][0],
                    "redirect_uri": request.redirect_uri,
                    "code_verifier": request.code_verifier,
                },
            )
        response.raise_for_status()
        return Tokens.of(response.json())

    async def code_flow_tokens(self, subject: str, **extra: str) -> Tokens:
        """Tokens for `subject` from the console client's authorization code flow with PKCE,
        as a relying party gets them (for tests that need tokens, not a Casework session)."""
        request = self.authorization_request(**extra)
        async with httpx.AsyncClient() as http:
            location = await self._authorize(http, request.url, subject)
        return await self.exchange_code(request, location)

    async def refresh(self, refresh_token: str) -> Tokens:
        async with httpx.AsyncClient() as http:
            response = await http.post(
                self.url("/token"),
                auth=self.console.basic_auth,
                data={"grant_type": "refresh_token", "refresh_token": refresh_token},
            )
        response.raise_for_status()
        return Tokens.of(response.json())

    async def send_backchannel_logout(
        self, sub: str, sid: str, client: ClientCredentials | None = None
    ) -> httpx.Response:
        """Has the provider send the console client (or `client`) a back-channel logout token
        for `sub`/`sid`, built and signed by the provider's own code. Returns the provider's
        answer: 204 when the client accepted it, 502 (with the reason) when it did not."""
        client = client or self.console
        async with httpx.AsyncClient() as http:
            return await http.post(
                self.url("/test/backchannel-logout"),
                json={"client_id": client.client_id, "sub": sub, "sid": sid},
                timeout=30,
            )

    async def logout_with_http(self, http: httpx.AsyncClient, start_url: str) -> httpx.Response:
        """RP-initiated logout without a browser: GETs `start_url` (the relying party's logout
        route, or the provider's end-session URL), follows redirects, confirms the provider's
        "sign out?" page, and returns the answer at the first URL away from the provider (the
        post-logout redirect), or the provider's own success page."""
        response = await http.get(start_url)
        for _ in range(20):
            if self._on_provider(str(response.url)) and "op.logoutForm" in response.text:
                xsrf = re.search(r'name="xsrf" value="([^"]+)"', response.text)
                assert xsrf, response.text
                response = await http.post(
                    self.url("/session/end/confirm"), data={"xsrf": xsrf[1], "logout": "yes"}
                )
                continue
            if not response.is_redirect:
                return response
            location = urljoin(str(response.url), response.headers["location"])
            response = await http.get(location)
            if not self._on_provider(location):
                return response
        raise AssertionError("the logout went round in circles")

    def _on_provider(self, url: str) -> bool:
        return url.startswith(f"{self.issuer}/")

    async def _authorize(self, http: httpx.AsyncClient, start_url: str, subject: str) -> str:
        """Drives the provider until it redirects away; returns that redirect's URL."""
        response = await http.get(start_url)
        for _ in range(20):
            url = str(response.url)
            if response.is_redirect:
                location = urljoin(url, response.headers["location"])
                if self._on_provider(url) and not self._on_provider(location):
                    return location
                response = await http.get(location)
            elif self._on_provider(url) and "/interaction/" in url:
                prompt = "login" if 'value="login"' in response.text else "consent"
                response = await http.post(
                    url, data={"prompt": prompt, "login": subject, "password": "any"}
                )
            else:
                raise AssertionError(
                    f"the login stopped at {url}: {response.status_code} {response.text[:500]}"
                )
        raise AssertionError("the login went round in circles")

    # -- forging ------------------------------------------------------------------------------

    def decode_unverified(self, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(header, claims) of a compact JWT, unverified: for tests that rebuild a token."""
        header, payload, _ = token.split(".")
        return _b64json(header), _b64json(payload)


def _b64json(part: str) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded
