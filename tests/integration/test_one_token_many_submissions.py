"""One lease token, fifty simultaneous identical submissions: one verdict is recorded, and the
other forty-nine are answered with it, as replays."""

from __future__ import annotations

import asyncio

import asyncpg

from server.domain.model import Decision
from server.domain.review.decisions import Replayed, submit_decision
from server.store.database import Database
from tests.conftest import reviewer
from tests.integration.helpers import claimed_one, decision_rows, item_row, verdict_for

SUBMISSIONS = 50


async def test_one_token_records_one_decision(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    alice = reviewer("alice")
    held = await claimed_one(db, kyc_queue, alice)

    results = await asyncio.gather(
        *(submit_decision(db, alice, verdict_for(held)) for _ in range(SUBMISSIONS))
    )

    decisions = [r for r in results if isinstance(r, Decision)]
    assert len(decisions) == 1, results
    [recorded] = decisions
    # Every other one waited for the winner's row lock, or lost on the unique lease token,
    # and is answered with the winner's decision, as it reads after the commit.
    assert [r for r in results if not isinstance(r, Decision)] == [Replayed(recorded)] * (
        SUBMISSIONS - 1
    )
    rows = await decision_rows(owner_conn, held.item.id)
    assert [(row["id"], row["lease_token"]) for row in rows] == [(recorded.id, held.lease_token)]
    assert (await item_row(owner_conn, held.item.id))["state"] == "decided"
