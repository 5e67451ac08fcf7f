"""The claim controls on the live subscriptions: an item falling due is pushed as OVERDUE by
the process timer (nothing is written), and a revoked lease reaches its console as
LEASE_LOST, through a real websocket client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from server.domain.model import Role
from server.store.database import Database
from tests.conftest import TestDatabase, token_maker
from tests.live.helpers import ITEM_UPDATES, Api, lease_events_started, next_where, serve_kyc
from tests.live.wsclient import graphql_socket

ENQUEUE_DUE = """
mutation($items: [NewItemInput!]!) {
  enqueueItems(queue: "kyc", items: $items) {
    __typename ... on EnqueuedItems { items { item { id dueAt } } }
  }
}
"""
REVOKE = """
mutation($input: RevokeLeaseInput!) { revokeLease(input: $input) { __typename } }
"""
# Far enough ahead that the subscriptions are in place first: the timer announces only
# what falls due after a subscriber came.
DUE_IN_SECONDS = 2


async def test_an_item_falling_due_is_pushed_as_overdue_and_nothing_is_written(
    test_database: TestDatabase, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        item_id = await due_soon(api, tokens.integration)
        claim = await api.claim(tokens.rita, "kyc")
        assert claim["item"]["id"] == item_id
        before = await owner_conn.fetchval("SELECT count(*) FROM item_events")

        async with graphql_socket(casework.url, tokens.rita) as socket:
            updates = await socket.subscribe(ITEM_UPDATES, itemId=item_id)
            leases = await lease_events_started(socket)

            overdue, _ = await next_where(
                socket, leases, lambda data: data["leaseEvents"]["kind"] == "OVERDUE"
            )
            update = (await socket.next(updates))["itemUpdates"]

        assert (overdue["leaseEvents"]["itemId"], overdue["leaseEvents"]["owner"]) == (
            item_id,
            "rita",
        )
        # The console is told; its lease stands.
        assert update["kind"] == "OVERDUE"
        assert (update["item"]["id"], update["item"]["state"]) == (item_id, "LEASED")
        assert await owner_conn.fetchval("SELECT count(*) FROM item_events") == before
    casework.assert_no_traceback()


async def test_a_revoked_lease_reaches_its_console_as_lease_lost(
    test_database: TestDatabase, owner_db: Database
) -> None:
    manager = await token_maker(owner_db)("max", Role.MANAGER)
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        item_id = await due_soon(api, tokens.integration)
        await api.claim(tokens.rita, "kyc")

        async with graphql_socket(casework.url, tokens.rita) as socket:
            updates = await socket.subscribe(ITEM_UPDATES, itemId=item_id)
            leases = await lease_events_started(socket)
            # itemUpdates joins the hub after a read of the item: its OVERDUE is the sign
            # that it is listening, so the revocation below cannot slip in before it.
            overdue = (await socket.next(updates))["itemUpdates"]
            assert overdue["kind"] == "OVERDUE"
            revoked = await api.call(
                manager, REVOKE, input={"itemId": item_id, "reason": "Shift ended."}
            )
            assert revoked["revokeLease"]["__typename"] == "LeaseRevoked", revoked

            lost = (await socket.next(updates))["itemUpdates"]
            event, _ = await next_where(
                socket, leases, lambda data: data["leaseEvents"]["kind"] == "REVOKED"
            )

        assert lost["kind"] == "LEASE_LOST"
        assert (lost["item"]["id"], lost["item"]["state"], lost["item"]["lease"]) == (
            item_id,
            "PENDING",
            None,
        )
        assert event["leaseEvents"]["itemId"] == item_id
    casework.assert_no_traceback()


ITEM_UPDATES_HELD = """
subscription($itemId: ID!, $leaseExpiresAt: DateTime) {
  itemUpdates(itemId: $itemId, leaseExpiresAt: $leaseExpiresAt) {
    kind item { id state lease { owner expiresAt } }
  }
}
"""


async def test_a_lease_revoked_before_its_console_subscribed_is_news_at_once(
    test_database: TestDatabase, owner_db: Database
) -> None:
    """The console passes the lease its claim gave it: a revocation that came between the
    claim and the subscription's first read is a RESYNC first, not silence; the same lease
    still held is no news."""
    manager = await token_maker(owner_db)("max", Role.MANAGER)
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        item_id = await due_soon(api, tokens.integration)
        claim = await api.claim(tokens.rita, "kyc")
        async with graphql_socket(casework.url, tokens.rita) as socket:
            held = await socket.subscribe(
                ITEM_UPDATES_HELD, itemId=item_id, leaseExpiresAt=claim["leaseExpiresAt"]
            )
            # Still the claim's lease: the first news is the item falling due.
            first_held = (await socket.next(held))["itemUpdates"]
        revoked = await api.call(manager, REVOKE, input={"itemId": item_id, "reason": "Shift."})
        assert revoked["revokeLease"]["__typename"] == "LeaseRevoked", revoked
        async with graphql_socket(casework.url, tokens.rita) as socket:
            late = await socket.subscribe(
                ITEM_UPDATES_HELD, itemId=item_id, leaseExpiresAt=claim["leaseExpiresAt"]
            )
            first_late = (await socket.next(late))["itemUpdates"]

        assert first_held["kind"] == "OVERDUE"
        assert first_held["item"]["lease"] == {
            "owner": "rita",
            "expiresAt": claim["leaseExpiresAt"],
        }
        assert first_late["kind"] == "RESYNC"
        assert (first_late["item"]["state"], first_late["item"]["lease"]) == ("PENDING", None)
    casework.assert_no_traceback()


async def due_soon(api: Api, integration: str) -> str:
    """Enqueues one item due DUE_IN_SECONDS from now; its id."""
    due = datetime.now(UTC) + timedelta(seconds=DUE_IN_SECONDS)
    items = [{"externalKey": "cust-1", "payload": {"n": 1}, "dueAt": due.isoformat()}]
    enqueued = await api.call(integration, ENQUEUE_DUE, items=items)
    [entry] = enqueued["enqueueItems"]["items"]
    item_id: str = entry["item"]["id"]
    return item_id
