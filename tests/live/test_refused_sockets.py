"""Who may open a socket, what it may subscribe to, and how many subscriptions it holds."""

from __future__ import annotations

from server.app import MAX_SUBSCRIPTIONS_PER_CONNECTION
from server.domain.identity.tokens import revoke_tokens
from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import (
    ITEM_UPDATES,
    LEASE_EVENTS,
    QUEUE_BACKLOG,
    create_live_tokens,
    lease_events_started,
    serve_casework,
    serve_kyc,
    subscriptions_started,
)
from tests.live.wsclient import graphql_socket, refusal


async def test_no_token_a_bad_token_and_the_legacy_protocol_are_refused(
    test_database: TestDatabase, owner_db: Database
) -> None:
    tokens = await create_live_tokens(owner_db)
    async with serve_casework(test_database) as casework:
        for payload in ({}, {"authorization": "Bearer not-a-token"}, {"authorization": ""}):
            refused = await refusal(casework.url, payload)
            assert (refused.code, refused.reason) == (4403, "Forbidden"), payload

        legacy = await refusal(
            casework.url, {"authorization": f"Bearer {tokens.rita}"}, subprotocol="graphql-ws"
        )
        assert (legacy.code, legacy.reason) == (4406, "Subprotocol not acceptable")

        # The same token on the protocol that is enabled is accepted.
        async with graphql_socket(casework.url, tokens.rita) as socket:
            await subscriptions_started(socket, "kyc")
    casework.assert_no_traceback()


async def test_a_queue_the_token_does_not_cover_is_refused_per_subscription(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        [item] = await casework.api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}})

        async with graphql_socket(casework.url, tokens.olga) as socket:
            for query, variables, expected in (
                (LEASE_EVENTS, {"queue": "kyc"}, "your token does not cover queue 'kyc'"),
                (QUEUE_BACKLOG, {"queue": "kyc"}, "your token does not cover queue 'kyc'"),
                (
                    ITEM_UPDATES,
                    {"itemId": item["id"]},
                    f"no item {item['id']} that your token covers",
                ),
            ):
                operation = await socket.subscribe(query, **variables)
                refused = await socket.message(operation)
                assert refused["type"] == "next", refused
                assert refused["payload"]["data"] is None, refused
                [error] = refused["payload"]["errors"]
                assert error["message"].startswith(expected), error
                assert (await socket.message(operation))["type"] == "complete"
            # The socket itself stays open for what the token does cover.
            await subscriptions_started(socket, "payouts")
    casework.assert_no_traceback()


async def test_subscriptions_per_connection_are_limited(
    test_database: TestDatabase, owner_db: Database
) -> None:
    tokens = await create_live_tokens(owner_db)
    async with (
        serve_casework(test_database) as casework,
        graphql_socket(casework.url, tokens.rita) as socket,
    ):
        running = []
        for _ in range(MAX_SUBSCRIPTIONS_PER_CONNECTION):
            operation = await socket.subscribe(QUEUE_BACKLOG, queue="kyc")
            await socket.next(operation)
            running.append(operation)

        one_too_many = await socket.subscribe(QUEUE_BACKLOG, queue="kyc")
        refused = await socket.message(one_too_many)
        assert refused["type"] == "error", refused
        assert refused["payload"][0]["message"] == "Subscription limit reached"

        # The limit counts what runs: end one, and there is room for one more.
        await socket.complete(running.pop())
        await subscriptions_started(socket, "kyc")
    casework.assert_no_traceback()


async def test_a_revoked_token_closes_the_socket_at_the_next_event(
    test_database: TestDatabase, owner_db: Database
) -> None:
    tokens = await create_live_tokens(owner_db)
    # No token cache on this process: the next event re-reads the token.
    async with serve_casework(test_database, CASEWORK_TOKEN_CACHE_SECONDS="0") as casework:
        api = casework.api
        await api.configure_queue(tokens.admin, "kyc")
        await api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}, "cust-2": {"n": 2}})

        async with graphql_socket(casework.url, tokens.rob) as socket:
            leases = await lease_events_started(socket)
            await api.claim(tokens.rita, "kyc")
            assert (await socket.next(leases))["leaseEvents"]["kind"] == "CLAIMED"

            # What `casework token revoke --user rob` does.
            assert await revoke_tokens(owner_db, "rob") == 1
            await api.claim(tokens.rita, "kyc")
            closed = await socket.wait_closed()
            assert (closed.code, closed.reason) == (4403, "token revoked or expired")
    # An expected close is not an error: the operations it ended log no traceback.
    casework.assert_no_traceback()
