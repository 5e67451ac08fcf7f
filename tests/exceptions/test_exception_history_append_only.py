"""An exception's history cannot be rewritten by the service: the application role may only
INSERT and SELECT its events and correction versions, and PostgreSQL, not our code, refuses
the rest. The API shows that history in the order it was written."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from server.store.database import Database
from tests.api.conftest import GraphQL
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, People
from tests.exceptions.domain_drivers import approved_correction
from tests.exceptions.operations import (
    ATTACH_EVIDENCE,
    EXCEPTION,
    REGISTRY_EVIDENCE,
    REJECT_CORRECTION,
    SUBMIT_CORRECTION,
    claim,
    correction_input,
    raise_mismatch,
    run,
    under_claim,
)
from tests.exceptions.states import REJECTION_REASON

INSUFFICIENT_PRIVILEGE = "42501"
HISTORY = {
    "exception_events": "id",
    "exception_corrections": "workflow, source_record_id, version",
}


@pytest.fixture
async def exception_id(db: Database, supplier_workflow: str) -> str:
    """An exception with events and an approved correction version."""
    exception_id, _ = await approved_correction(db, "SUP-6001")
    return exception_id


async def history(owner: asyncpg.Connection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: [tuple(row) for row in await owner.fetch(f"SELECT * FROM {table} ORDER BY {key}")]
        for table, key in HISTORY.items()
    }


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE exception_events SET detail = 'rewritten', actor = 'mallory' "
        "WHERE exception_id = $1",
        "DELETE FROM exception_events WHERE exception_id = $1",
        "TRUNCATE exception_events",
        "UPDATE exception_corrections SET changes = '{}', corrected_by = 'mallory' "
        "WHERE exception_id = $1",
        "DELETE FROM exception_corrections WHERE exception_id = $1",
        "TRUNCATE exception_corrections",
    ],
    ids=[
        "update-events",
        "delete-events",
        "truncate-events",
        "update-corrections",
        "delete-corrections",
        "truncate-corrections",
    ],
)
async def test_application_role_cannot_rewrite_history(
    exception_id: str,
    app_conn: asyncpg.Connection,
    owner_conn: asyncpg.Connection,
    statement: str,
) -> None:
    before = await history(owner_conn)
    args = [exception_id] if "$1" in statement else []

    with pytest.raises(asyncpg.InsufficientPrivilegeError) as refused:
        await app_conn.execute(statement, *args)

    assert refused.value.sqlstate == INSUFFICIENT_PRIVILEGE
    assert await history(owner_conn) == before


async def test_application_role_may_append_and_read(
    exception_id: str, app_conn: asyncpg.Connection
) -> None:
    # The refusals must come from the privileges on these tables, not from a connection
    # that can do nothing at all.
    count_events = "SELECT count(*) FROM exception_events WHERE exception_id = $1"
    assert await app_conn.fetchval(count_events, exception_id) == 3
    corrections = await app_conn.fetchval(
        "SELECT count(*) FROM exception_corrections WHERE exception_id = $1", exception_id
    )
    assert corrections == 1
    # A probe row, rolled back, so the history keeps only real events.
    probe = app_conn.transaction()
    await probe.start()
    try:
        status = await app_conn.execute(
            "INSERT INTO exception_events (exception_id, workflow, kind, actor, actor_role, "
            "from_state, to_state, version) "
            "SELECT id, workflow, 'evidence_attached', 'probe', 'reviewer', state, state, "
            "version FROM exceptions WHERE id = $1",
            exception_id,
        )
    finally:
        await probe.rollback()
    assert status == "INSERT 0 1"
    assert await app_conn.fetchval(count_events, exception_id) == 3


async def test_owner_reads_the_history(exception_id: str, owner_conn: asyncpg.Connection) -> None:
    events = await owner_conn.fetch(
        "SELECT kind, actor, actor_role, from_state, to_state, version FROM exception_events "
        "WHERE exception_id = $1 ORDER BY id",
        exception_id,
    )
    assert [tuple(row) for row in events] == [
        ("raised", "erp-onboarding", "integration", None, "needs_review", 0),
        ("correction_submitted", "sam", "reviewer", "needs_review", "awaiting_approval", 1),
        ("correction_approved", "ann", "approver", "awaiting_approval", "redrive_pending", 1),
    ]
    correction = await owner_conn.fetchrow(
        "SELECT version, corrected_by, changes, evidence FROM exception_corrections "
        "WHERE exception_id = $1",
        exception_id,
    )
    assert correction is not None
    assert tuple(correction) == (
        1,
        "sam",
        {"legalName": "Acme Holdings Ltd"},
        ["registry://companies-house/09876543"],
    )


async def test_api_shows_the_history_in_order(
    gql: GraphQL, people: People, supplier_workflow: str, owner_conn: asyncpg.Connection
) -> None:
    exception_id = (await raise_mismatch(gql, people.erp))["id"]
    lease = (await claim(gql, people.sam, OWNER_QUEUE))["leaseToken"]
    attach = under_claim(exception_id, lease, evidence=[REGISTRY_EVIDENCE])
    correct = correction_input(
        exception_id,
        lease,
        changes={"legalName": "Acme Holdings Ltd"},
        evidence=["ticket://procurement/PRC-311"],
    )
    for step, operation, fields in (
        ("attach", ATTACH_EVIDENCE, attach),
        ("correct", SUBMIT_CORRECTION, correct),
    ):
        done = await run(gql, people.sam, operation, input=fields)
        assert done["__typename"] == "ExceptionUpdated", (step, done)
    ann = await claim(gql, people.ann, APPROVAL_QUEUE)
    rejection = under_claim(exception_id, ann["leaseToken"], reason=REJECTION_REASON)
    rejected = await run(gql, people.ann, REJECT_CORRECTION, input=rejection)
    assert rejected["__typename"] == "ExceptionUpdated", rejected

    body = await gql(people.manager, EXCEPTION, id=exception_id)
    events = body["data"]["exception"]["events"]

    assert [(e["kind"], e["actor"], e["fromState"], e["toState"]) for e in events] == [
        ("raised", "erp-onboarding", None, "NEEDS_REVIEW"),
        ("evidence_attached", "sam", "NEEDS_REVIEW", "NEEDS_REVIEW"),
        ("correction_submitted", "sam", "NEEDS_REVIEW", "AWAITING_APPROVAL"),
        ("correction_rejected", "ann", "AWAITING_APPROVAL", "NEEDS_REVIEW"),
    ]
    assert events[-1]["detail"] == "The registry extract is for another company number."
    stored = await owner_conn.fetch(
        "SELECT kind, at FROM exception_events WHERE exception_id = $1 ORDER BY id", exception_id
    )
    assert [e["kind"] for e in events] == [row["kind"] for row in stored]
    times = [row["at"] for row in stored]
    assert times == sorted(times)
