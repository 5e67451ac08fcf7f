"""Two server processes on one database: what one writes, the other's subscribers see."""

from __future__ import annotations

from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import create_live_tokens, decided_across, serve_casework


async def test_a_decision_through_process_a_reaches_subscribers_of_process_b(
    test_database: TestDatabase, owner_db: Database
) -> None:
    tokens = await create_live_tokens(owner_db)
    async with (
        serve_casework(test_database) as process_a,
        serve_casework(test_database) as process_b,
    ):
        assert process_a.url != process_b.url
        seen = await decided_across(process_a, process_b, tokens)

        item_id = seen.claim["item"]["id"]
        assert [(event["kind"], event["itemId"]) for event in seen.lease_events] == [
            ("CLAIMED", item_id),
            ("DECIDED", item_id),
        ]
        delivered = seen.decision_event
        assert (delivered["id"], delivered["item"]["id"]) == (seen.decision_id, item_id)
    process_a.assert_no_traceback()
    process_b.assert_no_traceback()
