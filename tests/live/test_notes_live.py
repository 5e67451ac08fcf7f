"""A note reaches the open consoles of its item, and is no lease event."""

from __future__ import annotations

from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import ITEM_UPDATES, lease_events_started, serve_kyc
from tests.live.wsclient import graphql_socket

ADD_NOTE = """
mutation($itemId: ID!, $body: String!) {
  addNote(input: {itemId: $itemId, body: $body}) { __typename }
}
"""


async def test_a_note_tells_item_watchers_and_not_lease_watchers(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        [item] = await api.enqueue(tokens.integration, "kyc", {"cust-1": {"v": 1}})
        claim = await api.claim(tokens.rita, "kyc")

        async with graphql_socket(casework.url, tokens.rita) as socket:
            updates = await socket.subscribe(ITEM_UPDATES, itemId=item["id"])
            leases = await lease_events_started(socket)

            noted = await api.call(tokens.rob, ADD_NOTE, itemId=item["id"], body="Seen before.")
            assert noted["addNote"]["__typename"] == "NoteAdded", noted
            # The next lease event is this renewal: the note before it was not one.
            await api.renew(tokens.rita, claim)

            update = (await socket.next(updates))["itemUpdates"]
            # The barrier above follows itemUpdates' first read of the item, not its joining
            # the hub: a note landing in between is told as a RESYNC (the item's newest
            # timeline row changed meanwhile), never missed.
            assert update["kind"] in {"NOTED", "RESYNC"}, update
            # A note leaves the lease alone.
            assert (update["item"]["state"], update["item"]["lease"]) == (
                "LEASED",
                {"owner": "rita"},
            )
            renewed = (await socket.next(leases))["leaseEvents"]
            assert (renewed["kind"], renewed["itemId"]) == ("RENEWED", item["id"])
        await api.decide(tokens.rita, claim)
    casework.assert_no_traceback()
