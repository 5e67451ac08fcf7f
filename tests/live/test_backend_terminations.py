"""Every Casework backend terminated (pg_terminate_backend), again and again, while
reviewers claim and decide over HTTP and an integration follows decisionEvents.

Before the fix, a statement that happened to start between asyncpg reading the FATAL
message of its connection's terminated backend and the end of the stream failed with
"InternalClientError: cannot switch to state 12; another operation (2) is in progress",
and its client got INTERNAL (server/store/errors.py, refused_on_dead_connection).

Asserted exactly: no client ever sees INTERNAL (a request refused during a fault says
UNAVAILABLE; a stream goes on, or ends with UNAVAILABLE or a closed socket and is resumed
from its cursor); every item is decided once; every decision a reviewer was told about is
in the table; the stream delivers every decision of the table once, and the
server logs no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
import websockets

from server.domain.model import Role
from server.store.database import Database
from server.store.dsn import APP_ROLE
from tests.api.helpers import CLAIM, DECIDE, decision_input
from tests.conftest import TestDatabase, token_maker
from tests.live.helpers import DECISION_EVENTS, POLL_SECONDS, serve_kyc, subscriptions_started
from tests.live.wsclient import graphql_socket

ITEMS = 80
REVIEWERS = 4
# Rounds of termination, spread over the run by progress (every ITEMS / (ROUNDS + 1)
# decisions), so that each hits a server under load.
ROUNDS = 6
# A lease whose claim answer was lost (the claim committed, the answer did not arrive)
# comes back this soon.
LEASE_TTL_SECONDS = 2
RUN_SECONDS = 120

TERMINATE = """
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE usename = $1 AND datname = $2 AND pid <> pg_backend_pid()
"""


@dataclass
class Seen:
    """What the clients saw."""

    # Item id -> decision id, as acknowledged to a reviewer.
    acknowledged: dict[str, str] = field(default_factory=dict)
    # Error codes of refused requests, and how streams ended.
    refusals: list[str] = field(default_factory=list)
    stream_endings: list[str] = field(default_factory=list)
    streamed: list[str] = field(default_factory=list)
    terminated: list[int] = field(default_factory=list)
    # Set on each acknowledged decision.
    decided: asyncio.Event = field(default_factory=asyncio.Event)


class Internal(AssertionError):
    pass


async def call(
    client: httpx.AsyncClient, seen: Seen, token: str, query: str, **variables: Any
) -> Any:
    """The operation's data, or None when it was refused for an outage (then retried by
    the caller). Anything else fails the test, INTERNAL first of all."""
    try:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
    except httpx.TransportError as error:
        seen.refusals.append(f"transport: {error!r}")
        return None
    body = response.json()
    codes = [e.get("extensions", {}).get("code") for e in body.get("errors", [])]
    if "INTERNAL" in codes:
        raise Internal(f"a client saw INTERNAL: {body}")
    if codes:
        assert set(codes) == {"UNAVAILABLE"}, body
        assert response.status_code == 503, body
        seen.refusals.append("UNAVAILABLE")
        return None
    assert response.status_code == 200, response.text
    return body["data"]


async def review(client: httpx.AsyncClient, seen: Seen, token: str) -> None:
    while len(seen.acknowledged) < ITEMS:
        data = await call(client, seen, token, CLAIM, queue="kyc")
        if data is None or data["claimNext"]["__typename"] == "QueueEmpty":
            # Waiting for the others, or for a lease whose answer was lost to lapse.
            await asyncio.sleep(POLL_SECONDS)
            continue
        claim = data["claimNext"]
        assert claim["__typename"] == "Claim", claim
        entry = decision_input(claim, "APPROVE", "documents_ok")
        while True:
            data = await call(client, seen, token, DECIDE, input=entry)
            if data is not None:
                break
            # Refused: the same submission again, as a client does after Retry-After (here
            # shorter): recorded once, or answered as a replay.
            await asyncio.sleep(POLL_SECONDS)
        result = data["submitDecision"]
        if result["__typename"] == "StaleLease":
            # The lease lapsed while the answers were refused; someone else decides it.
            assert not result["decidedUnderThisLease"], result
            continue
        assert result["__typename"] == "DecisionRecorded", result
        item_id = claim["item"]["id"]
        assert (
            seen.acknowledged.setdefault(item_id, result["decision"]["id"])
            == (result["decision"]["id"])
        ), (item_id, result, seen.acknowledged)
        seen.decided.set()


async def follow(url: str, token: str, seen: Seen, cursor: str) -> None:
    """decisionEvents from `cursor` until ITEMS - 1 decisions came; resumed from the last
    one received whole whenever the stream or its socket ends."""
    while len(seen.streamed) < ITEMS - 1:
        async with contextlib.AsyncExitStack() as stack:
            try:
                socket = await stack.enter_async_context(graphql_socket(url, token))
            except (AssertionError, OSError, websockets.WebSocketException) as error:
                # The handshake refused while the database was away (1013, try again later).
                seen.stream_endings.append(f"handshake: {error!r}"[:200])
                await asyncio.sleep(POLL_SECONDS)
                continue
            operation = await socket.subscribe(DECISION_EVENTS, queue="kyc", after=cursor)
            while len(seen.streamed) < ITEMS - 1:
                message = await socket.message(operation, RUN_SECONDS)
                if message["type"] == "closed":
                    seen.stream_endings.append(f"closed: {socket.closed}")
                    break
                # A `next` whose fields could not all be read carries errors too.
                errors = message["payload"] if message["type"] == "error" else None
                if message["type"] == "next":
                    errors = message["payload"].get("errors")
                codes = {error.get("extensions", {}).get("code") for error in errors or ()}
                if "INTERNAL" in codes:
                    raise Internal(f"the stream said INTERNAL: {message}")
                if message["type"] == "next" and not errors:
                    cursor = message["payload"]["data"]["decisionEvents"]["id"]
                    seen.streamed.append(cursor)
                    continue
                assert codes == {"UNAVAILABLE"}, message
                # Resumed from the last decision received whole.
                seen.stream_endings.append(f"{message['type']} UNAVAILABLE")
                break


async def terminate_every_round(owner: asyncpg.Connection, database: str, seen: Seen) -> None:
    for round_number in range(1, ROUNDS + 1):
        # Progress is the signal: each round lands mid-run, under load.
        while len(seen.acknowledged) < round_number * ITEMS // (ROUNDS + 1):
            seen.decided.clear()
            await seen.decided.wait()
        seen.terminated.append(await owner.fetchval(TERMINATE, APP_ROLE, database))


async def test_terminating_every_casework_backend_under_load_is_never_internal(
    test_database: TestDatabase, owner_db: Database
) -> None:
    make = token_maker(owner_db)
    reviewers = [await make(f"reviewer-{n}", Role.REVIEWER, "kyc") for n in range(REVIEWERS)]
    async with serve_kyc(test_database, owner_db, ttl=LEASE_TTL_SECONDS) as (casework, tokens):
        client = casework.api.client
        await casework.api.enqueue(
            tokens.integration, "kyc", {f"c-{n}": {"n": n} for n in range(ITEMS)}
        )
        seen = Seen()
        # The integration's history: it has processed this one, and resumes after it.
        await review_one(client, seen, reviewers[0])
        cursor = next(iter(seen.acknowledged.values()))
        owner = await asyncpg.connect(test_database.owner_dsn)
        try:
            async with graphql_socket(casework.url, tokens.integration) as barrier:
                await subscriptions_started(barrier, "kyc")
            following = asyncio.create_task(follow(casework.url, tokens.integration, seen, cursor))
            work = [review(client, seen, token) for token in reviewers]
            try:
                await asyncio.wait_for(
                    asyncio.gather(*work, terminate_every_round(owner, test_database.name, seen)),
                    RUN_SECONDS,
                )
                await asyncio.wait_for(following, RUN_SECONDS)
            except BaseException as error:
                following.cancel()
                raise AssertionError(
                    f"{error!r}; seen {seen}; server log:\n" + "".join(casework.log[-60:])
                ) from error
            table = await owner.fetch(
                "SELECT id::text, item_id::text FROM review_decisions WHERE queue = 'kyc' "
                "ORDER BY review_decisions.id"
            )
        finally:
            await owner.close()

    context = f"seen {seen}; server log:\n" + "".join(casework.log[-60:])
    # Every termination round found the server's connections (pool and listener).
    assert len(seen.terminated) == ROUNDS, context
    assert all(seen.terminated), context
    # Every item decided once, and each decision is the one its reviewer was told about.
    assert len(table) == ITEMS == len({row["item_id"] for row in table}), context
    assert {row["item_id"]: row["id"] for row in table} == seen.acknowledged, context
    # The stream: every decision after the cursor, each once (in commit order, which
    # concurrent reviewers make differ from the ids' order).
    assert len(set(seen.streamed)) == len(seen.streamed), context
    assert sorted(seen.streamed, key=int) == [row["id"] for row in table][1:], context
    # The server said "unavailable" for what failed, never "Unexpected error.".
    casework.assert_no_traceback()


async def review_one(client: httpx.AsyncClient, seen: Seen, token: str) -> None:
    data = await call(client, seen, token, CLAIM, queue="kyc")
    entry = decision_input(data["claimNext"], "APPROVE", "documents_ok")
    result = (await call(client, seen, token, DECIDE, input=entry))["submitDecision"]
    seen.acknowledged[data["claimNext"]["item"]["id"]] = result["decision"]["id"]
