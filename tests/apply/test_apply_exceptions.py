"""A decision whose effect failed for good becomes an exception in workflow apply_decision,
owned by people; the redrive of its approved correction re-applies the decision under the
same idempotency key, and the worker reports the result: closed as corrected, or back to
needs_review with one more attempt counted.

Against a real PostgreSQL, the real GraphQL app (in-process ASGI), real HTTP receivers and
an in-process ApplyWorker whose recordings the test awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest

from server.domain.model import Role
from server.domain.review.apply import DueApplication
from server.store.database import Database
from server.worker import ApplyWorker, WorkerStats
from tests.api.conftest import GraphQL
from tests.apply.helpers import (
    FAST,
    SECRET,
    application_row,
    attempt_rows,
    configure_effect,
    inconsistencies,
    make_decision,
    running,
    wait_until,
    webhook,
)
from tests.apply.receiver import OK, Receiver, Reply, always, webhook_receiver
from tests.conftest import token_maker
from tests.exceptions.operations import (
    APPROVE_CORRECTION,
    EXCEPTION_FIELDS,
    REOPEN_EXCEPTION,
    REPORT_REDRIVE_RESULT,
    REQUEST_REDRIVE,
    approve_as,
    claim,
    correct_as,
    run,
    under_claim,
)

WORKFLOW = "apply_decision"
OWNER_QUEUE = "apply_decision"
ESCALATION_QUEUE = "apply_decision.escalations"
APPROVAL_QUEUE = "apply_decision.approvals"
# How long a test waits for the worker to record what it is expected to record.
RECORD_SECONDS = 15.0

REFUSAL = Reply(422, body=b'{"error":"account closed"}')
UNAVAILABLE = Reply(503, body=b"down for maintenance")
STILL_CLOSED = Reply(409, body=b'{"error":"still closed"}')

EXCEPTIONS_OF_RECORD = f"""
query($record: String!) {{
  exceptions(filter: {{workflow: "apply_decision", sourceRecordId: $record}}) {{
    edges {{ node {{ {EXCEPTION_FIELDS} decision {{ id }} }} }}
  }}
}}
"""

EXCEPTION_OF_APPLY = f"""
query($id: ID!) {{ exception(id: $id) {{ {EXCEPTION_FIELDS} decision {{ id }} }} }}
"""

CONFIGURE_WEBHOOK = """
mutation($queue: String!, $url: String!, $secret: String!) {
  configureQueue(input: {name: $queue, effect: {kind: WEBHOOK, target: $url, secret: $secret}}) {
    __typename ... on Error { message }
  }
}
"""


class ObservedWorker(ApplyWorker):
    """The real worker and effects; the test awaits its recordings instead of polling."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, FAST, name="apply-exceptions")
        self._recorded = asyncio.Condition()

    async def _attempt_and_record(self, client: httpx.AsyncClient, due: DueApplication) -> None:
        try:
            await super()._attempt_and_record(client, due)
        finally:
            async with self._recorded:
                self._recorded.notify_all()

    async def until(
        self, check: Callable[[WorkerStats], bool], what: str, within: float = RECORD_SECONDS
    ) -> None:
        """Until the worker's stats satisfy `check` (after a recording), bounded."""
        async with self._recorded:
            try:
                await asyncio.wait_for(self._recorded.wait_for(lambda: check(self.stats)), within)
            except TimeoutError:
                raise AssertionError(f"not within {within} s: {what}; {self.stats}") from None


@dataclass(frozen=True)
class Staff:
    admin: str
    rex: str  # reviewer of apply_decision: corrects
    ann: str  # approver of apply_decision.approvals
    rex_as_approver: str  # the corrector with an approver token: four-eyes must stop him
    crm: str  # an integration (every queue): the owner of the effect's subject, not of apply


@pytest.fixture
async def staff(owner_db: Database) -> Staff:
    make = token_maker(owner_db)

    return Staff(
        admin=await make("ada", Role.ADMIN),
        rex=await make("rex", Role.REVIEWER, OWNER_QUEUE),
        ann=await make("ann", Role.APPROVER, APPROVAL_QUEUE),
        rex_as_approver=await make("rex", Role.APPROVER, APPROVAL_QUEUE),
        crm=await make("crm", Role.INTEGRATION),
    )


async def exception_rows(conn: asyncpg.Connection, decision_id: int) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await conn.fetch(
        "SELECT * FROM exceptions WHERE workflow = $1 AND source_record_id = $2 ORDER BY id",
        WORKFLOW,
        str(decision_id),
    )
    return rows


async def event_rows(conn: asyncpg.Connection, exception_id: str) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await conn.fetch(
        "SELECT * FROM exception_events WHERE exception_id = $1 ORDER BY id", exception_id
    )
    return rows


async def only_exception(gql: GraphQL, token: str, decision_id: int) -> dict[str, Any]:
    body = await gql(token, EXCEPTIONS_OF_RECORD, record=str(decision_id))
    assert "errors" not in body, body
    edges = body["data"]["exceptions"]["edges"]
    assert len(edges) == 1, edges
    node: dict[str, Any] = edges[0]["node"]
    return node


async def refused_and_raised(
    db: Database, worker: ObservedWorker, queue: str, key: str, *, failed_before: int = 0
) -> int:
    """A decision whose effect fails for good while the worker runs; returns its id."""
    decision_id = await make_decision(db, queue, key)
    worker.wake()
    await worker.until(lambda s: s.failed == failed_before + 1, "the decision failed")
    return decision_id


@asynccontextmanager
async def refused_decision(
    db: Database, queue: str, receiver: Receiver, key: str, *, max_attempts: int | None = None
) -> AsyncIterator[tuple[ObservedWorker, int]]:
    """The queue's webhook pointed at `receiver`, an ObservedWorker running, and a decision
    whose effect failed for good under it: yields the worker and the decision's id."""
    await configure_effect(db, queue, webhook(receiver.url), max_attempts=max_attempts)
    async with running(ObservedWorker(db)) as worker:
        assert isinstance(worker, ObservedWorker)
        yield worker, await refused_and_raised(db, worker, queue, key)


async def failed_for_good(
    db: Database, queue: str, receiver: Receiver, key: str, *, max_attempts: int | None = None
) -> tuple[int, WorkerStats]:
    """As refused_decision, the worker stopped after: the decision's id and the worker's stats."""
    async with refused_decision(db, queue, receiver, key, max_attempts=max_attempts) as (
        worker,
        decision_id,
    ):
        pass
    return decision_id, worker.stats


@asynccontextmanager
async def crm_moved(
    db: Database, queue: str, key: str, *, answer: Reply = OK, max_attempts: int | None = None
) -> AsyncIterator[tuple[Receiver, Receiver, ObservedWorker, int]]:
    """The CRM moved: the old receiver refuses every request and a decision failed for good
    against it (see refused_decision); the new receiver gives `answer`. Yields both
    receivers, the running worker and the decision's id."""
    async with (
        webhook_receiver(SECRET, always(REFUSAL)) as old_crm,
        webhook_receiver(SECRET, always(answer)) as new_crm,
        refused_decision(db, queue, old_crm, key, max_attempts=max_attempts) as (worker, decision),
    ):
        yield old_crm, new_crm, worker, decision


async def applied_proofs(conn: asyncpg.Connection, decision_id: int) -> int:
    """How many times the decision is recorded as applied (at most once, by design)."""
    count: int = await conn.fetchval(
        "SELECT count(*) FROM applied_decisions WHERE decision_id = $1", decision_id
    )
    return count


async def redriven_application(conn: asyncpg.Connection, decision_id: int) -> tuple[Any, ...]:
    """The decision's work-list row as a redrive leaves it: state, attempts in all,
    attempts before the redrive, and the redrive's key."""
    row = await application_row(conn, decision_id)
    return (row["state"], row["attempts"], row["attempts_before_redrive"], row["redrive_key"])


async def correct(
    gql: GraphQL,
    staff: Staff,
    exception_id: str,
    changes: dict[str, Any],
    *,
    reason_code: str = "effect_refused",
    evidence: str = "ticket://ops/OPS-17",
) -> int:
    """rex claims the exception and submits a correction: it awaits approval. The version."""
    corrected = await correct_as(
        gql,
        staff.rex,
        OWNER_QUEUE,
        exception_id,
        reason_code=reason_code,
        changes=changes,
        evidence=[evidence],
        note="The CRM moved; the queue's webhook now points at the new endpoint.",
    )
    assert corrected["item"]["queue"] == APPROVAL_QUEUE
    version: int = corrected["version"]
    return version


async def correct_and_approve(
    gql: GraphQL, staff: Staff, exception_id: str, changes: dict[str, Any], **correction: str
) -> int:
    """rex corrects the exception (see `correct`); ann approves it. The version."""
    version = await correct(gql, staff, exception_id, changes, **correction)
    approved = await approve_as(gql, staff.ann, APPROVAL_QUEUE, exception_id, version)
    assert approved["item"]["state"] == "PARKED"
    return version


async def request_redrive(gql: GraphQL, token: str, exception_id: str, version: int) -> str:
    queued = await run(
        gql, token, REQUEST_REDRIVE, input={"exceptionId": exception_id, "version": version}
    )
    assert queued["__typename"] == "RedriveQueued", queued
    key: str = queued["redriveKey"]
    return key


async def point_webhook_at(gql: GraphQL, admin: str, queue: str, receiver: Receiver) -> None:
    """The admin re-configures the queue's webhook, over the API."""
    body = await gql(admin, CONFIGURE_WEBHOOK, queue=queue, url=receiver.url, secret=SECRET)
    assert body["data"]["configureQueue"]["__typename"] == "QueueConfigured", body


def no_recording_errors(caplog: pytest.LogCaptureFixture) -> None:
    """The worker never failed to record an attempt (it logs and moves on if it does)."""
    broken = [r.getMessage() for r in caplog.records if "could not record" in r.getMessage()]
    assert broken == [], broken


# --- (a) raising ------------------------------------------------------------------------------


async def test_a_refused_effect_raises_one_exception_owned_by_apply_decision(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with webhook_receiver(SECRET, always(REFUSAL)) as receiver:
        decision_id, stats = await failed_for_good(
            db, kyc_queue, receiver, "refused", max_attempts=5
        )
        assert stats == WorkerStats(applied=0, retried=0, failed=1, already_applied=0)

    # The decision failed at once (a 4xx is permanent), after one request.
    row = await application_row(owner_conn, decision_id)
    assert (row["state"], row["attempts"], row["redrive_key"]) == ("failed", 1, None)
    [request] = receiver.requests
    assert request.key == str(decision_id)

    # Exactly one exception, for this decision, waiting in apply_decision.
    [exception] = await exception_rows(owner_conn, decision_id)
    assert exception["reason_code"] == "effect_refused"
    assert exception["decision_id"] == decision_id
    assert exception["state"] == "needs_review"
    assert (exception["owner_role"], exception["escalation_role"]) == (
        OWNER_QUEUE,
        ESCALATION_QUEUE,
    )
    assert (exception["attempts"], exception["recurrences"], exception["version"]) == (1, 0, 0)
    assert exception["consequence"] == "high"
    assert exception["completed_steps"] == ["decide"]
    assert exception["blocked_step"] == "apply"
    assert "webhook answered 422" in exception["detail"]
    assert "account closed" in exception["detail"]
    assert (
        await owner_conn.fetchval("SELECT count(*) FROM exceptions WHERE workflow = $1", WORKFLOW)
        == 1
    )
    item = await owner_conn.fetchrow(
        "SELECT queue, state, kind FROM review_items WHERE id = $1", exception["item_id"]
    )
    assert dict(item) == {"queue": OWNER_QUEUE, "state": "pending", "kind": "exception"}

    [raised] = await event_rows(owner_conn, exception["id"])
    assert (raised["kind"], raised["actor"], raised["actor_role"]) == (
        "raised",
        "casework",
        "system",
    )
    assert (raised["from_state"], raised["to_state"], raised["version"]) == (
        None,
        "needs_review",
        0,
    )

    # The same, as a reviewer of apply_decision sees it.
    node = await only_exception(gql, staff.rex, decision_id)
    assert node["id"] == exception["id"]
    assert node["decision"] == {"id": str(decision_id)}
    assert (node["workflow"], node["sourceRecordId"], node["reasonCode"]) == (
        WORKFLOW,
        str(decision_id),
        "effect_refused",
    )
    assert (node["state"], node["ownerRole"], node["attempts"]) == ("NEEDS_REVIEW", OWNER_QUEUE, 1)
    assert node["evidence"] == [
        f"casework:decision/{decision_id}",
        f"casework:item/{request.json()['itemId']}",
    ]
    assert [(e["kind"], e["actor"], e["actorRole"]) for e in node["events"]] == [
        ("raised", "casework", "system")
    ]
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
    no_recording_errors(caplog)


async def test_attempts_exhausted_by_transient_failures_raise_attempts_exhausted(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with webhook_receiver(SECRET, always(UNAVAILABLE)) as receiver:
        decision_id, stats = await failed_for_good(
            db, kyc_queue, receiver, "unlucky", max_attempts=2
        )
        assert stats == WorkerStats(applied=0, retried=1, failed=1, already_applied=0)

    attempts = await attempt_rows(owner_conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "transient"), (2, "permanent")]
    assert [r.key for r in receiver.requests] == [str(decision_id)] * 2
    row = await application_row(owner_conn, decision_id)
    assert (row["state"], row["attempts"]) == ("failed", 2)

    [exception] = await exception_rows(owner_conn, decision_id)
    assert exception["reason_code"] == "attempts_exhausted"
    assert (exception["decision_id"], exception["state"], exception["owner_role"]) == (
        decision_id,
        "needs_review",
        OWNER_QUEUE,
    )
    assert "failed after 2 attempt(s)" in exception["detail"]
    assert "webhook answered 503" in exception["detail"]
    assert exception["context"] == {
        "queue": kyc_queue,
        "externalKey": "unlucky-0",
        "verdict": "APPROVE",
        "attempts": 2,
    }
    [raised] = await event_rows(owner_conn, exception["id"])
    assert (raised["kind"], raised["actor"], raised["actor_role"]) == (
        "raised",
        "casework",
        "system",
    )

    node = await only_exception(gql, staff.rex, decision_id)
    assert (node["reasonCode"], node["decision"]) == (
        "attempts_exhausted",
        {"id": str(decision_id)},
    )
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
    no_recording_errors(caplog)


# --- (b) the redrive succeeds -------------------------------------------------------------------


async def test_a_redriven_decision_is_applied_under_its_key_and_the_exception_closes_corrected(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with crm_moved(db, kyc_queue, "moved", max_attempts=3) as moved:
        old_crm, new_crm, worker, decision_id = moved
        exception_id = (await only_exception(gql, staff.rex, decision_id))["id"]

        await point_webhook_at(gql, staff.admin, kyc_queue, new_crm)
        version = await correct_and_approve(gql, staff, exception_id, {"effectTarget": new_crm.url})
        assert version == 1
        # Approved but not yet redriven: nothing goes back on the work list.
        assert (await application_row(owner_conn, decision_id))["state"] == "failed"

        key = await request_redrive(gql, staff.ann, exception_id, version)
        assert key == f"apply_decision:{decision_id}:v1"
        worker.wake()
        redriven = await new_crm.next_arrival()
        await worker.until(lambda s: s.applied == 1, "the redriven decision applied")
    assert worker.stats == WorkerStats(applied=1, retried=0, failed=1, already_applied=0)

    # The same idempotency key as the refused attempt: the decision id, not the redrive key.
    [refused] = old_crm.requests
    assert refused.key == redriven.key == str(decision_id)
    assert [r.key for r in new_crm.requests] == [str(decision_id)]
    assert redriven.signature_ok
    assert redriven.json()["decisionId"] == str(decision_id)
    assert redriven.json()["attempt"] == 2

    assert await redriven_application(owner_conn, decision_id) == (
        "applied",
        2,
        1,
        key,
    )
    assert await applied_proofs(owner_conn, decision_id) == 1
    attempts = await attempt_rows(owner_conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "permanent"), (2, "applied")]

    closed = (await gql(staff.rex, EXCEPTION_OF_APPLY, id=exception_id))["data"]["exception"]
    assert (closed["state"], closed["closure"]) == ("CLOSED", "CORRECTED")
    assert closed["attempts"] == 1
    assert closed["item"]["state"] == "PARKED"
    assert closed["redrive"] == {
        "key": key,
        "version": 1,
        "resumeAfter": "decide",
        "succeeded": True,
    }
    assert closed["currentCorrection"]["changes"] == {"effectTarget": new_crm.url}
    events = closed["events"]
    assert [e["kind"] for e in events] == [
        "raised",
        "correction_submitted",
        "correction_approved",
        "redrive_requested",
        "redrive_succeeded",
    ]
    assert [(e["actor"], e["actorRole"]) for e in events] == [
        ("casework", "system"),
        ("rex", "reviewer"),
        ("ann", "approver"),
        ("ann", "approver"),
        ("casework", "system"),
    ]
    assert [e["redriveKey"] for e in events[-2:]] == [key, key]
    assert (events[-1]["fromState"], events[-1]["toState"]) == ("REDRIVE_PENDING", "CLOSED")
    # Still the one exception for the decision.
    assert len(await exception_rows(owner_conn, decision_id)) == 1
    redrive = await owner_conn.fetchrow("SELECT * FROM exception_redrives WHERE key = $1", key)
    assert (redrive["result"], redrive["reported_by"]) == ("succeeded", "casework")
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
    no_recording_errors(caplog)


# --- (c) the redrive fails for good again -------------------------------------------------------


async def test_a_redrive_refused_again_returns_the_exception_to_needs_review_and_raises_no_other(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with crm_moved(db, kyc_queue, "stubborn", answer=STILL_CLOSED, max_attempts=3) as moved:
        old_crm, new_crm, worker, decision_id = moved
        exception_id = (await only_exception(gql, staff.rex, decision_id))["id"]

        await point_webhook_at(gql, staff.admin, kyc_queue, new_crm)
        version = await correct_and_approve(gql, staff, exception_id, {"effectTarget": new_crm.url})
        key = await request_redrive(gql, staff.rex, exception_id, version)
        worker.wake()
        redriven = await new_crm.next_arrival()
        await worker.until(lambda s: s.failed == 2, "the redrive failed")
    assert worker.stats == WorkerStats(applied=0, retried=0, failed=2, already_applied=0)

    assert redriven.key == old_crm.requests[0].key == str(decision_id)
    assert await redriven_application(owner_conn, decision_id) == (
        "failed",
        2,
        1,
        key,
    )
    assert await applied_proofs(owner_conn, decision_id) == 0

    back = (await gql(staff.rex, EXCEPTION_OF_APPLY, id=exception_id))["data"]["exception"]
    assert (back["state"], back["closure"], back["attempts"]) == ("NEEDS_REVIEW", None, 2)
    assert back["item"] == {**back["item"], "queue": OWNER_QUEUE, "state": "PENDING"}
    assert back["redrive"]["succeeded"] is False
    assert [e["kind"] for e in back["events"]] == [
        "raised",
        "correction_submitted",
        "correction_approved",
        "redrive_requested",
        "redrive_failed",
    ]
    failed = back["events"][-1]
    assert (failed["actor"], failed["actorRole"], failed["redriveKey"]) == (
        "casework",
        "system",
        key,
    )
    assert (failed["fromState"], failed["toState"]) == ("REDRIVE_PENDING", "NEEDS_REVIEW")
    assert "webhook answered 409" in failed["detail"]
    assert back["recurrences"] == 0

    # No second exception for the decision: the failure answered the redrive.
    [only] = await exception_rows(owner_conn, decision_id)
    assert only["id"] == exception_id
    assert (
        await owner_conn.fetchval("SELECT count(*) FROM exceptions WHERE workflow = $1", WORKFLOW)
        == 1
    )
    # And the reviewer can take it up again.
    again = await claim(gql, staff.rex, OWNER_QUEUE)
    assert again["item"]["exception"] == {"id": exception_id, "state": "NEEDS_REVIEW"}
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
    no_recording_errors(caplog)


async def test_a_redrive_gets_a_fresh_attempt_budget_and_its_exhaustion_is_reported_not_raised(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two attempts allowed: the first run exhausts them; the redrive is allowed two more."""
    async with webhook_receiver(SECRET, always(UNAVAILABLE)) as receiver:
        async with refused_decision(db, kyc_queue, receiver, "flaky", max_attempts=2) as (
            worker,
            decision_id,
        ):
            [exception] = await exception_rows(owner_conn, decision_id)
            assert exception["reason_code"] == "attempts_exhausted"
            version = await correct_and_approve(
                gql,
                staff,
                exception["id"],
                {"note": "the CRM is back"},
                reason_code="attempts_exhausted",
                evidence="status://crm/incident-88",
            )
            assert version == 1
            key = await request_redrive(gql, staff.ann, exception["id"], version)
            worker.wake()
            await worker.until(lambda s: s.failed == 2, "the redrive exhausted its attempts")
        assert worker.stats == WorkerStats(applied=0, retried=2, failed=2, already_applied=0)

    attempts = await attempt_rows(owner_conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [
        (1, "transient"),
        (2, "permanent"),
        (3, "transient"),
        (4, "permanent"),
    ]
    assert [r.key for r in receiver.requests] == [str(decision_id)] * 4
    row = await application_row(owner_conn, decision_id)
    assert (row["state"], row["attempts"], row["attempts_before_redrive"]) == ("failed", 4, 2)

    [only] = await exception_rows(owner_conn, decision_id)
    assert (only["state"], only["attempts"], only["recurrences"]) == ("needs_review", 2, 0)
    kinds = [e["kind"] for e in await event_rows(owner_conn, exception["id"])]
    assert kinds[-2:] == ["redrive_requested", "redrive_failed"]
    redrive = await owner_conn.fetchrow("SELECT * FROM exception_redrives WHERE key = $1", key)
    assert redrive["result"] == "failed"
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
    no_recording_errors(caplog)


async def test_a_second_correction_after_a_failed_redrive_can_still_close_it_corrected(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with crm_moved(db, kyc_queue, "twice", max_attempts=3) as moved:
        old_crm, new_crm, worker, decision_id = moved
        exception_id = (await only_exception(gql, staff.rex, decision_id))["id"]

        # v1: approved, but the webhook still points at the refusing receiver.
        first = await correct_and_approve(gql, staff, exception_id, {"retry": True})
        key1 = await request_redrive(gql, staff.ann, exception_id, first)
        worker.wake()
        await worker.until(lambda s: s.failed == 2, "the first redrive failed")

        # v2: after the admin fixed the webhook.
        await point_webhook_at(gql, staff.admin, kyc_queue, new_crm)
        second = await correct_and_approve(gql, staff, exception_id, {"effectTarget": new_crm.url})
        assert second == first + 1
        key2 = await request_redrive(gql, staff.ann, exception_id, second)
        assert (key1, key2) == (
            f"apply_decision:{decision_id}:v1",
            f"apply_decision:{decision_id}:v2",
        )
        worker.wake()
        await worker.until(lambda s: s.applied == 1, "the second redrive applied")

    assert [r.key for r in old_crm.requests] == [str(decision_id)] * 2
    assert [r.key for r in new_crm.requests] == [str(decision_id)]
    assert await redriven_application(owner_conn, decision_id) == (
        "applied",
        3,
        2,
        key2,
    )
    closed = (await gql(staff.rex, EXCEPTION_OF_APPLY, id=exception_id))["data"]["exception"]
    assert (closed["state"], closed["closure"], closed["attempts"]) == ("CLOSED", "CORRECTED", 2)
    assert [e["kind"] for e in closed["events"]] == [
        "raised",
        "correction_submitted",
        "correction_approved",
        "redrive_requested",
        "redrive_failed",
        "correction_submitted",
        "correction_approved",
        "redrive_requested",
        "redrive_succeeded",
    ]
    assert closed["events"][-1]["redriveKey"] == key2
    assert len(await exception_rows(owner_conn, decision_id)) == 1
    assert await inconsistencies(owner_conn, every_attempt_recorded=True) == []
    no_recording_errors(caplog)


async def test_the_corrector_may_not_approve_an_apply_decision_correction(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
) -> None:
    """Four-eyes holds for the workflow Casework raises into, too."""
    async with webhook_receiver(SECRET, always(REFUSAL)) as receiver:
        decision_id, _ = await failed_for_good(db, kyc_queue, receiver, "foureyes")
    exception_id = (await only_exception(gql, staff.rex, decision_id))["id"]
    changes = {"effectTarget": "http://example.invalid/hook"}
    version = await correct(gql, staff, exception_id, changes, evidence="ticket://ops/OPS-18")
    own = await claim(gql, staff.rex_as_approver, APPROVAL_QUEUE)
    own_approval = under_claim(exception_id, own["leaseToken"], version=version)
    refused = await run(gql, staff.rex_as_approver, APPROVE_CORRECTION, input=own_approval)
    assert refused["__typename"] == "NotPermitted", refused
    assert "four-eyes" in refused["message"]
    assert (await application_row(owner_conn, decision_id))["state"] == "failed"


# --- who answers a redrive that Casework carries out ------------------------------------------


async def test_only_casework_reports_the_result_of_a_redrive_it_carries_out(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
) -> None:
    """apply_decision's redrives are carried out by Casework (redrive_via 'casework') and
    closed as corrected only on the result of the re-application. An integration token that
    claims that result while the decision is still unapplied is refused; so when the
    re-application then fails for good, the failure lands on an open exception, and the
    decision is not silently dropped."""
    async with webhook_receiver(SECRET, always(REFUSAL)) as receiver:
        decision_id, _ = await failed_for_good(db, kyc_queue, receiver, "claimed")
        # No worker runs while the redrive is requested and the integration reports.
        exception_id = (await only_exception(gql, staff.rex, decision_id))["id"]
        version = await correct_and_approve(gql, staff, exception_id, {"retry": True})
        key = await request_redrive(gql, staff.ann, exception_id, version)
        assert (await application_row(owner_conn, decision_id))["state"] == "pending"
        reported = await run(
            gql,
            staff.crm,
            REPORT_REDRIVE_RESULT,
            input={"redriveKey": key, "succeeded": True, "detail": "looks fine to me"},
        )
        after_report = (await gql(staff.rex, EXCEPTION_OF_APPLY, id=exception_id))["data"][
            "exception"
        ]

        # Then the re-application runs, and is refused again.
        async with running(ObservedWorker(db)) as worker:
            assert isinstance(worker, ObservedWorker)
            await worker.until(lambda s: s.failed == 1, "the re-application failed")

    assert (await application_row(owner_conn, decision_id))["state"] == "failed"
    assert await applied_proofs(owner_conn, decision_id) == 0
    final = (await gql(staff.rex, EXCEPTION_OF_APPLY, id=exception_id))["data"]["exception"]
    open_ones = [e for e in await exception_rows(owner_conn, decision_id) if e["state"] != "closed"]
    observed = {
        "report": reported["__typename"],
        "after report": (after_report["state"], after_report["closure"]),
        "final": (final["state"], final["closure"], final["attempts"]),
        "final events": [e["kind"] for e in final["events"]][-2:],
        "open exceptions for the failed decision": len(open_ones),
    }
    assert observed == {
        "report": "NotPermitted",
        "after report": ("REDRIVE_PENDING", None),
        "final": ("NEEDS_REVIEW", None, 2),
        "final events": ["redrive_requested", "redrive_failed"],
        "open exceptions for the failed decision": 1,
    }


async def test_a_redrive_of_an_already_applied_decision_does_not_wait_forever(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    staff: Staff,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A corrected exception is reopened (the design allows it), corrected and approved
    again, and its redrive requested. The decision was applied by the first redrive, so
    there is nothing to put back on the work list; the redrive must still be answered (the
    decision is applied: succeeded) rather than leave the exception redrive_pending with
    nobody to act on it."""
    async with crm_moved(db, kyc_queue, "reopened") as moved:
        _, new_crm, worker, decision_id = moved
        exception_id = (await only_exception(gql, staff.rex, decision_id))["id"]
        await point_webhook_at(gql, staff.admin, kyc_queue, new_crm)
        first = await correct_and_approve(gql, staff, exception_id, {"retry": True})
        await request_redrive(gql, staff.ann, exception_id, first)
        worker.wake()
        await worker.until(lambda s: s.applied == 1, "the first redrive applied")

        reopened = await run(
            gql,
            staff.rex,
            REOPEN_EXCEPTION,
            input={"exceptionId": exception_id, "reason": "the CRM lost the update"},
        )
        assert reopened["__typename"] == "ExceptionUpdated", reopened
        second = await correct_and_approve(gql, staff, exception_id, {"retry": "again"})
        key2 = await request_redrive(gql, staff.ann, exception_id, second)
        worker.wake()

        async def answered() -> bool:
            body = await gql(staff.rex, EXCEPTION_OF_APPLY, id=exception_id)
            return bool(body["data"]["exception"]["state"] != "REDRIVE_PENDING")

        # No signal exists for "nothing happened": bounded polling, as the helpers do.
        try:
            await wait_until(answered, within=5, what="the second redrive answered")
        except AssertionError as stuck:
            row = await application_row(owner_conn, decision_id)
            redrive = await owner_conn.fetchrow(
                "SELECT result FROM exception_redrives WHERE key = $1", key2
            )
            raise AssertionError(
                f"{stuck}: the exception stays REDRIVE_PENDING; redrive {key2} result "
                f"{redrive['result']!r}; the application is {row['state']!r} with "
                f"redrive_key {row['redrive_key']!r}, so no worker will ever answer it"
            ) from None

    done = (await gql(staff.rex, EXCEPTION_OF_APPLY, id=exception_id))["data"]["exception"]
    assert (done["state"], done["closure"]) == ("CLOSED", "CORRECTED")
    assert done["redrive"]["key"] == key2
    assert done["redrive"]["succeeded"] is True
    # Applied once: the webhook was not called again for an applied decision.
    assert [r.key for r in new_crm.requests] == [str(decision_id)]
    no_recording_errors(caplog)
