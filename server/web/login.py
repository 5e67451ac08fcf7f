"""OpenID Connect login for the console, run by the server (authorization code + PKCE S256,
state and nonce, through Authlib's Starlette client).

    GET  /auth/options   what the sign-in page offers: {"modes", "provider", "login"}
    GET  /auth/login     ?next=/console/...&prompt=login&max_age=N&acr_values=X: to the provider
    GET  /auth/callback  the provider's answer: the session cookie and back to `next`
    POST /auth/logout    ends the session; answers {"location": the provider's end-session
                         URL} for the console to follow (RP-initiated logout)

The login state (state, nonce, PKCE verifier, `next`) lives for ten minutes in a signed
cookie scoped to /auth (Starlette's SessionMiddleware). Grants are computed from the ID
token's claims at every login, and again with the refresh token while the session lasts
(server/domain/identity/refresh.py): a group removed at the provider is gone within
CASEWORK_SESSION_REFRESH_SECONDS.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from authlib.integrations.starlette_client import OAuth, OAuthError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from server.config import Settings
from server.domain.identity.people import display_name_of, person_seen
from server.domain.identity.rules import RuleSet
from server.domain.identity.sessions import LoginFacts, SessionEnd, end_session, start_session
from server.store.database import Database
from server.web import cookies
from server.web.pages import no_access_page, sign_in_failed_page

log = logging.getLogger("casework.auth")

LOGIN_STATE_COOKIE = "casework-login"
LOGIN_STATE_SECONDS = 600
CONSOLE_HOME = "/console/"
CLIENT_NAME = "casework"
NEXT_LIMIT = 2000
MAX_AGE_LIMIT = 86_400 * 366


def safe_next(raw: str | None) -> str:
    """Where to go after login: a path of this site's console, nothing else (no scheme, no
    host, no `//` or `\\` a browser would take for another site, no control characters)."""
    if not raw or len(raw) > NEXT_LIMIT:
        return CONSOLE_HOME
    if any(ord(char) < 0x21 or char == "\\" for char in raw):
        return CONSOLE_HOME
    parts = urlsplit(raw)
    if parts.scheme or parts.netloc or not raw.startswith("/console"):
        return CONSOLE_HOME
    if raw.startswith("//") or "/../" in parts.path or parts.path.endswith("/.."):
        return CONSOLE_HOME
    return raw


ACR_LIMIT = 255


def _max_age(raw: str | None) -> int | None:
    if raw is None or not raw.isdigit():
        return None
    return min(int(raw), MAX_AGE_LIMIT)


def _acr(raw: str | None) -> str | None:
    """An `acr` value as a queue names one (`requireAcr`): printable, short, else ignored."""
    if raw is None or not 0 < len(raw) <= ACR_LIMIT or not raw.isprintable():
        return None
    return raw


def _moment(value: object) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    return None


class Login:
    """The /auth routes of one process."""

    def __init__(
        self,
        settings: Settings,
        *,
        dev: bool,
        db: Callable[[], Database],
        rules: RuleSet | None,
        forget_session: Callable[[str], None] = lambda secret: None,
    ) -> None:
        """db: the running pool (read per request); rules: the claim-mapping rules, loaded
        once at startup (None without oidc); forget_session: drops an ended session from
        this process's credential cache."""
        self.settings = settings
        self.auth = settings.auth
        self.dev = dev
        self._db = db
        self._rules = rules
        self._forget_session = forget_session
        self._oauth = OAuth()
        if self.auth.oidc:
            self._oauth.register(
                CLIENT_NAME,
                client_id=self.auth.oidc_client_id,
                client_secret=self.auth.oidc_client_secret,
                server_metadata_url=f"{self.auth.oidc_issuer}/.well-known/openid-configuration",
                client_kwargs={"scope": self.auth.oidc_scopes, "code_challenge_method": "S256"},
            )

    @property
    def client(self) -> Any:
        return self._oauth.create_client(CLIENT_NAME)

    def routes(self) -> list[BaseRoute]:
        secret = self.auth.session_secret or secrets.token_urlsafe(32)
        app = Starlette(
            routes=[
                Route("/options", self.options, methods=["GET"]),
                Route("/login", self.login, methods=["GET"]),
                Route("/callback", self.callback, methods=["GET"]),
                Route("/logout", self.logout, methods=["POST"]),
            ],
            middleware=[
                Middleware(
                    SessionMiddleware,
                    secret_key=secret,
                    session_cookie=LOGIN_STATE_COOKIE,
                    max_age=LOGIN_STATE_SECONDS,
                    path="/auth",
                    same_site="lax",
                    https_only=not self.dev,
                )
            ],
        )
        return [Mount("/auth", app=app)]

    def _origin(self, request: Request) -> str:
        if self.auth.public_url:
            return cookies.origin_of(self.auth.public_url)
        return f"{request.url.scheme}://{request.url.netloc}"

    async def options(self, request: Request) -> JSONResponse:
        modes = sorted(mode.value for mode in self.auth.modes)
        return JSONResponse(
            {"modes": modes, "provider": self.auth.oidc_provider_name, "login": "/auth/login"},
            headers={"cache-control": "no-store"},
        )

    async def login(self, request: Request) -> Response:
        if not self.auth.oidc:
            return sign_in_failed_page(
                request,
                reason="This Casework does not sign in with an identity provider.",
                status_code=404,
            )
        query = request.query_params
        extra: dict[str, Any] = {}
        if query.get("prompt") == "login":
            extra["prompt"] = "login"
        max_age = _max_age(query.get("max_age"))
        if max_age is not None:
            extra["max_age"] = max_age
        acr = _acr(query.get("acr_values"))
        if acr is not None:
            # A queue that asks for an authentication context: the provider is asked for it.
            extra["acr_values"] = acr
        redirect_uri = f"{self._origin(request)}/auth/callback"
        response: Response = await self.client.authorize_redirect(request, redirect_uri, **extra)
        request.session["next"] = safe_next(query.get("next"))
        return response

    async def callback(self, request: Request) -> Response:
        if not self.auth.oidc or self._rules is None:
            return sign_in_failed_page(
                request, reason="Sign-in is not configured.", status_code=404
            )
        try:
            token = await self.client.authorize_access_token(request)
        except OAuthError as error:
            log.info("sign-in refused: %s: %s", error.error, error.description)
            return sign_in_failed_page(
                request,
                reason=f"The identity provider's answer was not accepted ({error.error}). "
                "Start again from the sign-in page.",
            )
        next_path = safe_next(request.session.pop("next", None))
        request.session.clear()
        claims: dict[str, Any] = dict(token.get("userinfo") or {})
        issuer = str(self.auth.oidc_issuer)
        explanation = self._rules.explain(claims)
        if not explanation.grants:
            who = display_name_of(claims) or str(claims.get("sub"))
            log.info("sign-in: no rule grants %s %s anything", issuer, claims.get("sub"))
            return no_access_page(
                request,
                who=who,
                subject=str(claims.get("sub")),
                provider=self.auth.oidc_provider_name,
                reason=explanation.refusal or "no sign-in rule grants you a role",
            )
        db = self._db()
        person = await person_seen(db, issuer, claims)
        facts = LoginFacts(
            provider_sid=_text(claims.get("sid")),
            id_token=_text(token.get("id_token")),
            refresh_token=_text(token.get("refresh_token")),
            auth_time=_moment(claims.get("auth_time")),
            acr=_text(claims.get("acr")),
        )
        started = await start_session(db, person, explanation.grants, facts, self.auth)
        log.info("sign-in: %s began session %d", person.user_name, started.id)
        response = RedirectResponse(next_path, status_code=303)
        cookies.set_session_cookie(
            response, request, started.secret, self.auth.session_max_seconds, dev=self.dev
        )
        return response

    async def logout(self, request: Request) -> Response:
        """Ends the session and clears the cookie; the console then follows `location`, the
        provider's end-session URL (or the console's sign-in page without a provider)."""
        refusal = cookies.cookie_post_refusal(request, self.settings)
        if refusal is not None:
            return JSONResponse({"error": refusal}, status_code=403)
        home = f"{self._origin(request)}{CONSOLE_HOME}"
        location = home
        secret = cookies.session_of(request, dev=self.dev)
        if secret is not None:
            ended = await end_session(self._db(), secret, SessionEnd.LOGOUT)
            # This process refuses it at once; every other one within
            # CASEWORK_TOKEN_CACHE_SECONDS, as a revoked token.
            self._forget_session(secret)
            if ended is not None and self.auth.oidc:
                location = await self._end_session_url(home, ended.id_token)
        response = JSONResponse({"location": location}, headers={"cache-control": "no-store"})
        cookies.clear_session_cookie(response, request, dev=self.dev)
        return response

    async def _end_session_url(self, home: str, id_token: str | None) -> str:
        """The provider's end-session URL (RP-initiated logout), or `home` when the provider
        has none (the Casework session has ended either way)."""
        try:
            logout = await self.client.create_logout_url(
                post_logout_redirect_uri=home,
                id_token_hint=id_token,
                state=secrets.token_urlsafe(16),
            )
        except RuntimeError as error:
            log.info("logout: the provider has no end-session endpoint: %s", error)
            return home
        return str(logout["url"])


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
