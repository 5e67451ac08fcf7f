"""Redrives delivered by webhook: a workflow configured with redriveVia WEBHOOK has each
requested redrive POSTed by the worker to its redriveTarget, signed, with the redrive key as
Idempotency-Key and Casework-Redrive-Key. 2xx: delivered (not done: the owning system still
reports the result). 429, 5xx and connection errors: retried with backoff up to
redriveMaxAttempts. Any other 4xx, or running out of attempts: undeliverable, and in the same
transaction the redrive is reported failed by Casework, which sends the exception back to
needs_review.

Against a real PostgreSQL, the real GraphQL app (in-process ASGI), a real HTTP receiver as
the owning system, and an in-process ApplyWorker whose claims and recordings the test awaits.
"""

from __future__ import annotations

import base64
import logging
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from server.domain.exceptions import redrives
from server.domain.exceptions.records import SYSTEM_ACTOR, SYSTEM_ROLE
from server.domain.failures import NotPermitted
from server.effects.webhook import REDRIVE_HEADER
from server.signatures import as_standard_secret
from server.store.database import Database
from server.worker import WorkerStats
from tests.api.conftest import GraphQL
from tests.apply.helpers import (
    COMPLETED_STEPS,
    REDRIVE_SECRET,
    DeliveringWorker,
    OnboardingDesk,
    configure_workflow,
    correct_and_approve,
    delivery_row,
    exception_of,
    redrive_receiver,
    redrive_requested,
    running,
    take_redrives_by_webhook,
)
from tests.apply.receiver import (
    OK,
    Action,
    Policy,
    Reply,
    Request,
    Stall,
    always,
    standard_ok,
    webhook_receiver,
)
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, WORKFLOW, People
from tests.exceptions.operations import (
    REPORT_REDRIVE_RESULT,
    claim,
    run,
)
from tests.exceptions.states import CORRECTION, CORRECTION_EVIDENCE

# Every test here works in the supplier-onboarding workflow, set up over the API.
pytestmark = pytest.mark.usefixtures("supplier_workflow")

SOURCE_RECORD = "SUP-1042"
KEY = f"{WORKFLOW}:{SOURCE_RECORD}:v1"

UNAVAILABLE = Reply(503, body=b"down for maintenance")
THROTTLED = Reply(429, headers=(("Retry-After", "0"),), body=b"slow down")


def answers(*first: Action, then: Action = OK) -> Policy:
    """Answers with `first`, one per request, then always `then`."""
    pending = list(first)
    return lambda request: pending.pop(0) if pending else then


def delivery(exception: dict[str, Any]) -> tuple[Any, ...]:
    """(deliveryState, deliveryAttempts, lastDeliveryError, delivered) of its redrive."""
    redrive = exception["redrive"]
    return (
        redrive["deliveryState"],
        redrive["deliveryAttempts"],
        redrive["lastDeliveryError"],
        redrive["deliveredAt"] is not None,
    )


async def report(
    gql: GraphQL, token: str, key: str, *, succeeded: bool, detail: str | None = None
) -> dict[str, Any]:
    return await run(
        gql,
        token,
        REPORT_REDRIVE_RESULT,
        input={"redriveKey": key, "succeeded": succeeded, "detail": detail},
    )


async def rows_of(conn: asyncpg.Connection, exception_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every row the exception machinery keeps for the exception."""

    async def fetch(sql: str) -> list[dict[str, Any]]:
        return [dict(row) for row in await conn.fetch(sql, exception_id)]

    return {
        "exception": await fetch("SELECT * FROM exceptions WHERE id = $1"),
        "redrives": await fetch("SELECT * FROM exception_redrives WHERE exception_id = $1"),
        "events": await fetch("SELECT * FROM exception_events WHERE exception_id = $1 ORDER BY id"),
        "item": await fetch(
            "SELECT i.* FROM review_items AS i JOIN exceptions AS e ON e.item_id = i.id "
            "WHERE e.id = $1"
        ),
    }


def signed_by_the_secret(request: Request) -> bool:
    """Verified as the owning system would, with PyPI's standardwebhooks: by the workflow's
    secret, and by no other. A webhook configured since Standard Webhooks gets no legacy
    header."""
    other = as_standard_secret("another-erp-signing-secret")
    return (
        standard_ok(REDRIVE_SECRET, request.headers, request.body)
        and not standard_ok(other, request.headers, request.body)
        and not request.legacy
    )


def no_delivery_errors(caplog: pytest.LogCaptureFixture) -> None:
    """The worker never failed to deliver or record (it logs and moves on if it does)."""
    broken = [
        record.getMessage()
        for record in caplog.records
        if record.levelno >= logging.ERROR and "delivering redrive" in record.getMessage()
    ]
    assert broken == [], broken


def body_without_time(request: Request) -> tuple[dict[str, Any], datetime]:
    body = request.json()
    requested_at = datetime.fromisoformat(body.pop("requestedAt"))
    return body, requested_at


def expected_body(exception_id: str, *, attempt: int, resume_after: str, stale: list[str]) -> Any:
    return {
        "redriveKey": KEY,
        "exceptionId": exception_id,
        "workflow": WORKFLOW,
        "sourceRecordId": SOURCE_RECORD,
        "version": 1,
        "reasonCode": "entity_mismatch",
        "completedSteps": COMPLETED_STEPS,
        "blockedStep": "verify_legal_entity",
        "resumeAfter": resume_after,
        "staleSteps": stale,
        "changes": CORRECTION,
        "evidence": CORRECTION_EVIDENCE,
        "correctedBy": "sam",
        "requestedBy": "ann",
        "attempt": attempt,
    }


# --- 1. delivered ------------------------------------------------------------------------------


async def test_a_redrive_is_posted_once_signed_and_closed_only_by_the_owning_systems_report(
    onboarding: OnboardingDesk, caplog: pytest.LogCaptureFixture
) -> None:
    async with webhook_receiver(REDRIVE_SECRET) as erp:
        configured = await take_redrives_by_webhook(onboarding.gql, onboarding.people, erp.url)
        assert configured == {
            "name": WORKFLOW,
            "approvalQueue": APPROVAL_QUEUE,
            "redriveVia": "WEBHOOK",
            "redriveTarget": erp.url,
            "redriveMaxAttempts": 8,
            "redriveTimeoutSeconds": 10.0,
        }
        # The bank account must be verified again: resume after the step before it.
        exception_id, version = await onboarding.approved_mismatch(
            stale_steps=["verify_bank_account"]
        )
        key = await onboarding.request_redrive(exception_id, version)
        assert key == KEY

        # Before any worker runs: due, not attempted.
        queued = await onboarding.exception_of(onboarding.people.manager, exception_id)
        assert delivery(queued) == ("pending", 0, None, False)

        worker = DeliveringWorker(onboarding.db)
        async with running(worker):
            worker.wake()
            await worker.until(lambda s: s.redrives_delivered == 1, "the redrive delivered")
            # Nothing more is due: no second POST.
            await worker.claimed_everything_due()
        assert worker.stats == WorkerStats(redrives_delivered=1)

    [request] = erp.requests
    assert (request.method, request.path) == ("POST", urlsplit(erp.url).path)
    assert request.headers["webhook-id"] == KEY
    assert "idempotency-key" not in request.headers
    assert request.headers[REDRIVE_HEADER.lower()] == KEY
    assert request.headers["content-type"] == "application/json"
    assert request.signature_ok
    assert signed_by_the_secret(request)
    delivered = await onboarding.exception_of(onboarding.people.manager, exception_id)
    body, requested_at = body_without_time(request)
    assert body == expected_body(
        exception_id, attempt=1, resume_after="collect_documents", stale=["verify_bank_account"]
    )
    assert requested_at == datetime.fromisoformat(delivered["redrive"]["requestedAt"])
    assert body["changes"] == delivered["currentCorrection"]["changes"]

    # Delivered is not done: it waits, parked, for the owning system's result.
    assert (delivered["state"], delivered["closure"], delivered["attempts"]) == (
        "REDRIVE_PENDING",
        None,
        1,
    )
    assert delivered["item"]["state"] == "PARKED"
    assert delivery(delivered) == ("delivered", 1, None, True)
    assert delivered["redrive"]["succeeded"] is None
    assert [e["kind"] for e in delivered["events"]][-1] == "redrive_requested"
    row = await delivery_row(onboarding.conn, key)
    assert (row["next_delivery_at"], row["delivery_locked_until"]) == (None, None)

    reported = await report(
        onboarding.gql,
        onboarding.people.erp,
        key,
        succeeded=True,
        detail="Supplier SUP-1042 onboarded.",
    )
    assert reported["__typename"] == "RedriveResultRecorded", reported
    assert reported["alreadyReported"] is False
    closed = await onboarding.exception_of(onboarding.people.manager, exception_id)
    assert (closed["state"], closed["closure"], closed["attempts"]) == ("CLOSED", "CORRECTED", 1)
    assert delivery(closed) == ("delivered", 1, None, True)
    redrive = closed["redrive"]
    assert (redrive["succeeded"], redrive["reportedBy"], redrive["resultDetail"]) == (
        True,
        "erp-onboarding",
        "Supplier SUP-1042 onboarded.",
    )
    assert [(e["kind"], e["actor"], e["actorRole"]) for e in closed["events"]] == [
        ("raised", "erp-onboarding", "integration"),
        ("correction_submitted", "sam", "reviewer"),
        ("correction_approved", "ann", "approver"),
        ("redrive_requested", "ann", "approver"),
        ("redrive_succeeded", "erp-onboarding", "integration"),
    ]
    no_delivery_errors(caplog)


# --- 2. transient, then delivered --------------------------------------------------------------


@pytest.mark.parametrize("transient", [UNAVAILABLE, THROTTLED], ids=["503", "429"])
async def test_a_transient_refusal_is_retried_with_backoff_under_the_same_key(
    db: Database,
    gql: GraphQL,
    people: People,
    transient: Reply,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with redrive_receiver(gql, people, answers(transient)) as erp:
        worker = DeliveringWorker(db)
        async with redrive_requested(gql, people, worker) as (exception_id, key):
            await worker.until(lambda s: s.redrives_delivered == 1, "the redrive delivered")
            await worker.claimed_everything_due()
        assert worker.stats == WorkerStats(redrives_delivered=1, redrives_retried=1)

    assert [status for _, status in erp.replies] == [transient.status, 200]
    first, second = erp.requests
    assert [first.key, second.key] == [key, key]
    assert [r.headers[REDRIVE_HEADER.lower()] for r in erp.requests] == [key, key]
    assert all(signed_by_the_secret(r) for r in erp.requests)
    assert first.json()["attempt"] == 1
    assert second.json() == {**first.json(), "attempt": 2}
    # Backoff: the first retry falls due after 0.05 s x [0.5, 1.5].
    assert second.received_at - first.received_at >= 0.025
    assert body_without_time(first)[0] == expected_body(
        exception_id, attempt=1, resume_after="verify_bank_account", stale=[]
    )

    delivered = await exception_of(gql, people.manager, exception_id)
    assert delivered["state"] == "REDRIVE_PENDING"
    # The error of the failed attempt is cleared by the delivery.
    assert delivery(delivered) == ("delivered", 2, None, True)
    no_delivery_errors(caplog)


# --- 3. undeliverable --------------------------------------------------------------------------


async def test_a_permanent_refusal_makes_the_redrive_undeliverable_and_back_to_a_person(
    onboarding: OnboardingDesk, caplog: pytest.LogCaptureFixture
) -> None:
    refusal = Reply(422, body=b'{"error":"unknown supplier"}')
    async with onboarding.redrive_receiver(always(refusal), redriveMaxAttempts=5) as erp:
        worker = DeliveringWorker(onboarding.db)
        async with onboarding.redrive_requested(worker) as (exception_id, key):
            await worker.until(lambda s: s.redrives_undeliverable == 1, "undeliverable")
            await worker.claimed_everything_due()
        assert worker.stats == WorkerStats(redrives_undeliverable=1)

    # One POST: a 4xx other than 429 is not retried.
    [request] = erp.requests
    assert request.key == key
    error = 'webhook answered 422: {"error":"unknown supplier"}'
    back = await onboarding.exception_of(onboarding.people.erp, exception_id)
    assert delivery(back) == ("failed", 1, error, False)
    assert (back["state"], back["closure"], back["attempts"]) == ("NEEDS_REVIEW", None, 2)
    assert (back["item"]["queue"], back["item"]["state"]) == (OWNER_QUEUE, "PENDING")
    failed = back["events"][-1]
    assert (
        failed["kind"],
        failed["actor"],
        failed["actorRole"],
        failed["fromState"],
        failed["toState"],
        failed["redriveKey"],
    ) == ("redrive_failed", "casework", "system", "REDRIVE_PENDING", "NEEDS_REVIEW", key)
    assert failed["detail"].startswith("the redrive could not be delivered")
    assert failed["detail"] == f"the redrive could not be delivered after 1 attempt(s): {error}"
    assert (back["redrive"]["succeeded"], back["redrive"]["reportedBy"]) == (False, "casework")
    assert [e["kind"] for e in back["events"]][-2:] == ["redrive_requested", "redrive_failed"]
    row = await delivery_row(onboarding.conn, key)
    assert (row["next_delivery_at"], row["delivery_locked_until"]) == (None, None)

    # The owning system cannot close it now: the redrive was answered (undelivered).
    before = await rows_of(onboarding.conn, exception_id)
    refused = await report(
        onboarding.gql, onboarding.people.erp, key, succeeded=True, detail="done after all"
    )
    assert refused["__typename"] == "InvalidTransition", refused
    assert (refused["state"], refused["action"]) == ("NEEDS_REVIEW", "REPORT_REDRIVE_RESULT")
    assert await rows_of(onboarding.conn, exception_id) == before

    # And the exception is a person's again.
    again = await claim(onboarding.gql, onboarding.people.sam, OWNER_QUEUE)
    assert again["item"]["exception"] == {"id": exception_id, "state": "NEEDS_REVIEW"}
    no_delivery_errors(caplog)


async def test_running_out_of_attempts_makes_the_redrive_undeliverable(
    onboarding: OnboardingDesk, caplog: pytest.LogCaptureFixture
) -> None:
    async with webhook_receiver(REDRIVE_SECRET, always(UNAVAILABLE)) as erp:
        configured = await take_redrives_by_webhook(
            onboarding.gql, onboarding.people, erp.url, redriveMaxAttempts=2
        )
        assert configured["redriveMaxAttempts"] == 2
        worker = DeliveringWorker(onboarding.db)
        async with onboarding.redrive_requested(worker) as (exception_id, key):
            await worker.until(lambda s: s.redrives_undeliverable == 1, "attempts exhausted")
            await worker.claimed_everything_due()
        assert worker.stats == WorkerStats(redrives_retried=1, redrives_undeliverable=1)

    assert [r.key for r in erp.requests] == [key, key]
    assert [r.json()["attempt"] for r in erp.requests] == [1, 2]
    error = "webhook answered 503: down for maintenance"
    back = await onboarding.exception_of(onboarding.people.erp, exception_id)
    assert delivery(back) == ("failed", 2, error, False)
    assert (back["state"], back["attempts"]) == ("NEEDS_REVIEW", 2)
    failed = back["events"][-1]
    assert (failed["kind"], failed["actor"], failed["actorRole"]) == (
        "redrive_failed",
        "casework",
        "system",
    )
    assert failed["detail"] == f"the redrive could not be delivered after 2 attempt(s): {error}"
    row = await delivery_row(onboarding.conn, key)
    assert (row["next_delivery_at"], row["delivery_locked_until"]) == (None, None)
    no_delivery_errors(caplog)


async def test_a_receiver_that_never_answers_is_timed_out_at_the_workflows_timeout(
    db: Database,
    gql: GraphQL,
    people: People,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with redrive_receiver(
        gql, people, always(Stall()), redriveMaxAttempts=1, redriveTimeoutSeconds=0.2
    ) as erp:
        worker = DeliveringWorker(db)
        async with redrive_requested(gql, people, worker) as (exception_id, key):
            await worker.until(lambda s: s.redrives_undeliverable == 1, "timed out")
        assert worker.stats == WorkerStats(redrives_undeliverable=1)

    assert [r.key for r in erp.requests] == [key]
    assert erp.replies == []
    back = await exception_of(gql, people.erp, exception_id)
    assert delivery(back) == ("failed", 1, "timed out after 0.2 s", False)
    assert (back["state"], back["attempts"]) == ("NEEDS_REVIEW", 2)
    no_delivery_errors(caplog)


async def test_a_refused_connection_is_retried_then_undeliverable(
    db: Database,
    gql: GraphQL,
    people: People,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A port nothing listens on any more.
    async with webhook_receiver(REDRIVE_SECRET) as gone:
        target = gone.url
    await take_redrives_by_webhook(gql, people, target, redriveMaxAttempts=2)
    worker = DeliveringWorker(db)
    async with redrive_requested(gql, people, worker) as (exception_id, _):
        await worker.until(lambda s: s.redrives_undeliverable == 1, "undeliverable")
    assert worker.stats == WorkerStats(redrives_retried=1, redrives_undeliverable=1)

    back = await exception_of(gql, people.erp, exception_id)
    state, attempts, error, delivered = delivery(back)
    assert (state, attempts, delivered) == ("failed", 2, False)
    assert error.startswith("ConnectError: "), error
    assert (back["state"], back["attempts"]) == ("NEEDS_REVIEW", 2)
    no_delivery_errors(caplog)


# --- who may answer a webhook redrive ----------------------------------------------------------


async def test_casework_may_only_report_a_webhook_redrive_failed(
    onboarding: OnboardingDesk,
) -> None:
    """No worker runs: the redrive stays pending while Casework (system) and the owning
    system answer it."""
    await take_redrives_by_webhook(
        onboarding.gql, onboarding.people, "http://127.0.0.1:9/erp/redrives"
    )
    exception_id, version = await onboarding.approved_mismatch()
    key = await onboarding.request_redrive(exception_id, version)

    before = await rows_of(onboarding.conn, exception_id)
    claimed = await redrives.report_checked(
        onboarding.db,
        key,
        True,
        "Casework claims a success",
        actor=SYSTEM_ACTOR,
        actor_role=SYSTEM_ROLE,
    )
    assert isinstance(claimed, NotPermitted), claimed
    assert await rows_of(onboarding.conn, exception_id) == before

    # The owning system may report a failure (as it may a success).
    failed = await report(
        onboarding.gql, onboarding.people.erp, key, succeeded=False, detail="ERP rejected the LEI."
    )
    assert failed["__typename"] == "RedriveResultRecorded", failed
    assert (failed["exception"]["state"], failed["exception"]["attempts"]) == ("NEEDS_REVIEW", 2)
    event = failed["exception"]["events"][-1]
    assert (event["kind"], event["actor"], event["actorRole"]) == (
        "redrive_failed",
        "erp-onboarding",
        "integration",
    )


# --- reconfiguring an existing workflow -------------------------------------------------------


async def test_changing_only_the_redrive_route_keeps_the_approval_queue(
    owner_conn: asyncpg.Connection, gql: GraphQL, people: People
) -> None:
    """ConfigureWorkflowInput.approvalQueue is "required at first" only, and the docs change
    the route with `configureWorkflow(input: {redriveVia: …})`: an existing workflow's
    redrive settings change without sending its approval queue again."""
    configured = await configure_workflow(
        gql,
        people.admin,
        redriveVia="WEBHOOK",
        redriveTarget=TARGET,
        redriveSecret=REDRIVE_SECRET,
        redriveMaxAttempts=3,
    )
    assert configured == {
        "__typename": "WorkflowConfigured",
        "workflow": {
            "name": WORKFLOW,
            "approvalQueue": APPROVAL_QUEUE,
            "redriveVia": "WEBHOOK",
            "redriveTarget": TARGET,
            "redriveMaxAttempts": 3,
            "redriveTimeoutSeconds": 10.0,
        },
    }
    row = await owner_conn.fetchrow(
        "SELECT approval_queue, redrive_via, redrive_target, redrive_secret FROM workflows "
        "WHERE name = $1",
        WORKFLOW,
    )
    assert dict(row) == {
        "approval_queue": APPROVAL_QUEUE,
        "redrive_via": "webhook",
        "redrive_target": TARGET,
        "redrive_secret": REDRIVE_SECRET,
    }


# --- 4. settings refusals ----------------------------------------------------------------------

SECRET_15 = "whsec_" + base64.b64encode(b"x" * 15).decode()
TARGET = "https://erp.example.com/casework/redrives"

# What each refused setting is, and the field the refusal names.
REFUSED_SETTINGS: dict[str, tuple[dict[str, Any], str]] = {
    "WEBHOOK without a target": (
        {"redriveVia": "WEBHOOK", "redriveSecret": REDRIVE_SECRET},
        "redrive.target",
    ),
    "WEBHOOK with a non-http target": (
        {
            "redriveVia": "WEBHOOK",
            "redriveTarget": "ftp://erp.example.com/redrives",
            "redriveSecret": REDRIVE_SECRET,
        },
        "redrive.target",
    ),
    "WEBHOOK with a host-less target": (
        {"redriveVia": "WEBHOOK", "redriveTarget": "https:///r", "redriveSecret": REDRIVE_SECRET},
        "redrive.target",
    ),
    "WEBHOOK without a secret": (
        {"redriveVia": "WEBHOOK", "redriveTarget": TARGET},
        "redrive.secret",
    ),
    "WEBHOOK with a secret under 16 bytes": (
        {"redriveVia": "WEBHOOK", "redriveTarget": TARGET, "redriveSecret": SECRET_15},
        "redrive.secret",
    ),
    "WEBHOOK with a secret not in the whsec_ form": (
        {"redriveVia": "WEBHOOK", "redriveTarget": TARGET, "redriveSecret": "y" * 40},
        "redrive.secret",
    ),
    "a target with SUBSCRIPTION": (
        {"redriveVia": "SUBSCRIPTION", "redriveTarget": TARGET},
        "redriveVia",
    ),
    "a secret with SUBSCRIPTION": (
        {"redriveVia": "SUBSCRIPTION", "redriveSecret": REDRIVE_SECRET},
        "redriveVia",
    ),
    "a target without redriveVia": ({"redriveTarget": TARGET}, "redriveVia"),
    "CASEWORK for a workflow of an owning system": ({"redriveVia": "CASEWORK"}, "redriveVia"),
    "no attempts": ({"redriveMaxAttempts": 0}, "redriveMaxAttempts"),
    "101 attempts": ({"redriveMaxAttempts": 101}, "redriveMaxAttempts"),
    "a zero timeout": ({"redriveTimeoutSeconds": 0.0}, "redriveTimeoutSeconds"),
    "a timeout over 300 s": ({"redriveTimeoutSeconds": 300.5}, "redriveTimeoutSeconds"),
}


async def workflows_table(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    return [dict(row) for row in await conn.fetch("SELECT * FROM workflows ORDER BY name")]


@pytest.mark.parametrize("starting_as", ["SUBSCRIPTION", "WEBHOOK"])
async def test_invalid_redrive_settings_are_refused_and_change_nothing(
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
    starting_as: str,
) -> None:
    if starting_as == "WEBHOOK":
        await take_redrives_by_webhook(
            gql, people, TARGET, redriveMaxAttempts=3, redriveTimeoutSeconds=5.0
        )
    before = await workflows_table(owner_conn)
    [supplier] = [w for w in before if w["name"] == WORKFLOW]
    assert supplier["redrive_via"] == starting_as.lower()

    observed: dict[str, tuple[str, str | None]] = {}
    for label, (settings, _) in REFUSED_SETTINGS.items():
        result = await configure_workflow(gql, people.admin, **settings)
        observed[label] = (result["__typename"], result.get("field"))
    assert observed == {
        label: ("InvalidInput", field) for label, (_, field) in REFUSED_SETTINGS.items()
    }
    assert await workflows_table(owner_conn) == before

    # Only an admin configures workflows, however valid the settings.
    refused = await configure_workflow(
        gql, people.erp, redriveVia="WEBHOOK", redriveTarget=TARGET, redriveSecret=REDRIVE_SECRET
    )
    assert refused["__typename"] == "NotPermitted", refused
    assert await workflows_table(owner_conn) == before

    # The boundary: a whsec_ secret of 16 bytes is enough.
    accepted = await configure_workflow(
        gql,
        people.admin,
        approvalQueue=APPROVAL_QUEUE,
        redriveVia="WEBHOOK",
        redriveTarget=TARGET,
        redriveSecret="whsec_" + base64.b64encode(b"y" * 16).decode(),
    )
    assert accepted["__typename"] == "WorkflowConfigured", accepted


# --- 5. subscription workflows are not the worker's --------------------------------------------


async def test_a_subscription_workflows_redrive_is_never_claimed_or_posted(
    onboarding: OnboardingDesk,
) -> None:
    exception_id, version = await onboarding.approved_mismatch()
    worker = DeliveringWorker(onboarding.db)
    async with running(worker):
        key = await onboarding.request_redrive(exception_id, version)
        await worker.claimed_everything_due()
        assert worker.rounds >= 2
    assert worker.stats == WorkerStats()

    assert await delivery_row(onboarding.conn, key) == {
        "delivery_state": None,
        "delivery_attempts": 0,
        "next_delivery_at": None,
        "delivery_locked_until": None,
        "last_delivery_error": None,
        "delivered_at": None,
    }
    waiting = await onboarding.exception_of(onboarding.people.manager, exception_id)
    assert waiting["state"] == "REDRIVE_PENDING"
    assert delivery(waiting) == (None, 0, None, False)

    # Casework may not report for a subscription workflow, not even a failure.
    refused = await redrives.report_checked(
        onboarding.db,
        key,
        False,
        "the redrive could not be delivered",
        actor=SYSTEM_ACTOR,
        actor_role=SYSTEM_ROLE,
    )
    assert isinstance(refused, NotPermitted), refused

    reported = await report(onboarding.gql, onboarding.people.erp, key, succeeded=True)
    assert reported["__typename"] == "RedriveResultRecorded", reported
    assert (reported["exception"]["state"], reported["exception"]["closure"]) == (
        "CLOSED",
        "CORRECTED",
    )


# --- changing the route while a delivery is due ------------------------------------------------


async def test_a_delivery_due_when_the_workflow_leaves_webhook_is_not_attempted_blindly(
    onboarding: OnboardingDesk, caplog: pytest.LogCaptureFixture
) -> None:
    """The redrive is requested while the workflow takes redrives by webhook; before any
    worker delivers it, the admin switches the workflow to SUBSCRIPTION (its target and
    secret are cleared). The worker must not claim a delivery it has no target or secret
    for: doing so raises inside the worker, every time the lock lapses, forever, with the
    attempt count growing past redriveMaxAttempts."""
    async with onboarding.redrive_receiver(redriveMaxAttempts=2) as erp:
        exception_id, version = await onboarding.approved_mismatch()
        key = await onboarding.request_redrive(exception_id, version)
        switched = await configure_workflow(
            onboarding.gql,
            onboarding.people.admin,
            approvalQueue=APPROVAL_QUEUE,
            redriveVia="SUBSCRIPTION",
        )
        assert switched["__typename"] == "WorkflowConfigured", switched
        assert switched["workflow"]["redriveTarget"] is None

        worker = DeliveringWorker(onboarding.db)
        async with running(worker):
            for _ in range(3):
                await worker.claimed_everything_due()
                # As if the lock had lapsed (it lasts redriveTimeoutSeconds * 2 + 10 s).
                await onboarding.conn.execute(
                    "UPDATE exception_redrives SET delivery_locked_until = now() "
                    "WHERE key = $1 AND delivery_locked_until IS NOT NULL",
                    key,
                )
        stats = worker.stats

    row = await delivery_row(onboarding.conn, key)
    errors = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and key in r.getMessage()
    ]
    observed = {
        "posts": len(erp.requests),
        "worker errors": errors,
        "claimed attempts": row["delivery_attempts"],
        "stats": stats,
    }
    assert observed == {
        "posts": 0,
        "worker errors": [],
        "claimed attempts": 0,
        "stats": WorkerStats(),
    }


# --- a redrive answered before it was delivered ------------------------------------------------


async def test_a_redrive_answered_before_delivery_is_not_delivered_after_its_successor(
    onboarding: OnboardingDesk, caplog: pytest.LogCaptureFixture
) -> None:
    """v1's redrive is requested but not yet delivered (no worker runs; in production: the
    ERP answering 503 while the worker backs off). The ERP, following exceptionEvents too,
    reports v1 failed; sam corrects again, ann approves v2 and requests its redrive. When the
    worker runs, only v2 may be POSTed: v1 was answered, and its changes are superseded.
    Delivering v1 now would have the ERP apply a stale correction under a key it never saw."""
    async with onboarding.redrive_receiver() as erp:
        exception_id, first = await onboarding.approved_mismatch()
        key1 = await onboarding.request_redrive(exception_id, first)
        answered = await report(
            onboarding.gql, onboarding.people.erp, key1, succeeded=False, detail="LEI unknown"
        )
        assert answered["__typename"] == "RedriveResultRecorded", answered
        assert answered["exception"]["state"] == "NEEDS_REVIEW"
        second = await correct_and_approve(
            onboarding.gql, onboarding.people, exception_id, stale_steps=[]
        )
        key2 = await onboarding.request_redrive(exception_id, second)
        assert (key1, key2) == (KEY, f"{WORKFLOW}:{SOURCE_RECORD}:v2")

        worker = DeliveringWorker(onboarding.db)
        async with running(worker):
            worker.wake()
            await worker.until(lambda s: s.redrives_delivered >= 1, "a redrive delivered")
            await worker.claimed_everything_due()
        stats = worker.stats

    first_row = await delivery_row(onboarding.conn, key1)
    observed = {
        "posted keys": sorted(r.key for r in erp.requests),
        "stats": stats,
        # Claimed (and so POSTed) how often; its state may stay pending or be dropped.
        "v1 claimed attempts": first_row["delivery_attempts"],
    }
    assert observed == {
        "posted keys": [key2],
        "stats": WorkerStats(redrives_delivered=1),
        "v1 claimed attempts": 0,
    }
    current = await onboarding.exception_of(onboarding.people.manager, exception_id)
    assert (current["state"], current["redrive"]["key"]) == ("REDRIVE_PENDING", key2)
    assert delivery(current) == ("delivered", 1, None, True)
    no_delivery_errors(caplog)
