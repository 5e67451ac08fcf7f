"""A manager's bulk action reaches the live subscriptions through a real websocket client:
the console whose lease it revoked hears LEASE_LOST, lease watchers hear BULK, and the
queue's backlog shows the items gone from the claim order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from server.domain.model import Role
from server.store.database import Database
from tests.conftest import TestDatabase, token_maker
from tests.live.helpers import (
    ITEM_UPDATES,
    QUEUE_BACKLOG,
    lease_events_started,
    next_where,
    serve_kyc,
)
from tests.live.wsclient import graphql_socket

DEFINE_HOLD_REASON = """
mutation {
  defineHoldReason(input: {queue: "kyc", code: "provider_outage", label: "Provider outage"}) {
    __typename
  }
}
"""
ADD_NOTE = """
mutation($itemId: ID!) { addNote(input: {itemId: $itemId, body: "Looking."}) { __typename } }
"""
BULK_HOLD = """
mutation($input: BulkHoldInput!) {
  bulkHold(input: $input) {
    __typename
    ... on BulkApplied { changed { id } skipped { item { id } reason } more }
  }
}
"""

# How an itemUpdates subscription tells a note added while it starts.
NOTE_KINDS = {"NOTED", "RESYNC"}


async def test_a_bulk_hold_is_heard_by_the_console_the_lease_watchers_and_the_backlog(
    test_database: TestDatabase, owner_db: Database
) -> None:
    manager = await token_maker(owner_db)("max", Role.MANAGER)
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        defined = await api.call(tokens.admin, DEFINE_HOLD_REASON)
        assert defined["defineHoldReason"]["__typename"] == "HoldReasonDefined", defined
        items = await api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}, "cust-2": {}})
        claim = await api.claim(tokens.rita, "kyc")
        held_id = claim["item"]["id"]

        async with graphql_socket(casework.url, tokens.rita) as socket:
            updates = await socket.subscribe(ITEM_UPDATES, itemId=held_id)
            backlog = await socket.subscribe(QUEUE_BACKLOG, queue="kyc")
            snapshot = (await socket.next(backlog))["queueBacklog"]
            assert (snapshot["pending"], snapshot["leased"]) == (1, 1)
            leases = await lease_events_started(socket)
            # A note is told on itemUpdates (as NOTED, or as a RESYNC if it lands while the
            # subscription starts): once told, the subscription is listening.
            noted = await api.call(tokens.rob, ADD_NOTE, itemId=held_id)
            assert noted["addNote"]["__typename"] == "NoteAdded", noted
            told = (await socket.next(updates))["itemUpdates"]
            assert told["kind"] in NOTE_KINDS, told

            until = (datetime.now(UTC) + timedelta(hours=4)).isoformat()
            answer = await api.call(
                manager,
                BULK_HOLD,
                input={
                    "items": {"itemIds": [item["id"] for item in items]},
                    "until": until,
                    "reason": "provider_outage",
                    "revokeLeases": True,
                },
            )

            # The note can be told twice (as NOTED, then as the RESYNC of a subscription
            # whose start it overlapped): nothing else comes before the lease's loss.
            lost_data, before_lost = await next_where(
                socket, updates, lambda data: data["itemUpdates"]["kind"] not in NOTE_KINDS
            )
            lost = lost_data["itemUpdates"]
            assert {data["itemUpdates"]["kind"] for data in before_lost} <= NOTE_KINDS
            event, _ = await next_where(
                socket, leases, lambda data: data["leaseEvents"]["kind"] == "BULK"
            )
            emptied, _ = await next_where(
                socket,
                backlog,
                lambda data: (
                    (data["queueBacklog"]["pending"], data["queueBacklog"]["leased"]) == (0, 0)
                ),
            )

        applied = answer["bulkHold"]
        assert applied["__typename"] == "BulkApplied", applied
        assert sorted(item["id"] for item in applied["changed"]) == sorted(
            item["id"] for item in items
        )
        assert (applied["skipped"], applied["more"]) == ([], False)
        assert lost["kind"] == "LEASE_LOST"
        assert (lost["item"]["id"], lost["item"]["lease"]) == (held_id, None)
        assert event["leaseEvents"]["queue"] == "kyc"
        assert emptied["queueBacklog"]["resync"] is False
    casework.assert_no_traceback()
