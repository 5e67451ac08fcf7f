"""An exception's item keeps its story in the exception's events: ReviewItem.events shows
only what the lease machinery recorded on the item, and a note on it is refused."""

from __future__ import annotations

import asyncpg

from server.store.database import Database
from tests.api.conftest import GraphQL
from tests.exceptions.conftest import OWNER_QUEUE, People
from tests.exceptions.domain_drivers import SAM, claim_exception, raise_one

EVENTS = """
query($id: ID!) {
  item(id: $id) { events { edges { node { kind actor actorRole queue lease { owner } } } } }
}
"""
ADD_NOTE = """
mutation($id: ID!) {
  addNote(input: {itemId: $id, body: "A note."}) {
    __typename ... on InvalidInput { field message }
  }
}
"""


async def test_an_exception_item_shows_its_leases_and_takes_no_note(
    db: Database,
    gql: GraphQL,
    people: People,
    supplier_workflow: str,
    owner_conn: asyncpg.Connection,
) -> None:
    raised = await raise_one(db, "SUP-7001")
    claim = await claim_exception(db, SAM, OWNER_QUEUE, raised.exception.id)
    item_id = str(claim.item.id)

    events = (await gql(people.sam, EVENTS, id=item_id))["data"]["item"]["events"]
    refused = (await gql(people.sam, ADD_NOTE, id=item_id))["data"]["addNote"]

    assert [e["node"] for e in events["edges"]] == [
        {
            "kind": "CLAIMED",
            "actor": "sam",
            "actorRole": "reviewer",
            "queue": OWNER_QUEUE,
            "lease": {"owner": "sam"},
        }
    ]
    assert refused == {
        "__typename": "InvalidInput",
        "field": "itemId",
        "message": f"item {item_id} stands for an exception: its history is the exception's events",
    }
    assert await owner_conn.fetchval("SELECT count(*) FROM item_events") == 0
