"""The session cookie's name and attributes by where the request came, and where a login
may send the browser back to."""

from __future__ import annotations

from http.cookies import SimpleCookie

import pytest
from starlette.requests import Request
from starlette.responses import Response

from server.web.cookies import set_session_cookie
from server.web.login import CONSOLE_HOME, safe_next


def request(scheme: str, host: str) -> Request:
    return Request(
        {
            "type": "http",
            "scheme": scheme,
            "server": (host, 443 if scheme == "https" else 80),
            "path": "/auth/callback",
            "headers": [(b"host", host.encode())],
        }
    )


@pytest.mark.parametrize(
    ("scheme", "host", "dev", "name", "secure"),
    [
        ("https", "casework.example.com", False, "__Host-casework-session", True),
        ("https", "casework.example.com", True, "__Host-casework-session", True),
        # Plain http on a loopback host, in --dev only: no Secure, so no __Host- prefix.
        ("http", "127.0.0.1", True, "casework-session", False),
        ("http", "localhost", True, "casework-session", False),
        ("http", "127.0.0.1", False, "__Host-casework-session", True),
        ("http", "casework.internal", True, "__Host-casework-session", True),
    ],
)
def test_the_cookie_is_host_only_secure_httponly_and_lax(
    scheme: str, host: str, dev: bool, name: str, secure: bool
) -> None:
    response = Response()
    set_session_cookie(response, request(scheme, host), "cws_secret", 3600, dev=dev)
    [header] = response.headers.getlist("set-cookie")
    cookie: SimpleCookie = SimpleCookie()
    cookie.load(header)
    morsel = cookie[name]
    flags = {part.strip().lower() for part in header.split(";")[1:]}

    assert morsel.value == "cws_secret"
    assert morsel["path"] == "/"
    assert morsel["domain"] == ""
    assert morsel["max-age"] == "3600"
    assert morsel["samesite"].lower() == "lax"
    assert "httponly" in flags
    assert ("secure" in flags) is secure


@pytest.mark.parametrize(
    ("asked", "sent_to"),
    [
        ("/console/#/item/42", "/console/#/item/42"),
        ("/console/", "/console/"),
        ("/console", "/console"),
        (None, CONSOLE_HOME),
        ("", CONSOLE_HOME),
        ("https://evil.example/console/", CONSOLE_HOME),
        ("//evil.example/console/", CONSOLE_HOME),
        ("/\\\\evil.example/console", CONSOLE_HOME),
        ("/console\\\\@evil.example", CONSOLE_HOME),
        ("javascript:alert(1)", CONSOLE_HOME),
        ("/graphql", CONSOLE_HOME),
        ("/console/../auth/logout", CONSOLE_HOME),
        ("/console/\n/x", CONSOLE_HOME),
        ("/console/ x", CONSOLE_HOME),
        ("/console/" + "a" * 3000, CONSOLE_HOME),
    ],
)
def test_a_login_returns_to_console_paths_only(asked: str | None, sent_to: str) -> None:
    assert safe_next(asked) == sent_to
