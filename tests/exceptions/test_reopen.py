"""Reopening closed exceptions, and raising the same exception again, over the API.

A reopen must not rewrite what happened: the closed record's history stays as it was, and
the reopen is one more event and one more count. While an exception is open, raising it
again is a recurrence of it; once it is closed, a raise is a new exception.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.api.conftest import GraphQL
from tests.exceptions.conftest import OWNER_QUEUE, People
from tests.exceptions.operations import RAISE, REOPEN_EXCEPTION, mismatch_input, run
from tests.exceptions.states import (
    Driven,
    claim_own,
    close,
    drive,
    queue_redrive,
    raised,
    read,
    redrive_pending,
    report,
    written,
)

# Every test here works in the supplier-onboarding workflow, set up over the API.
pytestmark = pytest.mark.usefixtures("supplier_workflow")

REASON = "The supplier sent a new certificate of incorporation."

# An open exception: the state it was driven into, and the exception.
Opened = tuple[str, Driven]


@pytest.fixture(params=["NEEDS_REVIEW", "AWAITING_APPROVAL", "REDRIVE_PENDING"])
async def open_exception(
    request: pytest.FixtureRequest, supplier_workflow: str, gql: GraphQL, people: People
) -> Opened:
    """A fresh exception driven into each open state in turn."""
    state: str = request.param
    return state, await drive(gql, people, state, await raised(gql, people))


async def reopen(
    gql: GraphQL, people: People, exception_id: str, reason: str = REASON
) -> dict[str, Any]:
    return await run(
        gql, people.sam, REOPEN_EXCEPTION, input={"exceptionId": exception_id, "reason": reason}
    )


async def reopened(gql: GraphQL, people: People, exception_id: str, reason: str) -> dict[str, Any]:
    result = await reopen(gql, people, exception_id, reason)
    assert result["__typename"] == "ExceptionUpdated", result
    exception: dict[str, Any] = result["exception"]
    return exception


async def closed_as_corrected(gql: GraphQL, people: People) -> Driven:
    driven = await queue_redrive(
        gql, people, await redrive_pending(gql, people, await raised(gql, people))
    )
    closed = await report(gql, people, driven, succeeded=True)
    assert (closed["state"], closed["closure"]) == ("CLOSED", "CORRECTED"), closed
    return driven


async def closed_as(gql: GraphQL, people: People, closure: str) -> Driven:
    if closure == "CORRECTED":
        return await closed_as_corrected(gql, people)
    driven = await raised(gql, people)
    await close(gql, people, driven, closure)
    return driven


@pytest.mark.parametrize("closure", ["DUPLICATE", "OBSOLETE", "CORRECTED"])
async def test_a_reopened_exception_is_back_in_review_with_its_history(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    closure: str,
) -> None:
    driven = await closed_as(gql, people, closure)
    before = await read(gql, people, driven.id)

    after = await reopened(gql, people, driven.id, REASON)

    assert after["state"] == "NEEDS_REVIEW"
    assert after["closure"] is None
    assert after["reopenCount"] == 1
    assert after["ownerRole"] == OWNER_QUEUE
    assert after["item"] == {**after["item"], "queue": OWNER_QUEUE, "state": "PENDING"}
    assert after["allowedActions"] == ["ATTACH_EVIDENCE", "SUBMIT_CORRECTION", "CLOSE_EXCEPTION"]
    # What the exception had been through stays as it was.
    for unchanged in ("version", "attempts", "evidence", "currentCorrection", "redrive"):
        assert after[unchanged] == before[unchanged], unchanged
    assert after["events"][:-1] == before["events"]
    assert after["events"][-1] == {
        **after["events"][-1],
        "kind": "reopened",
        "actor": "sam",
        "actorRole": "reviewer",
        "fromState": "CLOSED",
        "toState": "NEEDS_REVIEW",
        "version": before["version"],
        "detail": REASON,
    }
    # The reopen event keeps the closure it undid; the record itself no longer has one.
    row = await owner_conn.fetchrow(
        "SELECT e.closed_at, v.data->>'closure' AS undone FROM exceptions AS e "
        "JOIN exception_events AS v ON v.exception_id = e.id AND v.kind = 'reopened' "
        "WHERE e.id = $1",
        driven.id,
    )
    assert row is not None
    assert (row["closed_at"], row["undone"]) == (None, closure.lower())
    # It can be worked again: it sits in its owner's queue, claimable.
    await claim_own(gql, people.sam, OWNER_QUEUE, driven)


async def test_each_reopen_is_counted(gql: GraphQL, people: People) -> None:
    driven = await raised(gql, people)
    await close(gql, people, driven, "DUPLICATE")
    first = await reopened(gql, people, driven.id, "It was not a duplicate after all.")
    await close(gql, people, driven, "OBSOLETE")

    second = await reopened(gql, people, driven.id, "The supplier is onboarding again.")

    assert (first["reopenCount"], second["reopenCount"]) == (1, 2)
    assert [(e["kind"], e["detail"]) for e in second["events"]] == [
        ("raised", mismatch_input()["detail"]),
        ("closed", None),
        ("reopened", "It was not a duplicate after all."),
        ("closed", None),
        ("reopened", "The supplier is onboarding again."),
    ]


async def test_an_open_exception_cannot_be_reopened(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection, open_exception: Opened
) -> None:
    state, driven = open_exception
    before = await written(owner_conn)

    result = await reopen(gql, people, driven.id)

    assert result == {
        **result,
        "__typename": "InvalidTransition",
        "state": state,
        "action": "REOPEN_EXCEPTION",
    }
    assert await written(owner_conn) == before


async def test_of_two_reopens_one_wins(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    driven = await closed_as(gql, people, "DUPLICATE")
    await reopened(gql, people, driven.id, REASON)
    before = await written(owner_conn)

    again = await reopen(gql, people, driven.id)

    assert again == {**again, "__typename": "InvalidTransition", "state": "NEEDS_REVIEW"}
    assert await written(owner_conn) == before
    assert (await read(gql, people, driven.id))["reopenCount"] == 1


async def test_raising_an_open_exception_again_is_a_recurrence(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection, open_exception: Opened
) -> None:
    state, driven = open_exception

    repeats = [await run(gql, people.erp, RAISE, input=mismatch_input()) for _ in range(2)]

    assert [(r["created"], r["exception"]["id"]) for r in repeats] == [(False, driven.id)] * 2
    last = repeats[-1]["exception"]
    assert (last["state"], last["recurrences"]) == (state, 2)
    assert [e["kind"] for e in last["events"]][-2:] == ["recurred", "recurred"]
    assert await owner_conn.fetchval("SELECT count(*) FROM exceptions") == 1


async def test_a_raise_after_closing_is_a_new_exception_and_the_old_one_stays_closed(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    old = await closed_as(gql, people, "DUPLICATE")
    old_before = await read(gql, people, old.id)

    new = await run(gql, people.erp, RAISE, input=mismatch_input())

    assert new["__typename"] == "ExceptionRaised", new
    assert new["created"] is True
    assert new["exception"]["id"] != old.id
    assert (new["exception"]["state"], new["exception"]["recurrences"]) == ("NEEDS_REVIEW", 0)
    assert await read(gql, people, old.id) == old_before

    # Two open exceptions for one workflow, record and reason would split the work.
    before = await written(owner_conn)
    refused = await reopen(gql, people, old.id)
    assert refused == {**refused, "__typename": "InvalidInput", "field": "exceptionId"}
    assert await written(owner_conn) == before

    # Once the new one is closed too, the old one may be reopened.
    newer = Driven(new["exception"]["id"], new["exception"]["item"]["id"], version=0)
    await close(gql, people, newer, "DUPLICATE")
    again = await reopened(gql, people, old.id, REASON)
    assert (again["state"], again["reopenCount"]) == ("NEEDS_REVIEW", 1)
