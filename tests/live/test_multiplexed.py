"""Multiplexed subscriptions (server/graphql/multiplex.py): one execution per event for the
sockets that send the same document, variables and scope; each socket still its own.

Executions are counted by the server's own metric, casework_shared_subscription_executions,
read from /metrics. (A slow member that overflows its outbox gets a RESYNC of its own while
the other member of its group gets every event: test_resilience.py's stuck subscriber.)
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx

from server.domain.identity.tokens import revoke_tokens
from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import (
    LEASE_EVENTS,
    QUEUE_BACKLOG,
    Casework,
    LiveTokens,
    lease_events_started,
    serve_kyc,
)
from tests.live.wsclient import GraphQLSocket, graphql_socket

ONE_ITEM = {"cust-1": {"n": 1}}


async def executions(client: httpx.AsyncClient, field: str) -> float:
    body = (await client.get("/metrics")).text
    found = re.search(
        rf'^casework_shared_subscription_executions_total{{field="{field}"}} (\S+)$',
        body,
        re.MULTILINE,
    )
    return float(found.group(1)) if found else 0.0


@asynccontextmanager
async def consoles(
    test_database: TestDatabase,
    owner_db: Database,
    items: dict[str, dict[str, Any]],
    *holders: str,
    **env: str,
) -> AsyncIterator[tuple[Casework, LiveTokens, list[GraphQLSocket]]]:
    """serve_kyc (with `env`), `items` enqueued, and a socket of each named token holder's."""
    async with serve_kyc(test_database, owner_db, ttl=None, **env) as (casework, tokens):
        await casework.api.enqueue(tokens.integration, "kyc", items)
        async with AsyncExitStack() as stack:
            sockets = [
                await stack.enter_async_context(graphql_socket(casework.url, getattr(tokens, who)))
                for who in holders
            ]
            yield casework, tokens, sockets


async def test_two_consoles_of_one_scope_get_the_same_payload_from_one_execution(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with consoles(
        test_database, owner_db, ONE_ITEM, "rita", "rob", CASEWORK_METRICS_PUBLIC="1"
    ) as (casework, tokens, (rita, rob)):
        api = casework.api
        rita_leases = await lease_events_started(rita)
        rob_leases = await lease_events_started(rob)
        before = await executions(api.client, "leaseEvents")

        claim = await api.claim(tokens.rita, "kyc")

        seen_by_rita = await rita.message(rita_leases)
        seen_by_rob = await rob.message(rob_leases)
        assert seen_by_rita["payload"] == seen_by_rob["payload"]
        event = seen_by_rita["payload"]["data"]["leaseEvents"]
        assert (event["kind"], event["itemId"]) == ("CLAIMED", claim["item"]["id"])
        # Each with its own operation id.
        assert (seen_by_rita["id"], seen_by_rob["id"]) == (rita_leases, rob_leases)
        assert await executions(api.client, "leaseEvents") == before + 1

        # A backlog subscriber that comes later starts from a snapshot of its own, then
        # shares the group's figures.
        backlog = await rita.subscribe(QUEUE_BACKLOG, queue="kyc")
        snapshot = (await rita.next(backlog))["queueBacklog"]
        assert (snapshot["pending"], snapshot["leased"], snapshot["resync"]) == (0, 1, False)
    casework.assert_no_traceback()


async def test_other_scopes_do_not_share_and_see_only_their_own(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with consoles(
        test_database, owner_db, ONE_ITEM, "rita", "admin", "olga", CASEWORK_METRICS_PUBLIC="1"
    ) as (casework, tokens, (rita, admin, olga)):
        api = casework.api
        # Olga reviews payouts only: the same document is refused to her, whoever
        # else runs it.
        refused = await olga.subscribe(LEASE_EVENTS, queue="kyc")
        message = await olga.message(refused)
        assert message["type"] == "next", message
        assert message["payload"]["data"] is None
        assert "does not cover queue 'kyc'" in message["payload"]["errors"][0]["message"]
        assert (await olga.message(refused))["type"] == "complete"

        rita_leases = await lease_events_started(rita)
        admin_leases = await lease_events_started(admin)
        before = await executions(api.client, "leaseEvents")
        await api.claim(tokens.rita, "kyc")
        assert (await rita.next(rita_leases))["leaseEvents"]["kind"] == "CLAIMED"
        assert (await admin.next(admin_leases))["leaseEvents"]["kind"] == "CLAIMED"
        # A reviewer's and an admin's scopes differ: two executions.
        assert await executions(api.client, "leaseEvents") == before + 2
    casework.assert_no_traceback()


async def test_a_revoked_token_closes_only_its_socket_and_a_complete_ends_only_its_operation(
    test_database: TestDatabase, owner_db: Database
) -> None:
    three_items = {f"cust-{n}": {"n": n} for n in range(3)}
    async with consoles(
        test_database, owner_db, three_items, "rita", "rob", CASEWORK_TOKEN_CACHE_SECONDS="0"
    ) as (casework, tokens, (rita, rob)):
        api = casework.api
        rita_leases = await lease_events_started(rita)
        rita_second = await lease_events_started(rita)
        rob_leases = await lease_events_started(rob)

        # One of Rita's two operations ends; the group goes on for the others.
        await rita.complete(rita_second)
        first = await api.claim(tokens.rita, "kyc")
        for socket, operation in ((rita, rita_leases), (rob, rob_leases)):
            event = (await socket.next(operation))["leaseEvents"]
            assert event["itemId"] == first["item"]["id"], event

        assert await revoke_tokens(owner_db, "rob") == 1
        second = await api.claim(tokens.rita, "kyc")
        assert (await rita.next(rita_leases))["leaseEvents"]["itemId"] == second["item"]["id"]
        closed = await rob.wait_closed()
        assert (closed.code, closed.reason) == (4403, "token revoked or expired")

        # Rob's leaving takes nothing from Rita.
        third = await api.claim(tokens.rita, "kyc")
        assert (await rita.next(rita_leases))["leaseEvents"]["itemId"] == third["item"]["id"]
    casework.assert_no_traceback()
