"""A retried submission is answered, not refused: a console whose answer was lost sends the
same verdict again under the same lease and learns that it was recorded. Anything else under
a used lease is stale, and only its holder learns that it was used. The last test does it
over HTTP against `casework serve`, with an answer really lost: the connection is dropped
unread once the decision is recorded."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from server.domain.failures import InvalidInput, StaleLease
from server.domain.identity.tokens import create_token
from server.domain.model import Decision, Role, Verdict
from server.domain.review.decisions import Replayed, submit_decision
from server.store.database import Database
from tests.api.helpers import decision_input
from tests.conftest import TestDatabase, reviewer
from tests.integration.helpers import (
    claim,
    claimed_one,
    decide,
    decision_rows,
    enqueue_one,
    snapshot,
    verdict_for,
)
from tests.live.helpers import POLL_SECONDS, serve_casework

ALICE = reviewer("alice", "kyc")


async def test_the_same_submission_again_is_a_replay_and_writes_nothing(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    held = await claimed_one(db, kyc_queue, ALICE)
    submission = dataclasses.replace(verdict_for(held), note="passport matches")
    recorded = await submit_decision(db, ALICE, submission)
    assert isinstance(recorded, Decision), recorded
    before = await snapshot(owner_conn)

    again = await submit_decision(db, ALICE, submission)

    assert again == Replayed(recorded), again
    assert await snapshot(owner_conn) == before


@pytest.mark.parametrize(
    "change",
    [
        {"verdict": Verdict.REJECT, "reason_code": "name_mismatch"},
        {"reason_code": "name_mismatch"},
        {"evidence_hash": "0" * 64},
        {"note": "a second thought"},
    ],
    ids=["verdict", "reason_code", "evidence_hash", "note"],
)
async def test_a_differing_submission_under_a_used_lease_is_stale_and_says_so(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, change: dict[str, Any]
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1")
    held = await claim(db, ALICE)
    recorded = await decide(db, ALICE, held)
    before = await snapshot(owner_conn)

    refused = await submit_decision(db, ALICE, dataclasses.replace(verdict_for(held), **change))

    assert isinstance(refused, StaleLease), refused
    assert (refused.item_id, refused.decided_under_this_lease, refused.decision_id) == (
        item.id,
        True,
        recorded.id,
    )
    assert f"decision {recorded.id} was recorded under this lease" in refused.message
    assert await snapshot(owner_conn) == before


async def test_another_reviewer_with_the_lease_token_learns_nothing(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1")
    held = await claim(db, ALICE)
    await decide(db, ALICE, held)
    before = await snapshot(owner_conn)
    bob = reviewer("bob", "kyc")

    # Bob presents Alice's token with her very verdict: the same answer as any lease that is
    # not his, with nothing about her decision in it.
    assert await submit_decision(db, bob, verdict_for(held)) == StaleLease(item.id)
    assert await submit_decision(
        db, bob, verdict_for(held, Verdict.REJECT, "name_mismatch")
    ) == StaleLease(item.id)
    assert await snapshot(owner_conn) == before


async def test_a_token_that_lost_the_queue_is_not_answered_with_the_decision(
    db: Database, kyc_queue: str
) -> None:
    held = await claimed_one(db, kyc_queue, ALICE)
    await decide(db, ALICE, held)
    # Alice's token re-issued without kyc: the scope fence holds for replays too.
    refused = await submit_decision(db, reviewer("alice", "payouts"), verdict_for(held))
    # Out of the token's scope, the item answers as missing.
    assert isinstance(refused, InvalidInput), refused
    assert refused.field == "itemId"


async def test_an_escalation_is_replayed_although_the_item_moved_and_is_pending(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1")
    held = await claim(db, ALICE)
    escalation = verdict_for(held, Verdict.ESCALATE, "needs_senior")
    recorded = await submit_decision(db, ALICE, escalation)
    assert isinstance(recorded, Decision), recorded
    moved = await owner_conn.fetchrow(
        "SELECT queue, state FROM review_items WHERE id = $1", item.id
    )
    assert moved is not None
    assert (moved["queue"], moved["state"]) == ("kyc-senior", "pending")

    # Alice's token covers kyc only: the item is now in a queue she cannot see.
    assert await submit_decision(db, ALICE, escalation) == Replayed(recorded)
    differing = await submit_decision(db, ALICE, verdict_for(held))
    assert isinstance(differing, StaleLease), differing
    assert differing.decided_under_this_lease is True
    assert [row["verdict"] for row in await decision_rows(owner_conn, item.id)] == ["escalate"]


DECIDE = """
mutation($input: SubmitDecisionInput!) {
  submitDecision(input: $input) {
    __typename
    ... on DecisionRecorded { replay decision { id verdict reviewer } }
    ... on StaleLease { decidedUnderThisLease decisionId }
  }
}
"""
# How long the server may take to record a decision whose answer nobody reads.
RECORDED_WITHIN_SECONDS = 10.0


async def post_and_drop_the_answer(
    base_url: str, token: str, body: dict[str, Any], recorded: Callable[[], Awaitable[bool]]
) -> None:
    """Sends a request over a raw connection, then drops it unread once `recorded` holds."""
    host, port = base_url.removeprefix("http://").split(":")
    payload = json.dumps(body).encode()
    _, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"POST /graphql HTTP/1.1\r\n"
        + f"Host: {host}\r\nAuthorization: Bearer {token}\r\n".encode()
        + f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RECORDED_WITHIN_SECONDS
    try:
        while True:
            if await recorded():
                return
            if loop.time() > deadline:
                raise AssertionError(f"not recorded within {RECORDED_WITHIN_SECONDS} s")
            await asyncio.sleep(POLL_SECONDS)
    finally:
        writer.transport.abort()


async def test_a_console_that_lost_the_answer_retries_over_http_and_is_answered(
    test_database: TestDatabase,
    owner_db: Database,
    kyc_queue: str,
    db: Database,
    owner_conn: asyncpg.Connection,
) -> None:
    item = await enqueue_one(db, kyc_queue, "cust-1")
    rita = await create_token(owner_db, user="rita", role=Role.REVIEWER, queues=[kyc_queue])
    async with serve_casework(test_database) as casework:
        claimed = await casework.api.claim(rita, kyc_queue)
        submission = {"input": decision_input(claimed, "APPROVE", "documents_ok")}

        async def recorded() -> bool:
            return bool(await decision_rows(owner_conn, item.id))

        await post_and_drop_the_answer(
            casework.url, rita, {"query": DECIDE, "variables": submission}, recorded
        )
        [row] = await decision_rows(owner_conn, item.id)

        retried = (await casework.api.call(rita, DECIDE, **submission))["submitDecision"]
        assert retried == {
            "__typename": "DecisionRecorded",
            "replay": True,
            "decision": {"id": str(row["id"]), "verdict": "APPROVE", "reviewer": "rita"},
        }
        differing = decision_input(claimed, "REJECT", "name_mismatch")
        refused = (await casework.api.call(rita, DECIDE, input=differing))["submitDecision"]
        assert refused == {
            "__typename": "StaleLease",
            "decidedUnderThisLease": True,
            "decisionId": str(row["id"]),
        }
    assert [r["id"] for r in await decision_rows(owner_conn, item.id)] == [row["id"]]
