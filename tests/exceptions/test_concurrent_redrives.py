"""Many callers at the same moment, each on its own connection: a redrive is queued once per
version, a raise creates one exception per open (workflow, record, reason), and a claim
hands an exception to exactly one operator."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import partial
from typing import Any

import asyncpg
import pytest

from server.domain.exceptions.actions import Raised, raise_exception
from server.domain.exceptions.redrives import RedriveQueued, request_redrive
from server.domain.failures import AlreadyQueued
from server.domain.model import Principal, Role
from server.store.database import Database
from server.store.queries import Queries
from tests.api.conftest import GraphQL
from tests.conftest import TestDatabase
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, WORKFLOW, People
from tests.exceptions.domain_drivers import (
    ERP,
    all_at_once,
    approved_correction,
    event_rows,
    mismatch,
    own_connections,
)
from tests.exceptions.operations import CLAIM, CLOSE_EXCEPTION, raise_mismatch, run

# Every test here works in the supplier-onboarding workflow, set up over the API.
pytestmark = pytest.mark.usefixtures("supplier_workflow")

REQUESTERS = 10
RAISERS = 20
CLAIM_ROUNDS = 10


async def test_concurrent_redrive_requests_queue_one_redrive(
    db: Database,
    test_database: TestDatabase,
    queries: Queries,
    owner_conn: asyncpg.Connection,
) -> None:
    exception_id, version = await approved_correction(db, "SUP-2001")
    key = f"{WORKFLOW}:SUP-2001:v{version}"
    # Distinct approvers, so the one row written names the one caller told RedriveQueued.
    requesters = [
        Principal(f"approver-{n:02d}", Role.APPROVER, frozenset({APPROVAL_QUEUE}))
        for n in range(REQUESTERS)
    ]

    async with own_connections(test_database, queries, REQUESTERS) as conns:
        results = await all_at_once(
            [
                partial(request_redrive, conn, who, exception_id, version)
                for conn, who in zip(conns, requesters, strict=True)
            ]
        )

    queued = [
        (who, result)
        for who, result in zip(requesters, results, strict=True)
        if isinstance(result, RedriveQueued)
    ]
    already = [result for result in results if isinstance(result, AlreadyQueued)]
    assert (len(queued), len(already)) == (1, REQUESTERS - 1), results
    [(winner, won)] = queued
    assert won.redrive_key == key
    assert won.exception.id == exception_id
    assert {(a.exception_id, a.redrive_key) for a in already} == {(exception_id, key)}

    redrives = await owner_conn.fetch(
        "SELECT key, version, requested_by, result FROM exception_redrives WHERE exception_id = $1",
        exception_id,
    )
    assert [tuple(row) for row in redrives] == [(key, version, winner.user, None)]
    requested = [
        (row["actor"], row["actor_role"], row["data"])
        for row in await event_rows(owner_conn, exception_id)
        if row["kind"] == "redrive_requested"
    ]
    assert len(requested) == 1, requested
    actor, actor_role, data = requested[0]
    assert (actor, actor_role) == (winner.user, "approver")
    assert data["redriveKey"] == key
    state = await owner_conn.fetchval("SELECT state FROM exceptions WHERE id = $1", exception_id)
    assert state == "redrive_pending"


async def test_concurrent_raises_of_one_exception_create_it_once(
    db: Database,
    test_database: TestDatabase,
    queries: Queries,
    owner_conn: asyncpg.Connection,
) -> None:
    shared = mismatch("SUP-2002")
    # Each raiser also brings a reference of its own: a recurrence adds what is new to it.
    raises = [
        replace(shared, evidence=[*shared.evidence, f"log://erp/run-{n:02d}"])
        for n in range(RAISERS)
    ]

    async with own_connections(test_database, queries, RAISERS) as conns:
        results = await all_at_once(
            [
                partial(raise_exception, conn, ERP, raised)
                for conn, raised in zip(conns, raises, strict=True)
            ]
        )

    assert all(isinstance(result, Raised) for result in results), results
    outcomes = [result for result in results if isinstance(result, Raised)]
    assert sorted(r.created for r in outcomes) == [False] * (RAISERS - 1) + [True]
    exception_ids = {r.exception.id for r in outcomes}
    assert len(exception_ids) == 1, exception_ids
    [exception_id] = exception_ids

    rows = await owner_conn.fetch(
        "SELECT id, recurrences, state, item_id, evidence FROM exceptions "
        "WHERE workflow = $1 AND source_record_id = $2",
        WORKFLOW,
        "SUP-2002",
    )
    assert [(r["id"], r["recurrences"], r["state"]) for r in rows] == [
        (exception_id, RAISERS - 1, "needs_review")
    ]
    evidence = rows[0]["evidence"]
    assert sorted(evidence) == sorted({ref for raised in raises for ref in raised.evidence})
    assert evidence[0] == shared.evidence[0]
    items = await owner_conn.fetch(
        "SELECT id, queue, state FROM review_items WHERE kind = 'exception'"
    )
    assert [tuple(item) for item in items] == [(rows[0]["item_id"], OWNER_QUEUE, "pending")]
    kinds = [row["kind"] for row in await event_rows(owner_conn, exception_id)]
    assert kinds[0] == "raised"
    assert Counter(kinds) == {"raised": 1, "recurred": RAISERS - 1}


async def test_two_operators_racing_for_one_exception_one_gets_it(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    operators = {people.sam: "sam", people.sue: "sue"}
    winners: Counter[str] = Counter()

    async def claim_as(token: str) -> dict[str, Any]:
        return await run(gql, token, CLAIM, queue=OWNER_QUEUE)

    for round_ in range(CLAIM_ROUNDS):
        exception = await raise_mismatch(gql, people.erp, source_record_id=f"SUP-3{round_:03d}")
        results = await all_at_once([partial(claim_as, token) for token in operators])

        won = [
            (token, result)
            for token, result in zip(operators, results, strict=True)
            if result["__typename"] == "Claim"
        ]
        lost = [result for result in results if result["__typename"] == "QueueEmpty"]
        assert (len(won), len(lost)) == (1, 1), results
        [(token, claim)] = won
        assert claim["item"]["exception"]["id"] == exception["id"]
        winners[operators[token]] += 1
        # Closing it leaves the queue empty for the next round's single exception.
        closed = await run(
            gql,
            token,
            CLOSE_EXCEPTION,
            input={
                "exceptionId": exception["id"],
                "leaseToken": claim["leaseToken"],
                "closure": "OBSOLETE",
            },
        )
        assert closed["__typename"] == "ExceptionUpdated", closed
        assert closed["exception"]["events"][-1]["actor"] == operators[token]

    assert sum(winners.values()) == CLAIM_ROUNDS
    leases = await owner_conn.fetch(
        "SELECT lease_count, state, count(*) AS items FROM review_items "
        "WHERE kind = 'exception' GROUP BY 1, 2"
    )
    assert [tuple(row) for row in leases] == [(1, "parked", CLAIM_ROUNDS)]
