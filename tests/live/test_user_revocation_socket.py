"""Revoking a person closes their open sockets within the credential cache's window, on a
served Casework (real websockets, real PostgreSQL). Today's sockets authenticate by CLI
token; the revocation revokes it, as for every credential of the person."""

from __future__ import annotations

import time

from server.domain.identity.revocation import RevocationSource, UserRevoked, revoke_user
from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import serve_kyc, subscriptions_started
from tests.live.wsclient import graphql_socket

CACHE_SECONDS = 2.0
# The socket's watch re-resolves within the cache window; the close travels over a socket.
SLACK_SECONDS = 3.0


async def test_a_revoked_persons_idle_socket_closes_within_the_cache_window(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with (
        serve_kyc(test_database, owner_db, CASEWORK_TOKEN_CACHE_SECONDS=str(CACHE_SECONDS)) as (
            casework,
            tokens,
        ),
        graphql_socket(casework.url, tokens.rob) as socket,
    ):
        await subscriptions_started(socket, "kyc")
        started = time.monotonic()
        revoked = await revoke_user(
            owner_db, "rob", source=RevocationSource.CLI, revoked_by="cli:ops", reason="left"
        )
        assert isinstance(revoked, UserRevoked)
        assert revoked.tokens_revoked == 1
        closed = await socket.wait_closed(CACHE_SECONDS + SLACK_SECONDS)
        assert (closed.code, closed.reason) == (4403, "token revoked or expired")
        assert time.monotonic() - started <= CACHE_SECONDS + SLACK_SECONDS
    casework.assert_no_traceback()
