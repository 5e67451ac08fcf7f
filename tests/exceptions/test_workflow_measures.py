"""Workflow.measures on a scripted history with known answers: raises with a recurrence, a
closure of each kind, a failed then a successful redrive, a reopen, hands-on and approval
times. Time is driven by moving timestamps in SQL as the owner, never by waiting."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from server.domain.exceptions.actions import (
    Raised,
    RaiseInput,
    approve_correction,
    close_exception,
    raise_exception,
    reopen_exception,
)
from server.domain.exceptions.records import Closure, Consequence
from server.domain.exceptions.redrives import (
    RedriveQueued,
    RedriveReported,
    report_redrive_result,
    request_redrive,
)
from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import GraphQL
from tests.conftest import token_maker
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, REASON, WORKFLOW, People
from tests.exceptions.domain_drivers import (
    ANN,
    ERP,
    SAM,
    claim_exception,
    corrected_by_sam,
    mismatch,
    set_due,
)
from tests.exceptions.operations import WORKFLOW_MEASURE_FIELDS

MISSING = "missing_approval"
DAY = 86400

MEASURES = (
    """
query($name: String!) {
  workflow(name: $name) {
    week: measures {
      sinceSeconds open unclaimedNew unclaimedOverdue raised arrivalsPerDay"""
    + WORKFLOW_MEASURE_FIELDS
    + """
      approverHandlingSeconds { samples p50 max }
    }
    day: measures(sinceSeconds: 86400) {
      capacity(availableReviewerMinutesPerDay: 100, clearBacklogInDays: 2) {
        arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog backlogMinutesPerDay
        availableMinutesPerDay headroomMinutesPerDay enough
      }
      approvalCapacity {
        arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog
        availableMinutesPerDay headroomMinutesPerDay enough
      }
    }
    quarter: measures(sinceSeconds: 7776000) { raised closures { obsolete total } }
  }
}
"""
)


def raised_as(source: str, reason: str, consequence: Consequence) -> RaiseInput:
    return dataclasses.replace(mismatch(source), reason_code=reason, consequence=consequence)


async def raise_new(db: Database, source: str, reason: str, consequence: Consequence) -> str:
    raised = await raise_exception(db, ERP, raised_as(source, reason, consequence))
    assert isinstance(raised, Raised), raised
    return raised.exception.id


def ok(result: Any) -> None:
    assert not hasattr(result, "message"), result


async def approve(db: Database, exception_id: str, version: int) -> None:
    theirs = await claim_exception(db, ANN, APPROVAL_QUEUE, exception_id)
    ok(await approve_correction(db, ANN, exception_id, str(theirs.lease_token), version, None))


async def redrive(db: Database, exception_id: str, version: int, succeeded: bool) -> None:
    queued = await request_redrive(db, SAM, exception_id, version)
    assert isinstance(queued, RedriveQueued), queued
    reported = await report_redrive_result(db, ERP, queued.redrive_key, succeeded, None)
    assert isinstance(reported, RedriveReported), reported


async def close(db: Database, exception_id: str, closure: Closure) -> None:
    mine = await claim_exception(db, SAM, OWNER_QUEUE, exception_id)
    ok(await close_exception(db, SAM, exception_id, str(mine.lease_token), closure, None))


async def set_hands_on(
    owner: asyncpg.Connection, exception_id: str, kind: str, seconds: list[int]
) -> None:
    """The events of this kind, in order, get leases that began `seconds` before them."""
    ids = await owner.fetch(
        "SELECT id FROM exception_events WHERE exception_id = $1 AND kind = $2 ORDER BY id",
        exception_id,
        kind,
    )
    assert len(ids) == len(seconds), ids
    for row, hands_on in zip(ids, seconds, strict=True):
        await owner.execute(
            "UPDATE exception_events SET lease_started_at = at - make_interval(secs => $2) "
            "WHERE id = $1",
            row["id"],
            hands_on,
        )


async def set_approval_delay(
    owner: asyncpg.Connection, exception_id: str, version: int, seconds: int
) -> None:
    status = await owner.execute(
        """
        UPDATE exception_corrections AS c
        SET submitted_at = v.at - make_interval(secs => $3)
        FROM exception_events AS v
        WHERE c.exception_id = $1 AND c.version = $2
          AND v.exception_id = c.exception_id AND v.version = c.version
          AND v.kind = 'correction_approved'
        """,
        exception_id,
        version,
        seconds,
    )
    assert status == "UPDATE 1", status


async def age(owner: asyncpg.Connection, exception_id: str, opened: timedelta) -> None:
    """Opened `opened` ago: its raise, or for a reopened one, its last reopen."""
    await owner.execute(
        "UPDATE exceptions SET created_at = now() - $2::interval "
        "WHERE id = $1 AND reopen_count = 0",
        exception_id,
        opened,
    )
    await owner.execute(
        "UPDATE exception_events SET at = now() - $2::interval "
        "WHERE exception_id = $1 AND kind = 'reopened'",
        exception_id,
        opened,
    )


@pytest.fixture
async def history(db: Database, owner_conn: asyncpg.Connection, supplier_workflow: str) -> None:
    # Claims take the highest priority first, so the order matters: each claim below finds
    # only the exception it is for (G stays under sam's live lease throughout).
    # G: held by sam.
    g = await raise_new(db, "SUP-7", REASON, Consequence.HIGH)
    await claim_exception(db, SAM, OWNER_QUEUE, g)

    # B, C, D: closed rejected, duplicate, obsolete.
    for source, reason, closure, hands_on in (
        ("SUP-2", REASON, Closure.REJECTED, 900),
        ("SUP-3", MISSING, Closure.DUPLICATE, 100),
        ("SUP-4", MISSING, Closure.OBSOLETE, 200),
    ):
        closed = await raise_new(db, source, reason, Consequence.LOW)
        await close(db, closed, closure)
        await set_hands_on(owner_conn, closed, "closed", [hands_on])

    # H: raised and closed a month ago: outside the week, inside the quarter.
    h = await raise_new(db, "SUP-8", MISSING, Consequence.LOW)
    await close(db, h, Closure.OBSOLETE)
    await owner_conn.execute(
        "UPDATE exception_events SET at = at - interval '30 days' WHERE exception_id = $1", h
    )

    # A: raised twice while open (a recurrence); corrected, approved, redriven and failed;
    # corrected again, approved, redriven and succeeded (closed corrected); then reopened.
    a = await raise_new(db, "SUP-1", REASON, Consequence.HIGH)
    assert await raise_new(db, "SUP-1", REASON, Consequence.HIGH) == a
    await corrected_by_sam(db, a)
    await approve(db, a, 1)
    await redrive(db, a, 1, succeeded=False)
    await corrected_by_sam(db, a)
    await approve(db, a, 2)
    await redrive(db, a, 2, succeeded=True)
    ok(await reopen_exception(db, SAM, a, "the registry entry was withdrawn"))
    await set_hands_on(owner_conn, a, "correction_submitted", [600, 300])
    await set_hands_on(owner_conn, a, "correction_approved", [120, 60])
    await set_approval_delay(owner_conn, a, 1, 7200)
    await set_approval_delay(owner_conn, a, 2, 3600)

    # E: waiting past its due time, nobody on it. F: waiting, not yet due.
    e = await raise_new(db, "SUP-5", REASON, Consequence.CRITICAL)
    await set_due(owner_conn, e, timedelta(minutes=-5))
    f = await raise_new(db, "SUP-6", MISSING, Consequence.LOW)

    await age(owner_conn, a, timedelta(hours=1))
    await age(owner_conn, e, timedelta(days=3))
    await age(owner_conn, f, timedelta(hours=5))
    await age(owner_conn, g, timedelta(days=2))
    # A's first raise was long ago: its age runs from the reopen, not from the raise.
    await owner_conn.execute(
        "UPDATE exceptions SET created_at = now() - interval '10 days' WHERE id = $1", a
    )


async def measures_of(gql: GraphQL, token: str) -> dict[str, Any]:
    body = await gql(token, MEASURES, name=WORKFLOW)
    assert "errors" not in body, body
    workflow: dict[str, Any] = body["data"]["workflow"]
    return workflow


async def test_the_history_gives_the_known_counts(
    gql: GraphQL, people: People, history: None
) -> None:
    week = (await measures_of(gql, people.manager))["week"]

    assert week["sinceSeconds"] == 7 * DAY
    # A (reopened), E, F, G are open; A and F wait unclaimed and are not due, E is overdue,
    # G is held.
    assert (week["open"], week["unclaimedNew"], week["unclaimedOverdue"]) == (4, 2, 1)
    assert week["raised"] == 7
    assert week["arrivalsPerDay"] == pytest.approx(1.0)
    assert week["repeats"] == [
        {
            "reasonCode": REASON,
            "raised": 4,
            "recurrences": 1,
            "sourcesWithRepeats": 1,
            "repeatShare": pytest.approx(0.2),
        },
        {
            "reasonCode": MISSING,
            "raised": 3,
            "recurrences": 0,
            "sourcesWithRepeats": 0,
            "repeatShare": 0.0,
        },
    ]
    assert week["redrives"] == {"requested": 2, "succeeded": 1, "failed": 1, "successRate": 0.5}
    assert week["closures"] == {
        "corrected": 1,
        "rejected": 1,
        "duplicate": 1,
        "obsolete": 1,
        "total": 4,
    }
    assert (week["reopened"], week["reopenRate"]) == (1, 0.25)


async def test_hands_on_and_approval_times_are_apart(
    gql: GraphQL, people: People, history: None
) -> None:
    week = (await measures_of(gql, people.manager))["week"]

    # Operators: corrections after 600 and 300 seconds, closures after 900, 100, 200.
    assert week["handlingSeconds"] == {
        "samples": 5,
        "p50": pytest.approx(300),
        "p90": pytest.approx(780),
        "p99": pytest.approx(888),
        "max": pytest.approx(900),
    }
    # Approvers' own hands-on time: 120 and 60 seconds under their leases.
    assert week["approverHandlingSeconds"] == {
        "samples": 2,
        "p50": pytest.approx(90),
        "max": pytest.approx(120),
    }
    # Elapsed from submission to approval: two hours, then one.
    assert week["approvalSeconds"] == {
        "samples": 2,
        "p50": pytest.approx(5400),
        "p90": pytest.approx(6840),
        "p99": pytest.approx(7164),
        "max": pytest.approx(7200),
    }


async def test_age_by_reason_counts_from_the_last_opening(
    gql: GraphQL, people: People, history: None
) -> None:
    ages = (await measures_of(gql, people.manager))["week"]["ageByReason"]

    assert [(a["reasonCode"], a["consequence"], a["open"]) for a in ages] == [
        (REASON, "CRITICAL", 1),
        (REASON, "HIGH", 2),
        (MISSING, "LOW", 1),
    ]
    # The ages were set a moment before the read: allow that moment, nothing more.
    slack = 60
    critical, high, low = ages
    assert critical["oldestAgeSeconds"] == pytest.approx(3 * DAY, abs=slack)
    assert high["oldestAgeSeconds"] == pytest.approx(2 * DAY, abs=slack)
    # A reopened an hour ago (raised ten days ago) and G raised two days ago.
    assert high["p50AgeSeconds"] == pytest.approx((2 * DAY + 3600) / 2, abs=slack)
    assert low["oldestAgeSeconds"] == pytest.approx(5 * 3600, abs=slack)


async def test_capacity_counts_operator_and_approver_minutes_apart(
    gql: GraphQL, people: People, history: None
) -> None:
    configured = await gql(
        people.admin,
        'mutation { configureWorkflow(input: {name: "supplier_onboarding", '
        "approverMinutesPerDay: 2}) { __typename } }",
    )
    assert configured["data"]["configureWorkflow"]["__typename"] == "WorkflowConfigured"

    day = (await measures_of(gql, people.manager))["day"]

    # Operator passes in the day: 7 raised + 1 reopened + 1 failed redrive; mean handling
    # 2100 s / 5 = 7 minutes; 4 waiting for review (A, E, F, G) cleared over 2 days.
    assert day["capacity"] == {
        "arrivalsPerDay": pytest.approx(9),
        "handlingMinutesMean": pytest.approx(7),
        "demandMinutesPerDay": pytest.approx(63),
        "backlog": 4,
        "backlogMinutesPerDay": pytest.approx(14),
        "availableMinutesPerDay": 100,
        "headroomMinutesPerDay": pytest.approx(23),
        "enough": True,
    }
    # Approvers: 2 corrections a day at 1.5 minutes each; nothing waits for them; the
    # workflow's setting gives them 2 minutes a day.
    assert day["approvalCapacity"] == {
        "arrivalsPerDay": pytest.approx(2),
        "handlingMinutesMean": pytest.approx(1.5),
        "demandMinutesPerDay": pytest.approx(3),
        "backlog": 0,
        "availableMinutesPerDay": 2,
        "headroomMinutesPerDay": pytest.approx(-1),
        "enough": False,
    }


async def test_the_window_leaves_out_older_events(
    gql: GraphQL, people: People, history: None
) -> None:
    quarter = (await measures_of(gql, people.manager))["quarter"]

    # H, a month old, is in the quarter only.
    assert quarter["raised"] == 8
    assert quarter["closures"] == {"obsolete": 2, "total": 5}


async def test_an_action_under_a_lease_records_when_that_lease_began(
    db: Database, owner_conn: asyncpg.Connection, supplier_workflow: str
) -> None:
    exception_id = await raise_new(db, "SUP-9", REASON, Consequence.LOW)
    mine = await corrected_by_sam(db, exception_id)

    # The item keeps its last lease's start after the lease ends (tests/exceptions/
    # test_lease_starts.py: every action, and no second record).
    started = await owner_conn.fetchval(
        "SELECT lease_started_at FROM review_items WHERE id = $1", mine.item.id
    )
    assert started is not None
    recorded = await owner_conn.fetchval(
        "SELECT lease_started_at FROM exception_events "
        "WHERE exception_id = $1 AND kind = 'correction_submitted'",
        exception_id,
    )
    assert recorded == started


SEES = """
query($name: String!) {
  workflow(name: $name) { name measures { open } }
  workflows { name }
}
"""


async def test_a_manager_sees_the_workflows_of_its_queues_only(
    gql: GraphQL, owner_db: Database, people: People, supplier_workflow: str
) -> None:
    make = token_maker(owner_db)
    elsewhere = await make("mia", Role.MANAGER, "payouts")
    approvals = await make("mo", Role.MANAGER, APPROVAL_QUEUE)

    hidden = await gql(elsewhere, SEES, name=WORKFLOW)
    assert hidden == {"data": {"workflow": None, "workflows": []}}, hidden

    shown = await gql(approvals, SEES, name=WORKFLOW)
    assert "errors" not in shown, shown
    assert shown["data"]["workflow"] == {"name": WORKFLOW, "measures": {"open": 0}}
    assert shown["data"]["workflows"] == [{"name": WORKFLOW}]


async def test_an_unknown_workflow_reads_as_null(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    for name in ("no_such_workflow", "Not A Name!"):
        body = await gql(people.manager, SEES, name=name)
        assert body["data"]["workflow"] is None, body


async def test_measures_are_for_managers_and_admins(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    admin = await gql(people.admin, SEES, name=WORKFLOW)
    assert admin["data"]["workflow"] == {"name": WORKFLOW, "measures": {"open": 0}}, admin

    for token in (people.sam, people.ann, people.erp):
        body = await gql(token, SEES, name=WORKFLOW)
        [error] = body["errors"]
        assert error["extensions"]["code"] == "FORBIDDEN", body
        assert error["path"] == ["workflow", "measures"], body


async def test_a_window_out_of_range_is_refused(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    body = await gql(
        people.manager,
        'query { workflow(name: "supplier_onboarding") { measures(sinceSeconds: 0) { open } } }',
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST", body


CONFIGURE_MINUTES = """
mutation($reviewer: Float, $approver: Float) {
  configureWorkflow(input: {name: "supplier_onboarding", reviewerMinutesPerDay: $reviewer,
                            approverMinutesPerDay: $approver}) {
    __typename
    ... on WorkflowConfigured { workflow { reviewerMinutesPerDay approverMinutesPerDay } }
    ... on InvalidInput { field }
  }
}
"""


async def test_available_minutes_are_a_workflow_setting(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    set_both = await gql(people.admin, CONFIGURE_MINUTES, reviewer=240, approver=60)
    assert set_both["data"]["configureWorkflow"]["workflow"] == {
        "reviewerMinutesPerDay": 240,
        "approverMinutesPerDay": 60,
    }, set_both
    # Leaving one out keeps it.
    one = await gql(people.admin, CONFIGURE_MINUTES, reviewer=300)
    assert one["data"]["configureWorkflow"]["workflow"] == {
        "reviewerMinutesPerDay": 300,
        "approverMinutesPerDay": 60,
    }, one

    refused = await gql(people.admin, CONFIGURE_MINUTES, approver=-1)
    assert refused["data"]["configureWorkflow"] == {
        "__typename": "InvalidInput",
        "field": "approverMinutesPerDay",
    }, refused
