"""The supplier-onboarding walk-through, end to end over the API: the uploaded document
names a different legal entity than the supplier record."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import GraphQL
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, People
from tests.exceptions.operations import (
    APPROVE_CORRECTION,
    ATTACH_EVIDENCE,
    EXCEPTION,
    REGISTRY_EVIDENCE,
    REPORT_REDRIVE_RESULT,
    REQUEST_REDRIVE,
    SUBMIT_CORRECTION,
    claim,
    correction_input,
    raise_mismatch,
    release,
    run,
    under_claim,
)
from tests.exceptions.states import CORRECTION

# Every test here works in the supplier-onboarding workflow, set up over the API.
pytestmark = pytest.mark.usefixtures("supplier_workflow")


async def correct_and_approve(gql: GraphQL, people: People, exception_id: str) -> int:
    """Claim, attach evidence, correct (sam); approve (ann). Returns the approved version."""
    mine = await claim(gql, people.sam, OWNER_QUEUE)
    assert mine["item"]["exception"]["id"] == exception_id
    token = mine["leaseToken"]
    evidence = under_claim(
        exception_id,
        token,
        evidence=[REGISTRY_EVIDENCE],
        note="The registry lists Acme Holdings Ltd at the same address.",
    )
    attached = await run(gql, people.sam, ATTACH_EVIDENCE, input=evidence)
    assert attached["__typename"] == "ExceptionUpdated", attached
    correction = correction_input(
        exception_id,
        token,
        changes=CORRECTION,
        evidence=["ticket://procurement/PRC-311"],
        note="The supplier traded under the holding's name; record updated.",
    )
    corrected = await run(gql, people.sam, SUBMIT_CORRECTION, input=correction)
    assert corrected["__typename"] == "ExceptionUpdated", corrected
    version: int = corrected["exception"]["version"]
    assert corrected["exception"]["state"] == "AWAITING_APPROVAL"
    assert corrected["exception"]["item"]["queue"] == APPROVAL_QUEUE

    # The corrector may not approve his own correction, even with an approver's token.
    own = await claim(gql, people.sam_as_approver, APPROVAL_QUEUE)
    own_approval = under_claim(exception_id, own["leaseToken"], version=version)
    refused = await run(gql, people.sam_as_approver, APPROVE_CORRECTION, input=own_approval)
    assert refused["__typename"] == "NotPermitted", refused
    assert "four-eyes" in refused["message"]
    await release(gql, people.sam_as_approver, own["item"]["id"], own["leaseToken"])

    theirs = await claim(gql, people.ann, APPROVAL_QUEUE)
    approval = under_claim(
        exception_id, theirs["leaseToken"], version=version, note="Registry extract matches."
    )
    approved = await run(gql, people.ann, APPROVE_CORRECTION, input=approval)
    assert approved["__typename"] == "ExceptionUpdated", approved
    assert approved["exception"]["state"] == "REDRIVE_PENDING"
    assert approved["exception"]["item"]["state"] == "PARKED"
    return version


async def request_redrive(
    gql: GraphQL, people: People, exception_id: str, version: int
) -> dict[str, Any]:
    return await run(
        gql,
        people.ann,
        REQUEST_REDRIVE,
        input={"exceptionId": exception_id, "version": version},
    )


async def report(
    gql: GraphQL, people: People, key: str, *, succeeded: bool, detail: str
) -> dict[str, Any]:
    """The owning system reports the redrive's result; the result, recorded."""
    reported = await run(
        gql,
        people.erp,
        REPORT_REDRIVE_RESULT,
        input={"redriveKey": key, "succeeded": succeeded, "detail": detail},
    )
    assert reported["__typename"] == "RedriveResultRecorded", reported
    return reported


async def test_walkthrough_to_closed_corrected(gql: GraphQL, people: People) -> None:
    raised = await raise_mismatch(gql, people.erp)
    assert raised["id"].startswith("exc_")
    assert raised["state"] == "NEEDS_REVIEW"
    assert raised["ownerRole"] == OWNER_QUEUE
    assert raised["attempts"] == 1
    assert "SUBMIT_CORRECTION" in raised["allowedActions"]

    version = await correct_and_approve(gql, people, raised["id"])
    assert version == 1

    queued = await request_redrive(gql, people, raised["id"], version)
    assert queued["__typename"] == "RedriveQueued", queued
    key = queued["redriveKey"]
    assert key == "supplier_onboarding:SUP-1042:v1"
    # Nothing was marked stale: the flow resumes after its last completed step.
    assert queued["exception"]["redrive"]["resumeAfter"] == "verify_bank_account"

    again = await request_redrive(gql, people, raised["id"], version)
    assert again == {**again, "__typename": "AlreadyQueued", "redriveKey": key}

    reported = await report(gql, people, key, succeeded=True, detail="Supplier SUP-1042 onboarded.")
    assert reported["alreadyReported"] is False
    closed = reported["exception"]
    assert (closed["state"], closed["closure"]) == ("CLOSED", "CORRECTED")
    assert closed["redrive"]["succeeded"] is True

    history = (await gql(people.manager, EXCEPTION, id=raised["id"]))["data"]["exception"]
    kinds = [event["kind"] for event in history["events"]]
    assert kinds == [
        "raised",
        "evidence_attached",
        "correction_submitted",
        "correction_approved",
        "redrive_requested",
        "redrive_succeeded",
    ]
    actors = [(event["actor"], event["actorRole"]) for event in history["events"]]
    assert actors == [
        ("erp-onboarding", "integration"),
        ("sam", "reviewer"),
        ("sam", "reviewer"),
        ("ann", "approver"),
        ("ann", "approver"),
        ("erp-onboarding", "integration"),
    ]
    assert history["events"][1]["evidence"] == ["registry://companies-house/09876543"]
    assert history["events"][-1]["redriveKey"] == key
    assert [event["version"] for event in history["events"]] == [0, 0, 1, 1, 1, 1]
    # The original evidence stays beside what was added.
    assert history["evidence"] == [
        "docstore://suppliers/SUP-1042/certificate-of-incorporation.pdf",
        "registry://companies-house/09876543",
        "ticket://procurement/PRC-311",
    ]
    assert history["currentCorrection"]["changes"] == CORRECTION
    assert history["currentCorrection"]["correctedBy"] == "sam"

    # The owning system retrying its report changes nothing.
    repeated = await run(
        gql, people.erp, REPORT_REDRIVE_RESULT, input={"redriveKey": key, "succeeded": True}
    )
    assert repeated["__typename"] == "RedriveResultRecorded"
    assert repeated["alreadyReported"] is True
    assert len(repeated["exception"]["events"]) == len(kinds)


async def test_failed_redrive_returns_to_needs_review(gql: GraphQL, people: People) -> None:
    raised = await raise_mismatch(gql, people.erp)
    version = await correct_and_approve(gql, people, raised["id"])
    queued = await request_redrive(gql, people, raised["id"], version)
    key = queued["redriveKey"]

    reported = await report(gql, people, key, succeeded=False, detail="ERP rejected the LEI.")
    back = reported["exception"]
    assert back["state"] == "NEEDS_REVIEW"
    assert back["attempts"] == 2
    assert back["closure"] is None
    assert back["item"] == {**back["item"], "queue": OWNER_QUEUE, "state": "PENDING"}
    assert back["events"][-1]["kind"] == "redrive_failed"
    assert back["events"][-1]["detail"] == "ERP rejected the LEI."

    # The same version cannot be redriven again; a new correction gets a new key.
    stale = await request_redrive(gql, people, raised["id"], version)
    assert stale["__typename"] == "AlreadyQueued", stale
    second = await correct_and_approve(gql, people, raised["id"])
    assert second == version + 1
    queued_again = await request_redrive(gql, people, raised["id"], second)
    assert queued_again["redriveKey"] == f"supplier_onboarding:SUP-1042:v{second}"
