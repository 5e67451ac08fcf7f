"""Casework signing people in through the test provider (tests/identity/oidc.py): the rule
file, the settings, and the app served in-process by uvicorn on a real port (the provider's
browser redirects and a real websocket client need one). Not a test module."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import uvicorn

from server.app import create_app
from server.config import AuthMode, AuthSettings, Settings
from tests.api.live_server import free_port
from tests.conftest import TestDatabase
from tests.identity.oidc import API_AUDIENCE, OidcProvider

PROVIDER_NAME = "Example SSO"
STARTUP_SECONDS = 30.0

RULES = """
[[rule]]
name = "kyc reviewers"
claim = "groups"
contains = "kyc-reviewers"
role = "reviewer"
queues = ["kyc*"]

[[rule]]
name = "approvers"
claim = "groups"
contains = "approvers"
role = "approver"

[[rule]]
name = "admins"
claim = "groups"
contains = "admins"
role = "admin"
"""

# People of the provider: a reviewer who also approves, an admin, and one no rule knows.
KIM = (
    "kim",
    {"name": "Kim Reviewer", "preferred_username": "kim", "groups": ["kyc-reviewers", "approvers"]},
)
ADA = ("ada-sso", {"name": "Ada Admin", "preferred_username": "ada-sso", "groups": ["admins"]})
NOBODY = ("nora", {"name": "Nora Newcomer", "preferred_username": "nora", "groups": ["marketing"]})


def add_people(provider: OidcProvider) -> None:
    for sub, claims in (KIM, ADA, NOBODY):
        provider.set_account(sub, claims)


def sso_settings(
    provider: OidcProvider, rules_file: Path, *, modes: str = "oidc,token", **auth: Any
) -> Settings:
    """Settings.from_env with sign-in by `provider` (and tokens), checked every request
    (no credential cache) unless `token_cache_seconds` is in `auth`."""
    cache = auth.pop("token_cache_seconds", 0.0)
    auth_settings = AuthSettings(
        modes=frozenset(AuthMode(mode) for mode in modes.split(",")),
        rules_file=rules_file,
        oidc_issuer=provider.issuer,
        oidc_client_id=provider.console.client_id,
        oidc_client_secret=provider.console.client_secret,
        oidc_audience=API_AUDIENCE,
        oidc_provider_name=PROVIDER_NAME,
        oidc_scopes="openid profile email groups",
        **auth,
    )
    return dataclasses.replace(Settings.from_env(), auth=auth_settings, token_cache_seconds=cache)


def write_rules(directory: Path, text: str = RULES) -> Path:
    path = directory / "rules.toml"
    path.write_text(text)
    return path


@dataclass(frozen=True)
class Served:
    url: str
    settings: Settings


@asynccontextmanager
async def serve_sso(
    test_database: TestDatabase, provider: OidcProvider, settings: Settings, *, dev: bool = True
) -> AsyncIterator[Served]:
    """create_app on 127.0.0.1:<free port>, registered with the provider as its console
    client's redirect and post-logout URIs (which restarts the provider, same issuer)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    provider.configure_console(
        redirect_uris=[f"{url}/auth/callback"],
        post_logout_redirect_uris=[f"{url}/console/"],
    )
    app = create_app(test_database.app_dsn, dev=dev, settings=settings)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(STARTUP_SECONDS):
            while not server.started:
                if task.done():
                    task.result()
                    raise RuntimeError("uvicorn stopped before it started")
                await asyncio.sleep(0.02)
        yield Served(url, settings)
    finally:
        server.should_exit = True
        await task


def set_cookie(response: httpx.Response, name: str) -> dict[str, str] | None:
    """The attributes of the Set-Cookie header for `name` (its value under "value"), or None."""
    for header in response.headers.get_list("set-cookie"):
        parsed: SimpleCookie = SimpleCookie()
        parsed.load(header)
        if name in parsed:
            morsel = parsed[name]
            attributes = {key: str(value) for key, value in morsel.items() if value}
            flags = {flag.strip().lower() for flag in header.split(";")[1:]}
            attributes["value"] = morsel.value
            attributes["httponly"] = str("httponly" in flags)
            attributes["secure"] = str("secure" in flags)
            return attributes
    return None


ME = """
query { me { user role activeRole displayName queues
             grants { role queues rules }
             authentication { kind issuer subject authTime acr } } }
"""


async def cookie_call(
    http: httpx.AsyncClient,
    query: str,
    *,
    role: str | None = None,
    csrf: bool = True,
    origin: str | None = None,
    **variables: Any,
) -> httpx.Response:
    """POST /graphql as the console does: the cookie jar's session, the CSRF header."""
    headers = {"X-Casework-CSRF": "1"} if csrf else {}
    if role is not None:
        headers["X-Casework-Role"] = role
    if origin is not None:
        headers["Origin"] = origin
    return await http.post(
        "/graphql", json={"query": query, "variables": variables}, headers=headers
    )


async def session_rows(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Every session, oldest first, with its person."""
    rows = await conn.fetch(
        "SELECT s.id, s.ended_at, s.end_reason, s.id_token, s.idle_seconds,"
        " s.expires_at - s.created_at AS lifetime, p.user_name, p.subject"
        " FROM sessions s JOIN principals p ON p.id = s.principal_id ORDER BY s.id"
    )
    return [dict(row) for row in rows]
