"""Back-channel logout against the real provider: it signs a logout token with its own
code and POSTs it to a served Casework route; the person's session ends, their lease is
released with a timeline row saying why, and the same token again is refused."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import asyncpg
import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.domain.identity.access_tokens import AccessTokenVerifier
from server.domain.identity.sessions import live_session
from server.domain.review.leases import claim_next
from server.store.database import Database
from server.web.backchannel import PATH, BackchannelLogout, backchannel_routes
from tests.identity.oidc import OidcProvider
from tests.integration.helpers import enqueue_one
from tests.integration.identity_helpers import signed_in

ALICE = {"preferred_username": "alice", "name": "Alice", "groups": ["kyc-reviewers"]}


@asynccontextmanager
async def served_backchannel(
    db: Database, provider: OidcProvider, bodies: list[bytes]
) -> AsyncIterator[str]:
    """Casework's back-channel route on a free port (as create_app mounts it), recording
    each body it is sent; yields its URL."""
    verifier = AccessTokenVerifier(provider.issuer, provider.api_audience)
    handler = BackchannelLogout(lambda: db, lambda: verifier, provider.console.client_id)
    [route] = backchannel_routes(handler)
    assert isinstance(route, Route)
    endpoint: Callable[[Request], Awaitable[Response]] = route.endpoint

    async def recording(request: Request) -> Response:
        bodies.append(await request.body())
        return await endpoint(request)

    # Bound and listening before uvicorn runs: the kernel queues a connection that comes
    # first, so nothing waits for the server to start.
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    app = Starlette(routes=[Route(PATH, recording, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        yield f"http://127.0.0.1:{port}{PATH}"
    finally:
        server.should_exit = True
        await task
        await verifier.aclose()
        listening.close()


async def test_the_providers_logout_ends_the_session_releases_the_lease_and_a_replay_fails(
    fresh_oidc_provider: OidcProvider,
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
) -> None:
    provider = fresh_oidc_provider
    provider.set_account("alice", ALICE)
    bodies: list[bytes] = []
    async with served_backchannel(db, provider, bodies) as url:
        provider.configure_console(backchannel_logout_uri=url)
        id_token = (await provider.code_flow_tokens("alice")).id_token
        assert id_token is not None
        sid = provider.decode_unverified(id_token)[1]["sid"]
        alice, _, session = await signed_in(db, "alice", issuer=provider.issuer, provider_sid=sid)
        await enqueue_one(db, kyc_queue, "cust-1")
        held = await claim_next(db, alice, kyc_queue)
        assert hasattr(held, "lease_token"), held

        sent = await provider.send_backchannel_logout("alice", sid)

        assert sent.status_code == 204, sent.text
        assert await live_session(db, session.secret) is None
        lease = await owner_conn.fetchrow(
            "SELECT lease_owner FROM review_items WHERE id = $1",
            held.item.id,  # type: ignore[union-attr]
        )
        assert lease is not None
        assert lease["lease_owner"] is None
        why = await owner_conn.fetchval(
            "SELECT body FROM item_events WHERE kind = 'revoked' AND item_id = $1",
            held.item.id,  # type: ignore[union-attr]
        )
        assert why == f"access revoked: backchannel: provider session {sid}"
        source = await owner_conn.fetchval("SELECT source FROM principal_revocations")
        assert source == "backchannel"

        [body] = bodies
        async with httpx.AsyncClient() as http:
            replayed = await http.post(
                url, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
            )
            forged = await http.post(url, data={"logout_token": "not.a.jwt"})
    assert replayed.status_code == 400
    assert replayed.headers["cache-control"] == "no-store"
    assert replayed.json()["error_description"] == "this logout token was used already"
    assert forged.status_code == 400
    assert forged.json()["error"] == "invalid_request"
    assert await owner_conn.fetchval("SELECT count(*) FROM principal_revocations") == 1
