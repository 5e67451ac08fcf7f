"""A socket is only as good as its token: real server, real websockets, real PostgreSQL.

- After a revocation, an operation sent over an old socket is refused (an `error` coded
  UNAUTHENTICATED, then a 4403 close) and writes nothing.
- An idle socket of a revoked token is closed with 4403 without any event on it; the socket
  of an expiring token is closed at the token's expiry.
- connection_init takes the token the ways real clients send it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from server.domain.identity.tokens import create_token, revoke_tokens
from server.domain.model import Role
from server.store.database import Database
from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.conftest import TestDatabase
from tests.live.helpers import create_live_tokens, serve_casework, serve_kyc, subscriptions_started
from tests.live.wsclient import graphql_socket, refusal

# The socket's watch checks at least once a second with no token cache; the close follows.
CLOSED_WITHIN_SECONDS = 5.0
# Expiry is compared with the server's clock, and the close travels over a socket.
EXPIRY_TOLERANCE_SECONDS = 1.5


async def test_after_a_revocation_an_old_socket_can_neither_claim_nor_decide(
    test_database: TestDatabase, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    async with serve_kyc(test_database, owner_db, CASEWORK_TOKEN_CACHE_SECONDS="0") as (
        casework,
        tokens,
    ):
        api = casework.api
        await api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}, "cust-2": {"n": 2}})

        async with graphql_socket(casework.url, tokens.rob) as socket:
            # The socket works before the revocation: a claim over it succeeds.
            claimed = await socket.subscribe(CLAIM, queue="kyc")
            claim = (await socket.next(claimed))["claimNext"]
            assert claim["__typename"] == "Claim", claim
            assert (await socket.message(claimed))["type"] == "complete"

            # What `casework token revoke --user rob` does.
            assert await revoke_tokens(owner_db, "rob") == 1
            decided = await socket.subscribe(
                DECIDE, input=decision_input(claim, "APPROVE", "documents_ok")
            )
            [error] = await socket.error(decided)
            assert error["extensions"]["code"] == "UNAUTHENTICATED", error
            closed = await socket.wait_closed()
            assert (closed.code, closed.reason) == (4403, "token revoked or expired")

        # Nothing was written under the revoked token.
        assert await owner_conn.fetchval("SELECT count(*) FROM review_decisions") == 0
        item = await owner_conn.fetchrow(
            "SELECT state, lease_owner FROM review_items WHERE id = $1", int(claim["item"]["id"])
        )
        assert item is not None
        assert (item["state"], item["lease_owner"]) == ("pending", "rob"), item

        # The token no longer opens a socket; another reviewer's still does.
        refused = await refusal(casework.url, {"authorization": f"Bearer {tokens.rob}"})
        assert (refused.code, refused.reason) == (4403, "Forbidden")
        async with graphql_socket(casework.url, tokens.rita) as socket:
            await subscriptions_started(socket, "kyc")
    casework.assert_no_traceback()


async def test_a_claim_sent_over_a_revoked_socket_writes_nothing(
    test_database: TestDatabase, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    async with serve_kyc(test_database, owner_db, CASEWORK_TOKEN_CACHE_SECONDS="0") as (
        casework,
        tokens,
    ):
        await casework.api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}})
        async with graphql_socket(casework.url, tokens.rob) as socket:
            assert await revoke_tokens(owner_db, "rob") == 1
            claimed = await socket.subscribe(CLAIM, queue="kyc")
            # The operation's own check refuses it; on a slow machine the socket's token
            # watch (one lookup a second at a cache of 0) may close the socket first. Either
            # way the claim never runs and the close says why.
            answer = await socket.message(claimed)
            assert answer["type"] in ("error", "closed"), answer
            if answer["type"] == "error":
                [error] = answer["payload"]
                assert error["extensions"]["code"] == "UNAUTHENTICATED", error
            closed = await socket.wait_closed()
            assert closed.code == 4403
        leases = await owner_conn.fetchval(
            "SELECT count(*) FROM review_items WHERE lease_owner IS NOT NULL"
        )
        assert leases == 0
    casework.assert_no_traceback()


async def test_an_idle_socket_of_a_revoked_token_is_closed(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with (
        serve_kyc(test_database, owner_db, CASEWORK_TOKEN_CACHE_SECONDS="0") as (
            casework,
            tokens,
        ),
        graphql_socket(casework.url, tokens.rob) as socket,
    ):
        # A subscription that nothing will wake: no write happens in the queue.
        await subscriptions_started(socket, "kyc")
        assert await revoke_tokens(owner_db, "rob") == 1
        closed = await socket.wait_closed(CLOSED_WITHIN_SECONDS)
        assert (closed.code, closed.reason) == (4403, "token revoked or expired")
    casework.assert_no_traceback()


async def test_the_socket_of_an_expiring_token_is_closed_at_its_expiry(
    test_database: TestDatabase, owner_db: Database
) -> None:
    tokens = await create_live_tokens(owner_db)
    # The default cache window: the close comes from the expiry, not from a lookup.
    async with serve_casework(test_database) as casework:
        await casework.api.configure_queue(tokens.admin, "kyc")
        expires_at = datetime.now(UTC) + timedelta(seconds=3)
        expiring = await create_token(
            owner_db, user="eve", role=Role.REVIEWER, queues=["kyc"], expires_at=expires_at
        )
        async with graphql_socket(casework.url, expiring) as socket:
            await subscriptions_started(socket, "kyc")
            closed = await socket.wait_closed(10)
            at = time.time()
            assert (closed.code, closed.reason) == (4403, "token revoked or expired")
        assert at >= expires_at.timestamp() - EXPIRY_TOLERANCE_SECONDS, at
        assert at <= expires_at.timestamp() + EXPIRY_TOLERANCE_SECONDS, at
    casework.assert_no_traceback()


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(lambda token: {"authorization": f"Bearer {token}"}, id="authorization"),
        pytest.param(lambda token: {"Authorization": f"Bearer {token}"}, id="graphiql"),
        pytest.param(lambda token: {"AUTHORIZATION": f"Bearer {token}"}, id="upper-case"),
        pytest.param(lambda token: {"headers": {"Authorization": f"Bearer {token}"}}, id="headers"),
        pytest.param(
            lambda token: {"Headers": {"authorization": f"Bearer {token}"}}, id="headers-any-case"
        ),
    ],
)
async def test_connection_init_accepts_the_token_as_clients_send_it(
    test_database: TestDatabase, owner_db: Database, payload: Callable[[str], dict[str, Any]]
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        async with graphql_socket(casework.url, None, init_payload=payload(tokens.rita)) as socket:
            snapshot = await subscriptions_started(socket, "kyc")
            assert snapshot["queue"] == "kyc"
        # The forms carry the token; they do not make a wrong one right.
        refused = await refusal(casework.url, payload("cw_nope"))
        assert (refused.code, refused.reason) == (4403, "Forbidden")
    casework.assert_no_traceback()
