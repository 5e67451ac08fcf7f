"""Lease expiry writes nothing, yet leaseEvents subscribers hear of it within 1 s.

Times compare the lease's expiry (PostgreSQL's clock) with the arrival on the client
(time.time()): one machine, one clock.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import (
    Casework,
    LiveTokens,
    lease_events_started,
    next_where,
    parse_time,
    serve_kyc,
)
from tests.live.wsclient import GraphQLSocket, graphql_socket

# Pushed within this long after the expiry time...
LATE_SECONDS = 1.0
# ...and not before it (a margin for rounding of the timestamp only).
EARLY_SECONDS = 0.01


@asynccontextmanager
async def two_items_watched(
    test_database: TestDatabase, owner_db: Database
) -> AsyncIterator[tuple[Casework, LiveTokens, GraphQLSocket, str]]:
    """Queue `kyc` with a one-second lease TTL and two items, and rob watching its lease
    events: yields the served Casework, the tokens, rob's socket and his subscription."""
    async with serve_kyc(test_database, owner_db, ttl=1) as (casework, tokens):
        await casework.api.enqueue(
            tokens.integration, "kyc", {"cust-1": {"n": 1}, "cust-2": {"n": 2}}
        )
        async with graphql_socket(casework.url, tokens.rob) as socket:
            yield casework, tokens, socket, await lease_events_started(socket)


async def expired(socket: GraphQLSocket, operation: str, item_id: str) -> tuple[float, list[Any]]:
    """Waits for EXPIRED of the item; its arrival time and the events passed over."""
    event, skipped = await next_where(
        socket,
        operation,
        lambda data: (
            data["leaseEvents"]["kind"] == "EXPIRED" and data["leaseEvents"]["itemId"] == item_id
        ),
    )
    arrived = time.time()
    assert event["leaseEvents"]["owner"] == "rita", event
    return arrived, [data["leaseEvents"] for data in skipped]


async def test_expiry_is_pushed_within_a_second_of_the_expiry_time(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with two_items_watched(test_database, owner_db) as (casework, tokens, socket, leases):
        api = casework.api
        for _ in range(2):
            claim = await api.claim(tokens.rita, "kyc")
            expiry = parse_time(claim["leaseExpiresAt"])
            arrived, passed_over = await expired(socket, leases, claim["item"]["id"])
            assert -EARLY_SECONDS <= arrived - expiry <= LATE_SECONDS, arrived - expiry
            assert [event["kind"] for event in passed_over] == ["CLAIMED"]
    casework.assert_no_traceback()


async def test_a_renewed_lease_expires_at_its_new_time_not_the_old(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with two_items_watched(test_database, owner_db) as (casework, tokens, socket, leases):
        api = casework.api
        renewed = await api.claim(tokens.rita, "kyc")
        left = await api.claim(tokens.rita, "kyc")
        # Renewal takes the queue's TTL of now: 3 s, well after the first expiry.
        await api.configure_queue(tokens.admin, "kyc", ttl=3)
        new_expiry = parse_time(await api.renew(tokens.rita, renewed))
        old_expiry = parse_time(renewed["leaseExpiresAt"])
        assert new_expiry - old_expiry > 1.5

        # The lease left alone expires on time: the timer did fire at the old expiry...
        arrived, passed_over = await expired(socket, leases, left["item"]["id"])
        assert -EARLY_SECONDS <= arrived - parse_time(left["leaseExpiresAt"]) <= LATE_SECONDS
        assert [event["kind"] for event in passed_over] == ["CLAIMED", "CLAIMED", "RENEWED"]

        # ...and said nothing of the renewed one, which expires at its new time.
        arrived, passed_over = await expired(socket, leases, renewed["item"]["id"])
        assert passed_over == []
        assert -EARLY_SECONDS <= arrived - new_expiry <= LATE_SECONDS, arrived - new_expiry
    casework.assert_no_traceback()


async def test_a_new_subscriber_is_not_told_of_leases_that_expired_before_it_came(
    test_database: TestDatabase, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        await api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}})
        old = await api.claim(tokens.rita, "kyc")
        # Claimed before cust-1 once its lease has lapsed: that lease stays as it ran out.
        await api.enqueue(tokens.integration, "kyc", {"cust-2": {"n": 2}}, priority=10)
        # The lease runs out now, while nobody watches the queue (moved in SQL: no wait).
        await owner_conn.execute(
            "UPDATE review_items SET lease_expires_at = clock_timestamp() WHERE id = $1",
            int(old["item"]["id"]),
        )

        async with graphql_socket(casework.url, tokens.rob) as socket:
            leases = await lease_events_started(socket)
            claim = await api.claim(tokens.rob, "kyc")
            assert claim["item"]["id"] != old["item"]["id"]
            first = (await socket.next(leases))["leaseEvents"]
            assert (first["kind"], first["itemId"]) == ("CLAIMED", claim["item"]["id"])
    casework.assert_no_traceback()
