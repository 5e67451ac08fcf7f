"""The console's session cookie, and what a request carrying it must also show.

- Name `__Host-casework-session`: `Secure`, `Path=/`, no `Domain`, so only this origin over
  https can set or read it. In `--dev`, for plain http on 127.0.0.1 or localhost only, the
  cookie is `casework-session` without `Secure` (a browser refuses the `__Host-` prefix
  without it).
- `HttpOnly` (no script reads it), `SameSite=Lax` (a cross-site POST does not carry it),
  `Max-Age` the session's absolute lifetime.
- A cookie-authenticated POST must carry `X-Casework-CSRF: 1` (a header no form and no
  simple cross-site request can set) and, when it names an Origin, this service's own or one
  of CASEWORK_ALLOWED_ORIGINS. A websocket authenticated by the cookie must come from this
  service's own origin: websockets have no CORS, and an allowed origin's pages use tokens.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection
from starlette.responses import Response

from server.config import Settings
from server.domain.identity.principals import Credentials

SESSION_COOKIE = "__Host-casework-session"
DEV_SESSION_COOKIE = "casework-session"
CSRF_HEADER = "x-casework-csrf"
ROLE_HEADER = "x-casework-role"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
PLAIN_SCHEMES = frozenset({"http", "ws"})


def relaxed(connection: HTTPConnection, *, dev: bool) -> bool:
    """Whether this connection gets the dev cookie: --dev, plain http, a loopback host."""
    url = connection.url
    return dev and url.scheme in PLAIN_SCHEMES and (url.hostname or "") in LOOPBACK_HOSTS


def cookie_name(connection: HTTPConnection, *, dev: bool) -> str:
    return DEV_SESSION_COOKIE if relaxed(connection, dev=dev) else SESSION_COOKIE


def session_of(connection: HTTPConnection, *, dev: bool) -> str | None:
    """The session cookie's value, by the name this connection may use (a `casework-session`
    cookie is ignored outside the dev loopback case: any subdomain could have set it)."""
    return connection.cookies.get(cookie_name(connection, dev=dev)) or None


def set_session_cookie(
    response: Response, connection: HTTPConnection, secret: str, max_age: int, *, dev: bool
) -> None:
    dev_cookie = relaxed(connection, dev=dev)
    response.set_cookie(
        DEV_SESSION_COOKIE if dev_cookie else SESSION_COOKIE,
        secret,
        max_age=max_age,
        path="/",
        secure=not dev_cookie,
        httponly=True,
        samesite="lax",
    )


def clear_session_cookie(response: Response, connection: HTTPConnection, *, dev: bool) -> None:
    dev_cookie = relaxed(connection, dev=dev)
    response.delete_cookie(
        DEV_SESSION_COOKIE if dev_cookie else SESSION_COOKIE,
        path="/",
        secure=not dev_cookie,
        httponly=True,
        samesite="lax",
    )


def own_origins(connection: HTTPConnection, settings: Settings) -> frozenset[str]:
    """This service's origin: CASEWORK_PUBLIC_URL's, and the one the request was sent to."""
    url = connection.url
    scheme = {"ws": "http", "wss": "https"}.get(url.scheme, url.scheme)
    origins = {f"{scheme}://{url.netloc}"}
    if settings.auth.public_url:
        origins.add(origin_of(settings.auth.public_url))
    return frozenset(origins)


def origin_of(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme.lower()}://{rest.split('/', 1)[0].lower()}"


def cookie_post_refusal(connection: HTTPConnection, settings: Settings) -> str | None:
    """Why a cookie-authenticated POST is refused before anything runs, or None."""
    if connection.headers.get(CSRF_HEADER) != "1":
        return (
            "a request authenticated by the session cookie must carry the header X-Casework-CSRF: 1"
        )
    origin = connection.headers.get("origin")
    if origin is not None and origin not in own_origins(connection, settings).union(
        settings.allowed_origins
    ):
        return f"a request authenticated by the session cookie may not come from {origin}"
    return None


def cookie_socket_refusal(connection: HTTPConnection, settings: Settings) -> str | None:
    """Why a websocket may not authenticate by the session cookie, or None."""
    origin = connection.headers.get("origin")
    if origin is None or origin not in own_origins(connection, settings):
        return "a live connection authenticated by the session cookie must come from this site"
    return None


class CookieRefused(Exception):
    """A cookie-authenticated request without the CSRF header or from a foreign origin."""


def http_credentials(request: HTTPConnection, settings: Settings, *, dev: bool) -> Credentials:
    """What a /graphql request presents: its bearer token if it has one (the cookie is then
    ignored), else the session cookie when sign-in by provider is on; and the role header.
    Raises CookieRefused for a POST the cookie may not authenticate."""
    role = request.headers.get(ROLE_HEADER)
    credentials = Credentials.of(request.headers.get("authorization"), role=role)
    if credentials.bearer is not None or not settings.auth.oidc:
        return credentials
    session = session_of(request, dev=dev)
    if session is None:
        return credentials
    if request.scope.get("method") == "POST":
        refusal = cookie_post_refusal(request, settings)
        if refusal is not None:
            raise CookieRefused(refusal)
    return Credentials.of(None, session=session, role=role)


def socket_credentials(
    socket: HTTPConnection,
    authorization: str | None,
    role: str | None,
    settings: Settings,
    *,
    dev: bool,
) -> Credentials:
    """What a websocket presents in connection_init (a token, a role), else the session
    cookie of its upgrade request. Raises CookieRefused for a cookie from another origin."""
    credentials = Credentials.of(authorization, role=role)
    if credentials.bearer is not None or not settings.auth.oidc:
        return credentials
    session = session_of(socket, dev=dev)
    if session is None:
        return credentials
    refusal = cookie_socket_refusal(socket, settings)
    if refusal is not None:
        raise CookieRefused(refusal)
    return Credentials.of(None, session=session, role=role)
