"""The subscriptions of one server process, fed by requests over HTTP."""

from __future__ import annotations

import asyncio
import itertools
import time

from server.store.database import Database
from tests.conftest import TestDatabase
from tests.live.helpers import (
    DECISION_EVENTS,
    ITEM_UPDATES,
    LEASE_EVENTS,
    QUEUE_BACKLOG,
    serve_kyc,
    subscriptions_started,
    wait_until_in_the_past,
)
from tests.live.wsclient import graphql_socket


async def test_a_decision_reaches_lease_and_decision_subscribers(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        await api.enqueue(tokens.integration, "kyc", {"before": {"n": 0}, "cust-1": {"n": 1}})
        # Decided before anyone subscribes: a stream without a cursor starts after it.
        earlier = await api.decide(tokens.rita, await api.claim(tokens.rita, "kyc"))
        await wait_until_in_the_past(owner_db, earlier, within=10)

        async with graphql_socket(casework.url, tokens.integration) as socket:
            leases = await socket.subscribe(LEASE_EVENTS, queue="kyc")
            decisions = await socket.subscribe(DECISION_EVENTS, queue="kyc")
            await subscriptions_started(socket, "kyc")

            claim = await api.claim(tokens.rita, "kyc")
            item_id = claim["item"]["id"]
            decision_id = await api.decide(tokens.rita, claim)

            claimed = (await socket.next(leases))["leaseEvents"]
            decided = (await socket.next(leases))["leaseEvents"]
            assert (claimed["kind"], claimed["itemId"]) == ("CLAIMED", item_id)
            assert (decided["kind"], decided["itemId"]) == ("DECIDED", item_id)
            assert claimed["queue"] == decided["queue"] == "kyc"

            delivered = (await socket.next(decisions))["decisionEvents"]
            assert delivered["id"] == decision_id != earlier
            assert (delivered["queue"], delivered["item"]["id"]) == ("kyc", item_id)
    casework.assert_no_traceback()


async def test_queue_backlog_sends_a_snapshot_then_coalesced_changes(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        await api.enqueue(tokens.integration, "kyc", {f"cust-{n}": {"n": n} for n in range(8)})
        await api.claim(tokens.rob, "kyc")

        async with graphql_socket(casework.url, tokens.rita) as socket:
            backlog = await socket.subscribe(QUEUE_BACKLOG, queue="kyc")
            snapshot = (await socket.next(backlog))["queueBacklog"]
            assert (snapshot["pending"], snapshot["leased"], snapshot["resync"]) == (7, 1, False)
            assert snapshot["oldestPendingAgeSeconds"] >= 0

            await api.claim(tokens.rita, "kyc")
            changed = (await socket.next(backlog))["queueBacklog"]
            arrivals = [time.monotonic()]
            assert (changed["pending"], changed["leased"]) == (6, 2)

            # Five claims at once: at most one figure per 250 ms, and the last one is right.
            await asyncio.gather(*(api.claim(tokens.rita, "kyc") for _ in range(5)))
            figures: list[tuple[int, int]] = []
            while not figures or figures[-1] != (1, 7):
                update = (await socket.next(backlog))["queueBacklog"]
                figures.append((update["pending"], update["leased"]))
                arrivals.append(time.monotonic())
            assert len(figures) < 5, f"five changes were not coalesced: {figures}"
            # Sent 250 ms apart at least; received a little less apart at worst, if the first
            # was held up on its way. Without coalescing they come within a millisecond.
            gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
            assert all(gap >= 0.15 for gap in gaps), gaps
    casework.assert_no_traceback()


async def test_item_updates_tell_a_console_what_happened_to_its_item(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db, ttl=1) as (casework, tokens):
        api = casework.api
        # Claimed first, and again first once its lease has lapsed.
        [item] = await api.enqueue(tokens.integration, "kyc", {"cust-1": {"v": 1}}, priority=10)
        await api.enqueue(tokens.integration, "kyc", {"cust-2": {"v": 1}})
        mine = await api.claim(tokens.rita, "kyc")
        assert mine["item"]["id"] == item["id"]

        async with graphql_socket(casework.url, tokens.rita) as socket:
            updates = await socket.subscribe(ITEM_UPDATES, itemId=item["id"])
            await subscriptions_started(socket, "kyc")

            # Another item's events are not this console's business.
            await api.release(tokens.rob, await api.claim(tokens.rob, "kyc"))

            # rita's lease runs out: nothing is written, yet the console hears of it.
            lost = (await socket.next(updates))["itemUpdates"]
            assert lost["kind"] == "LEASE_LOST"
            assert (lost["item"]["id"], lost["item"]["state"]) == (item["id"], "PENDING")

            # rob takes the item over; a long TTL now, so his lease does not expire in the test.
            await api.configure_queue(tokens.admin, "kyc", ttl=300)
            robs = await api.claim(tokens.rob, "kyc")
            assert robs["item"]["id"] == item["id"]
            taken = (await socket.next(updates))["itemUpdates"]
            assert taken["kind"] == "LEASE_LOST"
            assert taken["item"]["lease"]["owner"] == "rob"

            # The provider re-uploads the item with other evidence.
            [reuploaded] = await api.enqueue(tokens.integration, "kyc", {"cust-1": {"v": 2}})
            assert reuploaded["evidenceUpdated"] is True
            changed = (await socket.next(updates))["itemUpdates"]
            assert changed["kind"] == "EVIDENCE_CHANGED"
            assert changed["item"]["evidenceHash"] == reuploaded["evidenceHash"]

            await api.decide(tokens.rob, robs, evidence_hash=reuploaded["evidenceHash"])
            decided = (await socket.next(updates))["itemUpdates"]
            assert (decided["kind"], decided["item"]["state"]) == ("DECIDED", "DECIDED")
    casework.assert_no_traceback()
