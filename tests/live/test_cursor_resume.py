"""decisionEvents resumed from its cursor across dropped connections, while 8 reviewers
decide 300 items: every decision of the table arrives, none twice."""

from __future__ import annotations

import asyncio

from server.store import sql
from server.store.database import Database
from tests.api.helpers import CLAIM
from tests.conftest import TestDatabase
from tests.live.helpers import DECISION_EVENTS, Api, serve_kyc
from tests.live.wsclient import graphql_socket

ITEMS = 300
DECIDERS = 8
# Each connection but the last is dropped after this many decisions: four drops.
PER_CONNECTION = 40
DROPS = 4
CATCH_UP_SECONDS = 15.0
# The last items wait until every drop has happened, so that each drop comes while people
# are deciding (on a fast machine they could otherwise finish first).
HELD_BACK = 100


async def decide_until_empty(
    api: Api, token: str, decided: list[str], dropped: asyncio.Event
) -> None:
    while True:
        if len(decided) >= ITEMS - HELD_BACK:
            await dropped.wait()
        claim = (await api.call(token, CLAIM, queue="kyc"))["claimNext"]
        if claim["__typename"] == "QueueEmpty":
            return
        assert claim["__typename"] == "Claim", claim
        decided.append(await api.decide(token, claim))


async def test_a_resumed_stream_has_every_decision_once(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        api = casework.api
        await api.enqueue(tokens.integration, "kyc", {f"c-{n}": {"n": n} for n in range(ITEMS)})
        # The integration's last processed decision before the run: its first cursor.
        first = cursor = await api.decide(tokens.rita, await api.claim(tokens.rita, "kyc"))

        decided: list[str] = []
        dropped = asyncio.Event()
        deciders = asyncio.gather(
            *(decide_until_empty(api, tokens.rita, decided, dropped) for _ in range(DECIDERS))
        )
        received: list[str] = []
        deciding_at_drop: list[bool] = []
        try:
            for _ in range(DROPS):
                async with graphql_socket(casework.url, tokens.integration) as socket:
                    stream = await socket.subscribe(DECISION_EVENTS, queue="kyc", after=cursor)
                    for _ in range(PER_CONNECTION):
                        received.append((await socket.next(stream))["decisionEvents"]["id"])
                    cursor = received[-1]
                    deciding_at_drop.append(not deciders.done())
                    # Gone without a close frame; whatever was in flight is lost with it.
                    await socket.abort()
            dropped.set()

            async with graphql_socket(casework.url, tokens.integration) as socket:
                stream = await socket.subscribe(DECISION_EVENTS, queue="kyc", after=cursor)
                await asyncio.wait_for(deciders, CATCH_UP_SECONDS)
                rows = await owner_db.fetch(
                    sql.decisions_read.DECISIONS_GET_PAGES,
                    queues=["kyc"],
                    after_id=0,
                    page_size=ITEMS + 1,
                )
                in_table = {str(row["id"]) for row in rows} - {first}
                # Caught up when as many have arrived as the table holds (bounded: a missing
                # one fails the comparison below, not a timeout).
                deadline = asyncio.get_running_loop().time() + CATCH_UP_SECONDS
                while len(received) < len(in_table):
                    remaining = deadline - asyncio.get_running_loop().time()
                    try:
                        data = await socket.next(stream, max(remaining, 0.001))
                    except TimeoutError:
                        break
                    received.append(data["decisionEvents"]["id"])
        finally:
            deciders.cancel()

    assert len(rows) == ITEMS
    assert deciding_at_drop == [True] * DROPS, "the drops did not overlap the deciding"
    assert len(received) == len(set(received)), "a decision was delivered twice"
    missing, unknown = in_table - set(received), set(received) - in_table
    assert (missing, unknown) == (set(), set())
    # Dropped clients are routine: the server logs no traceback for them.
    casework.assert_no_traceback()
