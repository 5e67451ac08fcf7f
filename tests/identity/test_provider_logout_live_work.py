"""The provider's back-channel logout reaching live work, end to end: a person signed in
through the real provider, holding a lease and watching a queue over a cookie socket, is
logged out at the provider; Casework's own route ends their session, releases the lease with
a timeline row, and the socket closes within the credential cache's window."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import asyncpg
import httpx
import websockets

from server.domain.review.queues import QueueSettings, configure_queue
from server.store.database import Database
from tests.conftest import ADMIN, TestDatabase
from tests.identity.oidc import OidcProvider
from tests.identity.sso import KIM, add_people, cookie_call, serve_sso, sso_settings, write_rules
from tests.integration.helpers import enqueue_one

CACHE_SECONDS = 1.0
# The window plus room for a loaded machine: the socket re-checks its credentials on a
# timer of about the cache window, so a close later than this is a failure.
CLOSE_WITHIN_SECONDS = CACHE_SECONDS + 10.0
DEV_COOKIE = "casework-session"

CLAIM = """
mutation($queue: String!) {
  claimNext(queue: $queue) { __typename ... on Claim { leaseToken item { id } } }
}
"""
BACKLOG = 'subscription { queueBacklog(queue: "kyc") { pending leased } }'


async def test_a_logout_at_the_provider_ends_the_session_the_lease_and_the_socket(
    test_database: TestDatabase,
    fresh_oidc_provider: OidcProvider,
    db: Database,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    provider = fresh_oidc_provider
    add_people(provider)
    for queue in ("kyc-senior", "kyc"):
        assert not hasattr(await configure_queue(db, ADMIN, QueueSettings(queue)), "message")
    await enqueue_one(db, "kyc", "cust-1")
    settings = sso_settings(provider, write_rules(tmp_path), token_cache_seconds=CACHE_SECONDS)
    async with serve_sso(test_database, provider, settings) as served:
        provider.configure_console(
            redirect_uris=[f"{served.url}/auth/callback"],
            post_logout_redirect_uris=[f"{served.url}/console/"],
            backchannel_logout_uri=f"{served.url}/auth/backchannel-logout",
        )
        async with httpx.AsyncClient(base_url=served.url) as http:
            await provider.login_with_http(http, f"{served.url}/auth/login", KIM[0])
            cookie = http.cookies.get(DEV_COOKIE)
            assert cookie is not None
            claimed = (await cookie_call(http, CLAIM, queue="kyc")).json()["data"]["claimNext"]
            assert claimed["__typename"] == "Claim", claimed
        item_id = int(claimed["item"]["id"])
        sid = await owner_conn.fetchval("SELECT provider_sid FROM sessions")
        assert sid

        async with websockets.connect(
            served.url.replace("http://", "ws://") + "/graphql",
            subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
            origin=websockets.Origin(served.url),
            additional_headers={"Cookie": f"{DEV_COOKIE}={cookie}"},
        ) as socket:
            await socket.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] == (
                "connection_ack"
            )
            await socket.send(
                json.dumps({"type": "subscribe", "id": "1", "payload": {"query": BACKLOG}})
            )
            first = json.loads(await asyncio.wait_for(socket.recv(), 10))
            assert first["payload"]["data"]["queueBacklog"]["leased"] == 1, first

            sent = await provider.send_backchannel_logout(KIM[0], sid)
            assert sent.status_code == 204, sent.text

            # Until the server closes it: hints about the released lease may come first.
            close_code = None
            async with asyncio.timeout(CLOSE_WITHIN_SECONDS):
                try:
                    while True:
                        await socket.recv()
                except websockets.ConnectionClosed as closed:
                    close_code = closed.rcvd.code if closed.rcvd else None
            assert close_code == 4403

    session = await owner_conn.fetchrow("SELECT ended_at, end_reason FROM sessions")
    assert session is not None
    assert session["ended_at"] is not None
    item = await owner_conn.fetchrow("SELECT lease_owner FROM review_items WHERE id = $1", item_id)
    assert item is not None
    assert item["lease_owner"] is None
    why = await owner_conn.fetchval(
        "SELECT body FROM item_events WHERE kind = 'revoked' AND item_id = $1", item_id
    )
    assert why is not None
    assert why.startswith("access revoked: backchannel")
