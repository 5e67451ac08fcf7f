"""An item that names a barred claimer is never handed to that person, on either probe of
the claim (the caller's own assignments, and the general walk), and is handed to anyone
else: the database side of four-eyes (migration 0019)."""

from __future__ import annotations

import asyncpg

from server.domain.failures import QueueEmpty
from server.domain.review.leases import claim_next
from server.store.database import Database
from tests.conftest import reviewer
from tests.integration.helpers import claim, enqueue_one

ALICE = reviewer("alice")
BOB = reviewer("bob")


async def bar(owner: asyncpg.Connection, item_id: int, person: str) -> None:
    status = await owner.execute(
        "UPDATE review_items SET barred_claimer = $2 WHERE id = $1", item_id, person
    )
    assert status == "UPDATE 1"


async def test_the_general_walk_passes_over_an_item_barred_to_the_caller(
    db: Database, owner_conn: asyncpg.Connection, kyc_queue: str
) -> None:
    barred = await enqueue_one(db, kyc_queue, "barred", priority=90)
    other = await enqueue_one(db, kyc_queue, "other", priority=10)
    await bar(owner_conn, barred.id, "alice")

    # Alice walks past the higher-priority item barred to her and takes the other one.
    assert (await claim(db, ALICE, kyc_queue)).item.id == other.id
    # Nothing else is left for her, although an item is waiting.
    assert isinstance(await claim_next(db, ALICE, kyc_queue), QueueEmpty)
    # Bob takes it.
    assert (await claim(db, BOB, kyc_queue)).item.id == barred.id


async def test_an_assignment_does_not_hand_a_barred_item_to_its_assignee(
    db: Database, owner_conn: asyncpg.Connection, kyc_queue: str
) -> None:
    item = await enqueue_one(db, kyc_queue, "assigned-and-barred")
    await owner_conn.execute(
        "UPDATE review_items SET assigned_to = 'alice', assigned_until = now() + interval '1 hour',"
        " barred_claimer = 'alice' WHERE id = $1",
        item.id,
    )
    assert isinstance(await claim_next(db, ALICE, kyc_queue), QueueEmpty)
