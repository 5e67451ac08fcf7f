"""Two server processes on one database: what one writes, the other's subscribers see."""

from __future__ import annotations

from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import (
    DECISION_EVENTS,
    LEASE_EVENTS,
    create_live_tokens,
    serve_casework,
    subscriptions_started,
)
from tests.live.wsclient import graphql_socket


async def test_a_decision_through_process_a_reaches_subscribers_of_process_b(
    test_database: TestDatabase, owner_db: Database
) -> None:
    tokens = await create_live_tokens(owner_db)
    async with (
        serve_casework(test_database) as process_a,
        serve_casework(test_database) as process_b,
    ):
        assert process_a.url != process_b.url
        await process_a.api.configure_queue(tokens.admin, "kyc")
        await process_a.api.enqueue(tokens.integration, "kyc", {"cust-1": {"n": 1}})

        async with graphql_socket(process_b.url, tokens.integration) as socket:
            leases = await socket.subscribe(LEASE_EVENTS, queue="kyc")
            decisions = await socket.subscribe(DECISION_EVENTS, queue="kyc")
            await subscriptions_started(socket, "kyc")

            claim = await process_a.api.claim(tokens.rita, "kyc")
            decision_id = await process_a.api.decide(tokens.rita, claim)

            item_id = claim["item"]["id"]
            events = [(await socket.next(leases))["leaseEvents"] for _ in range(2)]
            assert [(event["kind"], event["itemId"]) for event in events] == [
                ("CLAIMED", item_id),
                ("DECIDED", item_id),
            ]
            delivered = (await socket.next(decisions))["decisionEvents"]
            assert (delivered["id"], delivered["item"]["id"]) == (decision_id, item_id)
    process_a.assert_no_traceback()
    process_b.assert_no_traceback()
