"""A decision whose effect failed for good becomes an exception in workflow apply_decision,
owned by people; the redrive of its approved correction re-applies the decision under the
same idempotency key, and the worker reports the result: closed as corrected, or back to
needs_review with one more attempt counted.

Against a real PostgreSQL, the real GraphQL app (in-process ASGI), real HTTP receivers and
an in-process ApplyWorker whose recordings the test awaits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from server.domain.model import Role
from server.domain.review.apply import DueApplication
from server.effects.http import Session
from server.store.database import Database
from server.worker import WorkerStats
from tests.api.conftest import GraphQL
from tests.apply.helpers import (
    SECRET,
    AwaitedWorker,
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
from tests.conftest import one_row, token_maker
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


class ObservedWorker(AwaitedWorker):
    """The real worker and effects; the test awaits its recordings instead of polling."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, name="apply-exceptions")

    async def _attempt_and_record(self, client: Session, due: DueApplication) -> None:
        try:
            await super()._attempt_and_record(client, due)
        finally:
            await self._changed_now()


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


@dataclass(frozen=True)
class Moved:
    """The CRM moved (see Desk.crm_moved): both receivers, the running worker, the decision
    that failed for good against the old one and the exception it raised."""

    old_crm: Receiver
    new_crm: Receiver
    worker: ObservedWorker
    decision_id: int
    exception_id: str


@dataclass(frozen=True)
class Desk:
    """What every test here works with: the kyc queue whose effect fails, the tables as the
    owner reads them, and the API as the staff use it."""

    db: Database
    queue: str
    conn: asyncpg.Connection
    gql: GraphQL
    staff: Staff

    async def exception_rows(self, decision_id: int) -> list[asyncpg.Record]:
        rows: list[asyncpg.Record] = await self.conn.fetch(
            "SELECT * FROM exceptions WHERE workflow = $1 AND source_record_id = $2 ORDER BY id",
            WORKFLOW,
            str(decision_id),
        )
        return rows

    async def exceptions_of_workflow(self) -> int:
        count: int = await self.conn.fetchval(
            "SELECT count(*) FROM exceptions WHERE workflow = $1", WORKFLOW
        )
        return count

    async def event_rows(self, exception_id: str) -> list[asyncpg.Record]:
        rows: list[asyncpg.Record] = await self.conn.fetch(
            "SELECT * FROM exception_events WHERE exception_id = $1 ORDER BY id", exception_id
        )
        return rows

    async def redrive_row(self, key: str) -> asyncpg.Record:
        return await one_row(
            self.conn, "SELECT * FROM exception_redrives WHERE key = $1", key, missing=key
        )

    async def applied_proofs(self, decision_id: int) -> int:
        """How many times the decision is recorded as applied (at most once, by design)."""
        count: int = await self.conn.fetchval(
            "SELECT count(*) FROM applied_decisions WHERE decision_id = $1", decision_id
        )
        return count

    async def redriven_application(self, decision_id: int) -> tuple[Any, ...]:
        """The decision's work-list row as a redrive leaves it: state, attempts in all,
        attempts before the redrive, and the redrive's key."""
        row = await application_row(self.conn, decision_id)
        return (row["state"], row["attempts"], row["attempts_before_redrive"], row["redrive_key"])

    async def only_exception(self, decision_id: int) -> dict[str, Any]:
        """The decision's one exception, as rex (a reviewer of apply_decision) lists it."""
        body = await self.gql(self.staff.rex, EXCEPTIONS_OF_RECORD, record=str(decision_id))
        assert "errors" not in body, body
        edges = body["data"]["exceptions"]["edges"]
        assert len(edges) == 1, edges
        node: dict[str, Any] = edges[0]["node"]
        return node

    async def exception(self, exception_id: str) -> dict[str, Any]:
        """The exception as rex reads it."""
        body = await self.gql(self.staff.rex, EXCEPTION_OF_APPLY, id=exception_id)
        exception: dict[str, Any] = body["data"]["exception"]
        return exception

    async def failed_for_good(
        self, receiver: Receiver, key: str, *, max_attempts: int | None = None
    ) -> tuple[int, WorkerStats]:
        """As refused_decision, the worker stopped after: the decision's id and the worker's
        stats."""
        async with self.refused_decision(receiver, key, max_attempts=max_attempts) as (
            worker,
            decision_id,
        ):
            pass
        return decision_id, worker.stats

    @asynccontextmanager
    async def refused_decision(
        self, receiver: Receiver, key: str, *, max_attempts: int | None = None
    ) -> AsyncIterator[tuple[ObservedWorker, int]]:
        """The queue's webhook pointed at `receiver`, an ObservedWorker running, and a decision
        whose effect failed for good under it: yields the worker and the decision's id."""
        await configure_effect(
            self.db, self.queue, webhook(receiver.url), max_attempts=max_attempts
        )
        async with running(ObservedWorker(self.db)) as worker:
            assert isinstance(worker, ObservedWorker)
            decision_id = await make_decision(self.db, self.queue, key)
            worker.wake()
            await worker.until(lambda s: s.failed == 1, "the decision failed")
            yield worker, decision_id

    @asynccontextmanager
    async def crm_moved(
        self, key: str, *, answer: Reply = OK, max_attempts: int | None = None
    ) -> AsyncIterator[Moved]:
        """The CRM moved: the old receiver refuses every request and a decision failed for good
        against it (see refused_decision); the new receiver gives `answer`."""
        async with (
            webhook_receiver(SECRET, always(REFUSAL)) as old_crm,
            webhook_receiver(SECRET, always(answer)) as new_crm,
            self.refused_decision(old_crm, key, max_attempts=max_attempts) as (worker, decision),
        ):
            exception_id = (await self.only_exception(decision))["id"]
            yield Moved(old_crm, new_crm, worker, decision, exception_id)

    async def point_webhook_at(self, receiver: Receiver) -> None:
        """The admin re-configures the queue's webhook, over the API."""
        body = await self.gql(
            self.staff.admin, CONFIGURE_WEBHOOK, queue=self.queue, url=receiver.url, secret=SECRET
        )
        assert body["data"]["configureQueue"]["__typename"] == "QueueConfigured", body

    async def correct(
        self,
        exception_id: str,
        changes: dict[str, Any],
        *,
        reason_code: str = "effect_refused",
        evidence: str = "ticket://ops/OPS-17",
    ) -> int:
        """rex claims the exception and submits a correction: it awaits approval. The
        version."""
        corrected = await correct_as(
            self.gql,
            self.staff.rex,
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
        self, exception_id: str, changes: dict[str, Any], **correction: str
    ) -> int:
        """rex corrects the exception (see `correct`); ann approves it. The version."""
        version = await self.correct(exception_id, changes, **correction)
        approved = await approve_as(self.gql, self.staff.ann, APPROVAL_QUEUE, exception_id, version)
        assert approved["item"]["state"] == "PARKED"
        return version

    async def request_redrive(self, token: str, exception_id: str, version: int) -> str:
        queued = await run(
            self.gql,
            token,
            REQUEST_REDRIVE,
            input={"exceptionId": exception_id, "version": version},
        )
        assert queued["__typename"] == "RedriveQueued", queued
        key: str = queued["redriveKey"]
        return key

    async def recorded_cleanly(self, caplog: pytest.LogCaptureFixture) -> None:
        """The work list, proofs and history agree, and the worker never failed to record an
        attempt (it logs and moves on if it does)."""
        assert await inconsistencies(self.conn, every_attempt_recorded=True) == []
        no_recording_errors(caplog)


@pytest.fixture
def desk(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection, gql: GraphQL, staff: Staff
) -> Desk:
    return Desk(db, kyc_queue, owner_conn, gql, staff)


def no_recording_errors(caplog: pytest.LogCaptureFixture) -> None:
    """The worker never failed to record an attempt (it logs and moves on if it does)."""
    broken = [r.getMessage() for r in caplog.records if "could not record" in r.getMessage()]
    assert broken == [], broken


def kind_and_actor(event: asyncpg.Record) -> tuple[str, str, str]:
    """An exception_events row's kind, actor and actor role."""
    return (event["kind"], event["actor"], event["actor_role"])


# --- (a) raising ------------------------------------------------------------------------------


async def test_a_refused_effect_raises_one_exception_owned_by_apply_decision(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    async with webhook_receiver(SECRET, always(REFUSAL)) as receiver:
        decision_id, stats = await desk.failed_for_good(receiver, "refused", max_attempts=5)
        assert stats == WorkerStats(applied=0, retried=0, failed=1, already_applied=0)

    # The decision failed at once (a 4xx is permanent), after one request.
    row = await application_row(desk.conn, decision_id)
    assert (row["state"], row["attempts"], row["redrive_key"]) == ("failed", 1, None)
    [request] = receiver.requests
    assert request.key == str(decision_id)

    # Exactly one exception, for this decision, waiting in apply_decision.
    [exception] = await desk.exception_rows(decision_id)
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
    assert await desk.exceptions_of_workflow() == 1
    item = await desk.conn.fetchrow(
        "SELECT queue, state, kind FROM review_items WHERE id = $1", exception["item_id"]
    )
    assert dict(item) == {"queue": OWNER_QUEUE, "state": "pending", "kind": "exception"}

    [raised] = await desk.event_rows(exception["id"])
    assert kind_and_actor(raised) == ("raised", "casework", "system")
    assert (raised["from_state"], raised["to_state"], raised["version"]) == (
        None,
        "needs_review",
        0,
    )

    # The same, as a reviewer of apply_decision sees it.
    node = await desk.only_exception(decision_id)
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
    await desk.recorded_cleanly(caplog)


async def test_attempts_exhausted_by_transient_failures_raise_attempts_exhausted(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    async with webhook_receiver(SECRET, always(UNAVAILABLE)) as receiver:
        decision_id, stats = await desk.failed_for_good(receiver, "unlucky", max_attempts=2)
        assert stats == WorkerStats(applied=0, retried=1, failed=1, already_applied=0)

    attempts = await attempt_rows(desk.conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "transient"), (2, "permanent")]
    assert [r.key for r in receiver.requests] == [str(decision_id)] * 2
    row = await application_row(desk.conn, decision_id)
    assert (row["state"], row["attempts"]) == ("failed", 2)

    [exception] = await desk.exception_rows(decision_id)
    assert exception["reason_code"] == "attempts_exhausted"
    assert (exception["decision_id"], exception["state"], exception["owner_role"]) == (
        decision_id,
        "needs_review",
        OWNER_QUEUE,
    )
    assert "failed after 2 attempt(s)" in exception["detail"]
    assert "webhook answered 503" in exception["detail"]
    assert exception["context"] == {
        "queue": desk.queue,
        "externalKey": "unlucky-0",
        "verdict": "APPROVE",
        "attempts": 2,
    }
    [raised] = await desk.event_rows(exception["id"])
    assert kind_and_actor(raised) == ("raised", "casework", "system")

    node = await desk.only_exception(decision_id)
    assert (node["reasonCode"], node["decision"]) == (
        "attempts_exhausted",
        {"id": str(decision_id)},
    )
    await desk.recorded_cleanly(caplog)


# --- (b) the redrive succeeds -------------------------------------------------------------------


async def test_a_redriven_decision_is_applied_under_its_key_and_the_exception_closes_corrected(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    async with desk.crm_moved("moved", max_attempts=3) as moved:
        decision_id, new_crm = moved.decision_id, moved.new_crm
        await desk.point_webhook_at(new_crm)
        version = await desk.correct_and_approve(moved.exception_id, {"effectTarget": new_crm.url})
        assert version == 1
        # Approved but not yet redriven: nothing goes back on the work list.
        assert (await application_row(desk.conn, decision_id))["state"] == "failed"

        key = await desk.request_redrive(desk.staff.ann, moved.exception_id, version)
        assert key == f"apply_decision:{decision_id}:v1"
        moved.worker.wake()
        redriven = await new_crm.next_arrival()
        await moved.worker.until(lambda s: s.applied == 1, "the redriven decision applied")
    assert moved.worker.stats == WorkerStats(applied=1, retried=0, failed=1, already_applied=0)

    # The same idempotency key as the refused attempt: the decision id, not the redrive key.
    [refused] = moved.old_crm.requests
    assert refused.key == redriven.key == str(decision_id)
    assert [r.key for r in new_crm.requests] == [str(decision_id)]
    assert redriven.signature_ok
    assert redriven.json()["decisionId"] == str(decision_id)
    assert redriven.json()["attempt"] == 2

    assert await desk.redriven_application(decision_id) == (
        "applied",
        2,
        1,
        key,
    )
    assert await desk.applied_proofs(decision_id) == 1
    attempts = await attempt_rows(desk.conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "permanent"), (2, "applied")]

    closed = await desk.exception(moved.exception_id)
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
    assert len(await desk.exception_rows(decision_id)) == 1
    redrive = await desk.redrive_row(key)
    assert (redrive["result"], redrive["reported_by"]) == ("succeeded", "casework")
    await desk.recorded_cleanly(caplog)


# --- (c) the redrive fails for good again -------------------------------------------------------


async def test_a_redrive_refused_again_returns_the_exception_to_needs_review_and_raises_no_other(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    async with desk.crm_moved("stubborn", answer=STILL_CLOSED, max_attempts=3) as moved:
        decision_id, exception_id = moved.decision_id, moved.exception_id
        await desk.point_webhook_at(moved.new_crm)
        changes = {"effectTarget": moved.new_crm.url}
        version = await desk.correct_and_approve(exception_id, changes)
        key = await desk.request_redrive(desk.staff.rex, exception_id, version)
        moved.worker.wake()
        redriven = await moved.new_crm.next_arrival()
        await moved.worker.until(lambda s: s.failed == 2, "the redrive failed")
    assert moved.worker.stats == WorkerStats(applied=0, retried=0, failed=2, already_applied=0)

    assert redriven.key == moved.old_crm.requests[0].key == str(decision_id)
    assert await desk.redriven_application(decision_id) == (
        "failed",
        2,
        1,
        key,
    )
    assert await desk.applied_proofs(decision_id) == 0

    back = await desk.exception(exception_id)
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
    [only] = await desk.exception_rows(decision_id)
    assert only["id"] == exception_id
    assert await desk.exceptions_of_workflow() == 1
    # And the reviewer can take it up again.
    again = await claim(desk.gql, desk.staff.rex, OWNER_QUEUE)
    assert again["item"]["exception"] == {"id": exception_id, "state": "NEEDS_REVIEW"}
    await desk.recorded_cleanly(caplog)


async def test_a_redrive_gets_a_fresh_attempt_budget_and_its_exhaustion_is_reported_not_raised(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    """Two attempts allowed: the first run exhausts them; the redrive is allowed two more."""
    async with webhook_receiver(SECRET, always(UNAVAILABLE)) as receiver:
        async with desk.refused_decision(receiver, "flaky", max_attempts=2) as (
            worker,
            decision_id,
        ):
            [exception] = await desk.exception_rows(decision_id)
            assert exception["reason_code"] == "attempts_exhausted"
            version = await desk.correct_and_approve(
                exception["id"],
                {"note": "the CRM is back"},
                reason_code="attempts_exhausted",
                evidence="status://crm/incident-88",
            )
            assert version == 1
            key = await desk.request_redrive(desk.staff.ann, exception["id"], version)
            worker.wake()
            await worker.until(lambda s: s.failed == 2, "the redrive exhausted its attempts")
        assert worker.stats == WorkerStats(applied=0, retried=2, failed=2, already_applied=0)

    attempts = await attempt_rows(desk.conn, decision_id)
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [
        (1, "transient"),
        (2, "permanent"),
        (3, "transient"),
        (4, "permanent"),
    ]
    assert [r.key for r in receiver.requests] == [str(decision_id)] * 4
    row = await application_row(desk.conn, decision_id)
    assert (row["state"], row["attempts"], row["attempts_before_redrive"]) == ("failed", 4, 2)

    [only] = await desk.exception_rows(decision_id)
    assert (only["state"], only["attempts"], only["recurrences"]) == ("needs_review", 2, 0)
    kinds = [e["kind"] for e in await desk.event_rows(exception["id"])]
    assert kinds[-2:] == ["redrive_requested", "redrive_failed"]
    assert (await desk.redrive_row(key))["result"] == "failed"
    await desk.recorded_cleanly(caplog)


async def test_a_second_correction_after_a_failed_redrive_can_still_close_it_corrected(
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    async with desk.crm_moved("twice", max_attempts=3) as moved:
        decision_id, exception_id, worker = moved.decision_id, moved.exception_id, moved.worker

        # v1: approved, but the webhook still points at the refusing receiver.
        first = await desk.correct_and_approve(exception_id, {"retry": True})
        key1 = await desk.request_redrive(desk.staff.ann, exception_id, first)
        worker.wake()
        await worker.until(lambda s: s.failed == 2, "the first redrive failed")

        # v2: after the admin fixed the webhook.
        await desk.point_webhook_at(moved.new_crm)
        second = await desk.correct_and_approve(exception_id, {"effectTarget": moved.new_crm.url})
        assert second == first + 1
        key2 = await desk.request_redrive(desk.staff.ann, exception_id, second)
        assert (key1, key2) == (
            f"apply_decision:{decision_id}:v1",
            f"apply_decision:{decision_id}:v2",
        )
        worker.wake()
        await worker.until(lambda s: s.applied == 1, "the second redrive applied")

    assert [r.key for r in moved.old_crm.requests] == [str(decision_id)] * 2
    assert [r.key for r in moved.new_crm.requests] == [str(decision_id)]
    assert await desk.redriven_application(decision_id) == (
        "applied",
        3,
        2,
        key2,
    )
    closed = await desk.exception(exception_id)
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
    assert len(await desk.exception_rows(decision_id)) == 1
    await desk.recorded_cleanly(caplog)


async def test_the_corrector_may_not_approve_an_apply_decision_correction(desk: Desk) -> None:
    """Four-eyes holds for the workflow Casework raises into, too."""
    async with webhook_receiver(SECRET, always(REFUSAL)) as receiver:
        decision_id, _ = await desk.failed_for_good(receiver, "foureyes")
    exception_id = (await desk.only_exception(decision_id))["id"]
    changes = {"effectTarget": "http://example.invalid/hook"}
    version = await desk.correct(exception_id, changes, evidence="ticket://ops/OPS-18")
    rex_as_approver = desk.staff.rex_as_approver
    own = await claim(desk.gql, rex_as_approver, APPROVAL_QUEUE)
    own_approval = under_claim(exception_id, own["leaseToken"], version=version)
    refused = await run(desk.gql, rex_as_approver, APPROVE_CORRECTION, input=own_approval)
    assert refused["__typename"] == "NotPermitted", refused
    assert "four-eyes" in refused["message"]
    assert (await application_row(desk.conn, decision_id))["state"] == "failed"


# --- who answers a redrive that Casework carries out ------------------------------------------


async def test_only_casework_reports_the_result_of_a_redrive_it_carries_out(desk: Desk) -> None:
    """apply_decision's redrives are carried out by Casework (redrive_via 'casework') and
    closed as corrected only on the result of the re-application. An integration token that
    claims that result while the decision is still unapplied is refused; so when the
    re-application then fails for good, the failure lands on an open exception, and the
    decision is not silently dropped."""
    async with webhook_receiver(SECRET, always(REFUSAL)) as receiver:
        decision_id, _ = await desk.failed_for_good(receiver, "claimed")
        # No worker runs while the redrive is requested and the integration reports.
        exception_id = (await desk.only_exception(decision_id))["id"]
        version = await desk.correct_and_approve(exception_id, {"retry": True})
        key = await desk.request_redrive(desk.staff.ann, exception_id, version)
        assert (await application_row(desk.conn, decision_id))["state"] == "pending"
        reported = await run(
            desk.gql,
            desk.staff.crm,
            REPORT_REDRIVE_RESULT,
            input={"redriveKey": key, "succeeded": True, "detail": "looks fine to me"},
        )
        after_report = await desk.exception(exception_id)

        # Then the re-application runs, and is refused again.
        async with running(ObservedWorker(desk.db)) as worker:
            assert isinstance(worker, ObservedWorker)
            await worker.until(lambda s: s.failed == 1, "the re-application failed")

    assert (await application_row(desk.conn, decision_id))["state"] == "failed"
    assert await desk.applied_proofs(decision_id) == 0
    final = await desk.exception(exception_id)
    open_ones = [e for e in await desk.exception_rows(decision_id) if e["state"] != "closed"]
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
    desk: Desk, caplog: pytest.LogCaptureFixture
) -> None:
    """A corrected exception is reopened (the design allows it), corrected and approved
    again, and its redrive requested. The decision was applied by the first redrive, so
    there is nothing to put back on the work list; the redrive must still be answered (the
    decision is applied: succeeded) rather than leave the exception redrive_pending with
    nobody to act on it."""
    async with desk.crm_moved("reopened") as moved:
        decision_id, exception_id, worker = moved.decision_id, moved.exception_id, moved.worker
        await desk.point_webhook_at(moved.new_crm)
        first = await desk.correct_and_approve(exception_id, {"retry": True})
        await desk.request_redrive(desk.staff.ann, exception_id, first)
        worker.wake()
        await worker.until(lambda s: s.applied == 1, "the first redrive applied")

        reopened = await run(
            desk.gql,
            desk.staff.rex,
            REOPEN_EXCEPTION,
            input={"exceptionId": exception_id, "reason": "the CRM lost the update"},
        )
        assert reopened["__typename"] == "ExceptionUpdated", reopened
        second = await desk.correct_and_approve(exception_id, {"retry": "again"})
        key2 = await desk.request_redrive(desk.staff.ann, exception_id, second)
        worker.wake()

        async def answered() -> bool:
            return bool((await desk.exception(exception_id))["state"] != "REDRIVE_PENDING")

        # No signal exists for "nothing happened": bounded polling, as the helpers do.
        try:
            await wait_until(answered, within=5, what="the second redrive answered")
        except AssertionError as stuck:
            row = await application_row(desk.conn, decision_id)
            redrive = await desk.redrive_row(key2)
            raise AssertionError(
                f"{stuck}: the exception stays REDRIVE_PENDING; redrive {key2} result "
                f"{redrive['result']!r}; the application is {row['state']!r} with "
                f"redrive_key {row['redrive_key']!r}, so no worker will ever answer it"
            ) from None

    done = await desk.exception(exception_id)
    assert (done["state"], done["closure"]) == ("CLOSED", "CORRECTED")
    assert done["redrive"]["key"] == key2
    assert done["redrive"]["succeeded"] is True
    # Applied once: the webhook was not called again for an applied decision.
    assert [r.key for r in moved.new_crm.requests] == [str(decision_id)]
    no_recording_errors(caplog)
