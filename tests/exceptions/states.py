"""Drivers that bring a fresh exception into each state through the API, each asserting the
step it took; every action with valid arguments; and a snapshot of every row the exception
machinery writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import asyncpg

from tests.api.conftest import GraphQL
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, People
from tests.exceptions.operations import (
    APPROVE_CORRECTION,
    ATTACH_EVIDENCE,
    CLOSE_EXCEPTION,
    EXCEPTION,
    REGISTRY_EVIDENCE,
    REJECT_CORRECTION,
    REOPEN_EXCEPTION,
    REPORT_REDRIVE_RESULT,
    REQUEST_REDRIVE,
    SUBMIT_CORRECTION,
    claim,
    correction_input,
    raise_mismatch,
    run,
    under_claim,
)

CORRECTION = {"legalEntityId": "LEI-5493001KJTIIGC8Y1R12", "legalName": "Acme Holdings Ltd"}
CORRECTION_EVIDENCE = ["ticket://procurement/PRC-311"]
REJECTION_REASON = "The registry extract is for another company number."


@dataclass(frozen=True)
class Driven:
    """An exception brought into a state, with what later arguments need."""

    id: str
    item_id: str
    version: int
    # The key of the newest redrive on record, if one was requested.
    redrive_key: str | None = None


Arguments = Callable[[Driven, str], dict[str, Any]]


@dataclass(frozen=True)
class Action:
    name: str  # as InvalidTransition names it, in lower case
    operation: str
    succeeded_as: str  # the payload type of a success
    performer: str  # who of `people` does it
    needs_lease: bool
    arguments: Arguments


ACTIONS: dict[str, Action] = {
    "attachEvidence": Action(
        "attach_evidence",
        ATTACH_EVIDENCE,
        "ExceptionUpdated",
        "sam",
        True,
        lambda x, lease: under_claim(x.id, lease, evidence=[REGISTRY_EVIDENCE]),
    ),
    "submitCorrection": Action(
        "submit_correction",
        SUBMIT_CORRECTION,
        "ExceptionUpdated",
        "sam",
        True,
        lambda x, lease: correction_input(
            x.id, lease, changes=CORRECTION, evidence=["ticket://procurement/PRC-312"]
        ),
    ),
    "approveCorrection": Action(
        "approve_correction",
        APPROVE_CORRECTION,
        "ExceptionUpdated",
        "ann",
        True,
        lambda x, lease: under_claim(x.id, lease, version=x.version),
    ),
    "rejectCorrection": Action(
        "reject_correction",
        REJECT_CORRECTION,
        "ExceptionUpdated",
        "ann",
        True,
        lambda x, lease: under_claim(x.id, lease, reason=REJECTION_REASON),
    ),
    "requestRedrive": Action(
        "request_redrive",
        REQUEST_REDRIVE,
        "RedriveQueued",
        "ann",
        False,
        lambda x, _: {"exceptionId": x.id, "version": x.version},
    ),
    "reportRedriveResult": Action(
        "report_redrive_result",
        REPORT_REDRIVE_RESULT,
        "RedriveResultRecorded",
        "erp",
        False,
        lambda x, _: {"redriveKey": x.redrive_key, "succeeded": True},
    ),
    "closeException": Action(
        "close_exception",
        CLOSE_EXCEPTION,
        "ExceptionUpdated",
        "sam",
        True,
        lambda x, lease: under_claim(x.id, lease, closure="OBSOLETE"),
    ),
    "reopenException": Action(
        "reopen_exception",
        REOPEN_EXCEPTION,
        "ExceptionUpdated",
        "sam",
        False,
        lambda x, _: {"exceptionId": x.id, "reason": "The supplier sent a new certificate."},
    ),
}


def token_of(people: People, who: str) -> str:
    return {"sam": people.sam, "ann": people.ann, "erp": people.erp}[who]


async def raised(gql: GraphQL, people: People, **overrides: Any) -> Driven:
    exception = await raise_mismatch(gql, people.erp, **overrides)
    assert exception["state"] == "NEEDS_REVIEW", exception
    return Driven(exception["id"], exception["item"]["id"], exception["version"])


async def claim_own(gql: GraphQL, token: str, queue: str, driven: Driven) -> str:
    """Claims the exception's item; each test has one claimable exception per queue."""
    claimed = await claim(gql, token, queue)
    assert claimed["item"]["id"] == driven.item_id, claimed
    token_: str = claimed["leaseToken"]
    return token_


async def correct(gql: GraphQL, people: People, driven: Driven) -> Driven:
    """Sam claims it from the owner queue and submits a correction: it awaits approval."""
    lease = await claim_own(gql, people.sam, OWNER_QUEUE, driven)
    correction = correction_input(
        driven.id, lease, changes=CORRECTION, evidence=CORRECTION_EVIDENCE
    )
    result = await run(gql, people.sam, SUBMIT_CORRECTION, input=correction)
    assert result["__typename"] == "ExceptionUpdated", result
    assert result["exception"]["state"] == "AWAITING_APPROVAL", result
    return replace(driven, version=result["exception"]["version"])


async def approve(gql: GraphQL, people: People, driven: Driven) -> Driven:
    """Ann, who did not correct it, claims it from the approval queue and approves."""
    lease = await claim_own(gql, people.ann, APPROVAL_QUEUE, driven)
    approval = under_claim(driven.id, lease, version=driven.version)
    result = await run(gql, people.ann, APPROVE_CORRECTION, input=approval)
    assert result["__typename"] == "ExceptionUpdated", result
    assert result["exception"]["state"] == "REDRIVE_PENDING", result
    return driven


async def queue_redrive(gql: GraphQL, people: People, driven: Driven) -> Driven:
    result = await run(
        gql,
        people.ann,
        REQUEST_REDRIVE,
        input={"exceptionId": driven.id, "version": driven.version},
    )
    assert result["__typename"] == "RedriveQueued", result
    assert result["exception"]["state"] == "REDRIVE_PENDING", result
    return replace(driven, redrive_key=result["redriveKey"])


async def report(
    gql: GraphQL, people: People, driven: Driven, *, succeeded: bool
) -> dict[str, Any]:
    """The owning system's durable result; returns the exception after it."""
    result = await run(
        gql,
        people.erp,
        REPORT_REDRIVE_RESULT,
        input={"redriveKey": driven.redrive_key, "succeeded": succeeded},
    )
    assert result["__typename"] == "RedriveResultRecorded", result
    assert result["alreadyReported"] is False, result
    exception: dict[str, Any] = result["exception"]
    return exception


async def close(gql: GraphQL, people: People, driven: Driven, closure: str) -> dict[str, Any]:
    """Sam claims it from the owner queue and closes it without a correction."""
    lease = await claim_own(gql, people.sam, OWNER_QUEUE, driven)
    closing = under_claim(driven.id, lease, closure=closure)
    result = await run(gql, people.sam, CLOSE_EXCEPTION, input=closing)
    assert result["__typename"] == "ExceptionUpdated", result
    assert (result["exception"]["state"], result["exception"]["closure"]) == ("CLOSED", closure)
    exception: dict[str, Any] = result["exception"]
    return exception


async def redrive_pending(gql: GraphQL, people: People, driven: Driven) -> Driven:
    return await approve(gql, people, await correct(gql, people, driven))


async def after_failed_redrive(gql: GraphQL, people: People) -> Driven:
    """Raised, corrected, approved and redriven, and the redrive failed: back in review,
    with an answered redrive on record."""
    driven = await queue_redrive(
        gql, people, await redrive_pending(gql, people, await raised(gql, people))
    )
    back = await report(gql, people, driven, succeeded=False)
    assert back["state"] == "NEEDS_REVIEW", back
    return driven


async def drive(gql: GraphQL, people: People, state: str, start: Driven) -> Driven:
    """From an exception in NEEDS_REVIEW to `state`, by the shortest path the machine has."""
    match state:
        case "NEEDS_REVIEW":
            return start
        case "AWAITING_APPROVAL":
            return await correct(gql, people, start)
        case "REDRIVE_PENDING":
            return await redrive_pending(gql, people, start)
        case "CLOSED":
            await close(gql, people, start, "OBSOLETE")
            return start
    raise AssertionError(f"no path to {state}")


async def read(gql: GraphQL, people: People, exception_id: str) -> dict[str, Any]:
    body = await gql(people.manager, EXCEPTION, id=exception_id)
    assert "errors" not in body, body
    exception: dict[str, Any] = body["data"]["exception"]
    assert exception is not None, body
    return exception


Snapshot = dict[str, list[str]]

# Every table a raise or an exception action writes, with the order that makes it stable.
_WRITTEN = {
    "review_items": "id",
    "exceptions": "id",
    "exception_events": "id",
    "exception_corrections": "workflow, source_record_id, version",
    "exception_redrives": "key",
}


async def written(owner: asyncpg.Connection) -> Snapshot:
    """Every row the exception machinery writes, as text, to show a refusal wrote nothing."""
    return {
        table: [
            row[0] for row in await owner.fetch(f"SELECT t::text FROM {table} AS t ORDER BY {key}")
        ]
        for table, key in _WRITTEN.items()
    }


async def event_count(owner: asyncpg.Connection, exception_id: str) -> int:
    count: int = await owner.fetchval(
        "SELECT count(*) FROM exception_events WHERE exception_id = $1", exception_id
    )
    return count
