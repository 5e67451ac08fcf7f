"""Consoles on other origins: CASEWORK_ALLOWED_ORIGINS drives CORS for /graphql and the
websocket Origin check; with it unset, only the service's own origin gets in.

Real requests to a real `casework serve`: a browser's preflight (OPTIONS with
Access-Control-Request-*), and websocket handshakes sending an Origin header as a browser does.
"""

from __future__ import annotations

import os

import httpx

from server.domain.model import Role
from server.store.database import Database
from tests.api.live_server import casework_serve_process
from tests.conftest import TestDatabase, token_maker
from tests.live.wsclient import graphql_socket, handshake_status

CONSOLE = "https://console.example.com"
ELSEWHERE = "https://evil.example.net"


def env_for(test_database: TestDatabase, **settings: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if "DATABASE_URL" not in key}
    env.pop("CASEWORK_ALLOWED_ORIGINS", None)
    return {**env, "DATABASE_URL": test_database.owner_dsn, **settings}


def preflight(origin: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }


ME = {"query": "{ me { user } }"}
BACKLOG = 'subscription { queueBacklog(queue: "kyc") { pending } }'


async def test_a_listed_origin_gets_cors_and_websockets_and_others_do_not(
    test_database: TestDatabase, owner_db: Database
) -> None:
    token = await token_maker(owner_db)("max", Role.MANAGER)
    env = env_for(test_database, CASEWORK_ALLOWED_ORIGINS=f"{CONSOLE}, https://other.example")

    async with (
        casework_serve_process(env, "--no-worker") as served,
        httpx.AsyncClient(base_url=served.url) as client,
    ):
        allowed = await client.options("/graphql", headers=preflight(CONSOLE))
        refused = await client.options("/graphql", headers=preflight(ELSEWHERE))
        answered = await client.post(
            "/graphql",
            json=ME,
            headers={"Origin": CONSOLE, "Authorization": f"Bearer {token}"},
        )
        unauthenticated = await client.post("/graphql", json=ME, headers={"Origin": CONSOLE})
        async with graphql_socket(served.url, token, origin=CONSOLE) as socket:
            operation = await socket.subscribe(BACKLOG)
            first = await socket.message(operation)
        refused_socket = await handshake_status(served.url, origin=ELSEWHERE)

    assert allowed.status_code == 200, allowed.text
    assert allowed.headers["access-control-allow-origin"] == CONSOLE
    assert "POST" in allowed.headers["access-control-allow-methods"]
    allowed_headers = allowed.headers["access-control-allow-headers"].lower()
    assert {"authorization", "content-type"} <= {h.strip() for h in allowed_headers.split(",")}
    assert "access-control-allow-credentials" not in allowed.headers
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    assert answered.json() == {"data": {"me": {"user": "max"}}}
    assert answered.headers["access-control-allow-origin"] == CONSOLE
    # A refusal a console must be able to read carries the header too.
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["access-control-allow-origin"] == CONSOLE
    assert "www-authenticate" in unauthenticated.headers["access-control-expose-headers"].lower()
    assert first["type"] in ("next", "error"), first
    assert refused_socket == 403


async def test_by_default_only_the_service_own_origin_gets_in(
    test_database: TestDatabase, owner_db: Database
) -> None:
    token = await token_maker(owner_db)("max", Role.MANAGER)

    async with (
        casework_serve_process(env_for(test_database), "--no-worker") as served,
        httpx.AsyncClient(base_url=served.url) as client,
    ):
        cross = await client.options("/graphql", headers=preflight(CONSOLE))
        same = await client.post(
            "/graphql",
            json=ME,
            headers={"Origin": served.url, "Authorization": f"Bearer {token}"},
        )
        refused_socket = await handshake_status(served.url, origin=CONSOLE)
        # The page the service serves itself (GraphiQL in --dev) opens its socket.
        async with graphql_socket(served.url, token, origin=served.url):
            pass
        # A client that is not a browser sends no Origin; its token is its credential.
        async with graphql_socket(served.url, token):
            pass

    assert cross.status_code == 400
    assert "access-control-allow-origin" not in cross.headers
    assert same.json() == {"data": {"me": {"user": "max"}}}
    assert "access-control-allow-origin" not in same.headers
    assert refused_socket == 403
