"""The console's sign-in through a real OpenID provider, over HTTP: the session cookie and
its attributes, `me` and the role header, where a login may return to, the no-access page,
logout at Casework and at the provider, idle and absolute expiry, and CSRF."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import httpx
import pytest
import websockets

from tests.conftest import TestDatabase
from tests.identity.oidc import OidcProvider
from tests.identity.sso import (
    ADA,
    KIM,
    ME,
    NOBODY,
    PROVIDER_NAME,
    Served,
    add_people,
    cookie_call,
    serve_sso,
    session_rows,
    set_cookie,
    sso_settings,
    write_rules,
)

DEV_COOKIE = "casework-session"
MAX_SECONDS = 7200


@pytest.fixture
async def served(
    test_database: TestDatabase, oidc_provider: OidcProvider, tmp_path: Path
) -> AsyncIterator[Served]:
    add_people(oidc_provider)
    settings = sso_settings(
        oidc_provider,
        write_rules(tmp_path),
        session_max_seconds=MAX_SECONDS,
        session_idle_seconds=3600,
    )
    async with serve_sso(test_database, oidc_provider, settings) as casework:
        yield casework


async def signed_in(
    http: httpx.AsyncClient, provider: OidcProvider, served: Served, sub: str, next_: str = ""
) -> httpx.Response:
    query = f"?next={next_}" if next_ else ""
    return await provider.login_with_http(http, f"{served.url}/auth/login{query}", sub)


async def test_login_sets_the_session_cookie_and_me_answers_the_grants(
    served: Served, oidc_provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        landed = await signed_in(http, oidc_provider, served, KIM[0], "/console/%23/queue/kyc")

        assert landed.status_code == 303
        assert landed.headers["location"] == "/console/#/queue/kyc"
        cookie = set_cookie(landed, DEV_COOKIE)
        assert cookie is not None
        assert cookie["value"].startswith("cws_")
        assert cookie["httponly"] == "True"
        assert cookie["samesite"].lower() == "lax"
        assert cookie["path"] == "/"
        assert cookie["max-age"] == str(MAX_SECONDS)
        assert "domain" not in cookie
        # --dev on plain http at 127.0.0.1: the one case without Secure (and so without the
        # __Host- prefix, which requires it).
        assert cookie["secure"] == "False"
        # The browser holds the cookie and nothing else of the login: no token in any header.
        assert set(landed.headers.get_list("set-cookie")).isdisjoint(
            row["id_token"] for row in await session_rows(owner_conn)
        )

        me = (await cookie_call(http, ME)).json()["data"]["me"]
        approver = (await cookie_call(http, ME, role="approver")).json()["data"]["me"]
        refused = await cookie_call(http, ME, role="admin")

    assert me["user"] == "kim"
    assert me["displayName"] == "Kim Reviewer"
    assert me["grants"] == [
        {"role": "reviewer", "queues": ["kyc*"], "rules": ["kyc reviewers"]},
        {"role": "approver", "queues": [], "rules": ["approvers"]},
    ]
    assert (me["role"], me["activeRole"]) == ("reviewer", "reviewer")
    assert me["authentication"]["kind"] == "SESSION"
    assert me["authentication"]["issuer"] == oidc_provider.issuer
    assert me["authentication"]["subject"] == "kim"
    # auth_time only when the provider gives it (asked for with max_age: test_console_sso).
    assert "authTime" in me["authentication"]
    assert (approver["role"], approver["activeRole"]) == ("approver", "approver")
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert "admin" in refused.json()["errors"][0]["message"]
    [row] = await session_rows(owner_conn)
    assert (row["user_name"], row["subject"], row["ended_at"]) == ("kim", "kim", None)
    assert row["lifetime"].total_seconds() == MAX_SECONDS


@pytest.mark.parametrize(
    "asked",
    [
        "https://evil.example/console/",
        "//evil.example/console/",
        "/\\evil.example/console",
        "/%5Cevil.example",
        "http:/console",
        "/graphql",
        "/console/../auth/logout",
    ],
)
async def test_a_login_returns_only_to_a_console_path_of_this_site(
    served: Served, oidc_provider: OidcProvider, asked: str
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        landed = await provider_login_with_next(http, oidc_provider, served, asked)

    assert landed.status_code == 303
    assert landed.headers["location"] == "/console/"


async def provider_login_with_next(
    http: httpx.AsyncClient, provider: OidcProvider, served: Served, asked: str
) -> httpx.Response:
    url = httpx.URL(f"{served.url}/auth/login", params={"next": asked})
    return await provider.login_with_http(http, str(url), KIM[0])


async def test_an_identity_no_rule_grants_gets_the_no_access_page(
    served: Served, oidc_provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        landed = await signed_in(http, oidc_provider, served, NOBODY[0])
        me = await cookie_call(http, ME)

    assert landed.status_code == 403
    assert landed.headers["content-type"].startswith("text/html")
    page = landed.text
    assert "No access to Casework" in page
    assert f"signed in at {PROVIDER_NAME} as <strong>Nora Newcomer</strong>" in page
    assert "administrator must grant you a role" in page
    assert set_cookie(landed, DEV_COOKIE) is None
    assert me.status_code == 401
    assert await session_rows(owner_conn) == []


async def test_logout_ends_the_session_and_sends_the_browser_to_the_providers_logout(
    served: Served, oidc_provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        await signed_in(http, oidc_provider, served, KIM[0])
        [before] = await session_rows(owner_conn)
        forged = await http.post("/auth/logout")
        still = await session_rows(owner_conn)
        out = await http.post("/auth/logout", headers={"X-Casework-CSRF": "1"})
        location = out.json()["location"]
        cleared = set_cookie(out, DEV_COOKIE)
        me = await cookie_call(http, ME)
        back = await oidc_provider.logout_with_http(http, location)

    assert forged.status_code == 403
    assert still == [before]
    assert out.status_code == 200
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == oidc_provider.url("/session/end")
    query = parse_qs(parts.query)
    assert query["id_token_hint"] == [before["id_token"]]
    assert query["post_logout_redirect_uri"] == [f"{served.url}/console/"]
    assert len(query["state"][0]) >= 16
    assert cleared is not None
    assert cleared["max-age"] == "0"
    [after] = await session_rows(owner_conn)
    assert after["ended_at"] is not None
    assert after["end_reason"] == "logout"
    assert me.status_code == 401
    assert str(back.url.copy_with(query=None)) == f"{served.url}/console/"
    assert back.url.params["state"] == query["state"][0]
    assert back.status_code == 200


CONFIGURE = "mutation($name: String!) { configureQueue(input: {name: $name}) { __typename } }"


async def queue_exists(conn: asyncpg.Connection, name: str) -> bool:
    return bool(await conn.fetchval("SELECT count(*) FROM queues WHERE name = $1", name))


async def test_a_cross_site_post_with_the_cookie_changes_nothing(
    served: Served, oidc_provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        await signed_in(http, oidc_provider, served, ADA[0])
        # A form or a simple cross-site request: the cookie rides, no custom header can.
        bare = await cookie_call(http, CONFIGURE, csrf=False, name="csrf-bare")
        # A script on another origin that set the header anyway (CORS would block it; a
        # sibling site's page might not be blocked): its Origin is refused.
        foreign = await cookie_call(
            http, CONFIGURE, origin="https://evil.example", name="csrf-foreign"
        )
        own = await cookie_call(http, CONFIGURE, origin=served.url, name="csrf-own")

    for refused in (bare, foreign):
        assert refused.status_code == 403
        assert refused.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        assert "data" not in refused.json()
    assert "X-Casework-CSRF" in bare.json()["errors"][0]["message"]
    assert "evil.example" in foreign.json()["errors"][0]["message"]
    assert not await queue_exists(owner_conn, "csrf-bare")
    assert not await queue_exists(owner_conn, "csrf-foreign")
    # The same request from the console's own page goes through: the refusals were CSRF's.
    assert own.json()["data"]["configureQueue"]["__typename"] == "QueueConfigured"
    assert await queue_exists(owner_conn, "csrf-own")


async def test_a_bearer_token_outranks_the_cookie(
    served: Served, oidc_provider: OidcProvider
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        await signed_in(http, oidc_provider, served, ADA[0])
        # An unknown bearer token beside a good cookie: the token is what counts.
        response = await http.post(
            "/graphql",
            json={"query": ME},
            headers={"Authorization": "Bearer cw_not-a-token", "X-Casework-CSRF": "1"},
        )

    assert response.status_code == 401


@pytest.fixture
async def short_lived(
    test_database: TestDatabase, oidc_provider: OidcProvider, tmp_path: Path
) -> AsyncIterator[Served]:
    """Sessions idle out after IDLE_SECONDS (the settings' floor of 60 s is for operators)."""
    add_people(oidc_provider)
    settings = sso_settings(oidc_provider, write_rules(tmp_path), session_idle_seconds=IDLE_SECONDS)
    async with serve_sso(test_database, oidc_provider, settings) as casework:
        yield casework


IDLE_SECONDS = 2


async def idle_deadline_passed(conn: asyncpg.Connection) -> None:
    """Waits, on the database's clock, until every session's idle deadline has passed: at
    most IDLE_SECONDS, since the test's last request (the deadline is what it waits for,
    read from the rows, not a guess)."""
    await conn.execute(
        "SELECT pg_sleep(coalesce(max(extract(epoch FROM"
        " last_seen_at + make_interval(secs => idle_seconds) - now())), 0) + 0.05)"
        " FROM sessions WHERE ended_at IS NULL"
    )
    assert await conn.fetchval(
        "SELECT bool_and(now() > last_seen_at + make_interval(secs => idle_seconds)) FROM sessions"
    )


async def test_an_idle_session_stops_working(
    short_lived: Served, oidc_provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    async with httpx.AsyncClient(base_url=short_lived.url) as http:
        await signed_in(http, oidc_provider, short_lived, KIM[0])
        [row] = await session_rows(owner_conn)
        await idle_deadline_passed(owner_conn)
        after = await cookie_call(http, ME)

    assert row["idle_seconds"] == IDLE_SECONDS
    assert after.status_code == 401
    assert after.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_session_past_its_absolute_end_stops_working(
    served: Served, oidc_provider: OidcProvider, owner_conn: asyncpg.Connection
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        await signed_in(http, oidc_provider, served, KIM[0])
        before = await cookie_call(http, ME)
        # The database's clock decides: its end moved to now, as if MAX_SECONDS had passed
        # (test_login_sets_the_session_cookie... checks that the end is login + MAX_SECONDS).
        await owner_conn.execute("UPDATE sessions SET expires_at = now()")
        after = await cookie_call(http, ME)

    assert before.status_code == 200
    assert after.status_code == 401


def ws_url(served: Served) -> str:
    return served.url.replace("http://", "ws://") + "/graphql"


async def socket_answer(
    served: Served, cookie: str, origin: str, init: dict[str, Any]
) -> dict[str, Any]:
    """connection_init with `init` over a socket carrying the cookie, then `me` as a
    query: what came back ({"closed": code} when the server closed the socket)."""
    async with websockets.connect(
        ws_url(served),
        subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
        origin=websockets.Origin(origin),
        additional_headers={"Cookie": f"{DEV_COOKIE}={cookie}"},
    ) as socket:
        await socket.send(json.dumps({"type": "connection_init", "payload": init}))
        try:
            ack = json.loads(await asyncio.wait_for(socket.recv(), 10))
            assert ack["type"] == "connection_ack", ack
            query = "{ me { user activeRole authentication { kind } } }"
            await socket.send(
                json.dumps({"type": "subscribe", "id": "1", "payload": {"query": query}})
            )
            answer: dict[str, Any] = json.loads(await asyncio.wait_for(socket.recv(), 10))
            return answer
        except websockets.ConnectionClosed as closed:
            return {"closed": closed.rcvd.code if closed.rcvd else None}


async def session_cookie(http: httpx.AsyncClient) -> str:
    value = http.cookies.get(DEV_COOKIE)
    assert value is not None
    return value


async def test_the_websocket_authenticates_by_the_cookie_from_this_site_only(
    served: Served, oidc_provider: OidcProvider
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        await signed_in(http, oidc_provider, served, KIM[0])
        cookie = await session_cookie(http)

    own = await socket_answer(served, cookie, served.url, {})
    as_approver = await socket_answer(served, cookie, served.url, {"role": "approver"})
    not_held = await socket_answer(served, cookie, served.url, {"role": "admin"})
    with pytest.raises(websockets.InvalidStatus) as foreign:
        await socket_answer(served, cookie, "https://evil.example", {})

    assert own["payload"]["data"]["me"] == {
        "user": "kim",
        "activeRole": "reviewer",
        "authentication": {"kind": "SESSION"},
    }
    assert as_approver["payload"]["data"]["me"]["activeRole"] == "approver"
    assert not_held == {"closed": 4403}
    assert foreign.value.response.status_code == 403


async def test_a_listed_origin_still_cannot_use_the_cookie_on_a_websocket(
    test_database: TestDatabase, oidc_provider: OidcProvider, tmp_path: Path
) -> None:
    """CASEWORK_ALLOWED_ORIGINS lets another site's pages open sockets with their tokens;
    the session cookie is this site's console's alone."""
    add_people(oidc_provider)
    settings = dataclasses.replace(
        sso_settings(oidc_provider, write_rules(tmp_path)),
        allowed_origins=("https://partner.example",),
    )
    async with serve_sso(test_database, oidc_provider, settings) as listed:
        async with httpx.AsyncClient(base_url=listed.url) as http:
            await signed_in(http, oidc_provider, listed, KIM[0])
            cookie = await session_cookie(http)
        partner = await socket_answer(listed, cookie, "https://partner.example", {})
        own = await socket_answer(listed, cookie, listed.url, {})

    assert partner == {"closed": 4403}
    assert own["payload"]["data"]["me"]["user"] == "kim"


async def test_a_fresh_login_asks_the_provider_for_its_age_and_context(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        asked = await http.get(
            "/auth/login",
            params={"prompt": "login", "max_age": "300", "acr_values": "mfa", "next": "/console/"},
        )
        plain = await http.get("/auth/login", params={"acr_values": "bad\nvalue"})

    assert asked.status_code == 302
    sent = httpx.URL(asked.headers["location"]).params
    assert (sent["prompt"], sent["max_age"], sent["acr_values"]) == ("login", "300", "mfa")
    assert sent["code_challenge_method"] == "S256"
    assert "acr_values" not in httpx.URL(plain.headers["location"]).params


async def test_a_logged_out_cookie_is_refused_at_once_by_the_process_that_ended_it(
    test_database: TestDatabase, oidc_provider: OidcProvider, tmp_path: Path
) -> None:
    """With a long credential cache: a copy of the cookie, replayed right after the logout,
    no longer works on the process that ended it (others take up to the cache window)."""
    add_people(oidc_provider)
    settings = sso_settings(oidc_provider, write_rules(tmp_path), token_cache_seconds=300.0)
    async with serve_sso(test_database, oidc_provider, settings) as casework:
        async with httpx.AsyncClient(base_url=casework.url) as http:
            await signed_in(http, oidc_provider, casework, KIM[0])
            cookie = await session_cookie(http)
            before = await cookie_call(http, ME)
            out = await http.post("/auth/logout", headers={"X-Casework-CSRF": "1"})
        async with httpx.AsyncClient(base_url=casework.url, cookies={DEV_COOKIE: cookie}) as replay:
            after = await cookie_call(replay, ME)

    assert before.status_code == 200
    assert out.status_code == 200
    assert after.status_code == 401
