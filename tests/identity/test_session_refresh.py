"""Grants follow the provider: a session's grants are recomputed from the ID token of a
refresh-token grant against the real provider (tests/identity/oidc.py). A round is run by
calling the routine with the session made due (its grants_at moved back), never by waiting
for the loop; one test checks the loop itself starts and stops with the app."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import websockets

from server.domain.identity.provider_tokens import provider_verifier
from server.domain.identity.refresh import SessionRefresh
from server.domain.identity.rules import RuleSet
from server.domain.identity.sessions import SessionEnd
from server.store.database import Database
from tests.api.conftest import in_process_client
from tests.conftest import TestDatabase
from tests.identity.oidc import OidcProvider
from tests.identity.sso import (
    ADA,
    KIM,
    ME,
    Served,
    add_people,
    cookie_call,
    serve_sso,
    sso_settings,
    write_rules,
)

DEV_COOKIE = "casework-session"
REFRESH_TASK = "casework-session-refresh"


async def served_with(
    test_database: TestDatabase, provider: OidcProvider, tmp_path: Path
) -> AsyncIterator[Served]:
    add_people(provider)
    settings = sso_settings(provider, write_rules(tmp_path))
    async with serve_sso(test_database, provider, settings) as casework:
        yield casework


@pytest.fixture
async def served(
    test_database: TestDatabase, oidc_provider: OidcProvider, tmp_path: Path
) -> AsyncIterator[Served]:
    async for casework in served_with(test_database, oidc_provider, tmp_path):
        yield casework


@pytest.fixture
async def served_by_fresh(
    test_database: TestDatabase, fresh_oidc_provider: OidcProvider, tmp_path: Path
) -> AsyncIterator[Served]:
    async for casework in served_with(test_database, fresh_oidc_provider, tmp_path):
        yield casework


async def signed_in(
    http: httpx.AsyncClient, provider: OidcProvider, served: Served, sub: str
) -> str:
    """Logs `sub` in through the provider; the session cookie's value."""
    landed = await provider.login_with_http(http, f"{served.url}/auth/login", sub)
    assert landed.status_code == 303, landed.text
    cookie = http.cookies.get(DEV_COOKIE)
    assert cookie is not None
    return cookie


@asynccontextmanager
async def refresh_of(served: Served, db: Database) -> AsyncIterator[SessionRefresh]:
    """The routine as one process of `served` runs it (its own keys and HTTP client)."""
    auth = served.settings.auth
    assert auth.rules_file is not None
    verifier = provider_verifier(auth)
    refresh = SessionRefresh(db, auth, RuleSet.load(auth.rules_file), verifier)
    try:
        yield refresh
    finally:
        await refresh.aclose()
        await verifier.aclose()


async def make_due(conn: asyncpg.Connection) -> None:
    """Every session's grants as old as if the refresh interval had passed."""
    await conn.execute("UPDATE sessions SET grants_at = grants_at - interval '1 day'")


async def sessions(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT id, grants, grants_at, refresh_token, refresh_claimed_at, ended_at, end_reason"
        " FROM sessions ORDER BY id"
    )
    return [dict(row) for row in rows]


async def test_a_group_removed_at_the_provider_is_gone_after_a_refresh(
    served: Served, oidc_provider: OidcProvider, db: Database, owner_conn: asyncpg.Connection
) -> None:
    sub, claims = KIM
    async with httpx.AsyncClient(base_url=served.url) as http:
        await signed_in(http, oidc_provider, served, sub)
        before = (await cookie_call(http, ME)).json()["data"]["me"]
        oidc_provider.set_account(sub, {**claims, "groups": ["kyc-reviewers"]})
        await make_due(owner_conn)
        [due] = await sessions(owner_conn)
        async with refresh_of(served, db) as refresh:
            report = await refresh.run_once()
            again = await refresh.run_once()
        after = (await cookie_call(http, ME)).json()["data"]["me"]
        as_approver = await cookie_call(http, ME, role="approver")

    [row] = await sessions(owner_conn)
    assert [grant["role"] for grant in before["grants"]] == ["reviewer", "approver"]
    assert (report.refreshed, report.ended, report.postponed) == (1, 0, 0)
    # Refreshed once: the second round found nothing due.
    assert (again.refreshed, again.postponed) == (0, 0)
    assert row["grants"] == [{"role": "reviewer", "queues": ["kyc*"], "rules": ["kyc reviewers"]}]
    assert row["grants_at"] > due["grants_at"]
    assert row["refresh_claimed_at"] is None
    assert row["ended_at"] is None
    assert row["refresh_token"] is not None
    assert after["grants"] == [{"role": "reviewer", "queues": ["kyc*"], "rules": ["kyc reviewers"]}]
    assert as_approver.status_code == 403


@pytest.mark.parametrize(
    ("change", "reason"),
    [("removed", SessionEnd.PROVIDER_REFUSED), ("no-groups", SessionEnd.NO_ROLE)],
)
async def test_a_session_ends_when_the_provider_or_the_rules_no_longer_vouch(
    served: Served,
    oidc_provider: OidcProvider,
    db: Database,
    owner_conn: asyncpg.Connection,
    change: str,
    reason: SessionEnd,
) -> None:
    sub, claims = KIM
    async with httpx.AsyncClient(base_url=served.url) as http:
        await signed_in(http, oidc_provider, served, sub)
        if change == "removed":
            oidc_provider.remove_account(sub)
        else:
            oidc_provider.set_account(sub, {**claims, "groups": ["marketing"]})
        await make_due(owner_conn)
        async with refresh_of(served, db) as refresh:
            report = await refresh.run_once()
        after = await cookie_call(http, ME)

    [row] = await sessions(owner_conn)
    assert (report.refreshed, report.ended) == (0, 1)
    assert row["ended_at"] is not None
    assert row["end_reason"] == reason.value
    assert after.status_code == 401


async def test_racing_rounds_refresh_each_session_once(
    served: Served, oidc_provider: OidcProvider, db: Database, owner_conn: asyncpg.Connection
) -> None:
    for sub, _ in (KIM, KIM, ADA, ADA):
        async with httpx.AsyncClient(base_url=served.url) as http:
            await signed_in(http, oidc_provider, served, sub)
    await make_due(owner_conn)
    tokens_before = len(oidc_provider.requests("/token"))
    # Two processes' rounds at once, against the same database and provider.
    async with refresh_of(served, db) as first, refresh_of(served, db) as second:
        reports = await asyncio.gather(first.run_once(), second.run_once())

    rows = await sessions(owner_conn)
    assert len(rows) == 4
    assert sum(report.refreshed for report in reports) == 4
    assert sum(report.lost + report.postponed + report.ended for report in reports) == 0
    assert len(oidc_provider.requests("/token")) - tokens_before == 4
    assert all(row["ended_at"] is None and row["refresh_claimed_at"] is None for row in rows)


async def test_an_unreachable_provider_changes_nothing(
    served_by_fresh: Served,
    fresh_oidc_provider: OidcProvider,
    db: Database,
    owner_conn: asyncpg.Connection,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sub, claims = KIM
    async with httpx.AsyncClient(base_url=served_by_fresh.url) as http:
        await signed_in(http, fresh_oidc_provider, served_by_fresh, sub)
        await signed_in(http, fresh_oidc_provider, served_by_fresh, ADA[0])
    fresh_oidc_provider.set_account(sub, {**claims, "groups": ["kyc-reviewers"]})
    await make_due(owner_conn)
    due = await sessions(owner_conn)
    fresh_oidc_provider.stop()
    with caplog.at_level(logging.WARNING, logger="casework.identity"):
        async with refresh_of(served_by_fresh, db) as refresh:
            report = await refresh.run_once()

    assert (report.refreshed, report.ended, report.postponed) == (0, 0, 2)
    assert await sessions(owner_conn) == due
    warnings = [r for r in caplog.records if r.name == "casework.identity"]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "next round" in warnings[0].getMessage()


async def test_a_socket_acting_under_a_role_no_longer_granted_is_closed(
    served: Served, oidc_provider: OidcProvider, db: Database, owner_conn: asyncpg.Connection
) -> None:
    sub, claims = KIM
    async with httpx.AsyncClient(base_url=served.url) as http:
        cookie = await signed_in(http, oidc_provider, served, sub)
    async with websockets.connect(
        served.url.replace("http://", "ws://") + "/graphql",
        subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
        origin=websockets.Origin(served.url),
        additional_headers={"Cookie": f"{DEV_COOKIE}={cookie}"},
    ) as socket:
        await socket.send(json.dumps({"type": "connection_init", "payload": {"role": "approver"}}))
        ack = json.loads(await asyncio.wait_for(socket.recv(), 10))
        oidc_provider.set_account(sub, {**claims, "groups": ["kyc-reviewers"]})
        await make_due(owner_conn)
        async with refresh_of(served, db) as refresh:
            report = await refresh.run_once()
        # The socket's token watch (every second without a credential cache) closes it.
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 15)

    assert ack["type"] == "connection_ack"
    assert report.refreshed == 1
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403


def refresh_tasks() -> list[asyncio.Task[Any]]:
    return [task for task in asyncio.all_tasks() if task.get_name() == REFRESH_TASK]


async def test_the_refresh_loop_starts_and_stops_with_the_app(
    test_database: TestDatabase, oidc_provider: OidcProvider, tmp_path: Path
) -> None:
    settings = sso_settings(oidc_provider, write_rules(tmp_path))
    async with in_process_client(test_database, dev=True, settings=settings) as client:
        running = refresh_tasks()
        assert (await client.get("/livez")).status_code == 200
    async with in_process_client(test_database, dev=True) as client:
        without_oidc = refresh_tasks()

    [task] = running
    assert task.done()
    assert not task.cancelled()
    assert task.exception() is None
    assert without_oidc == []
