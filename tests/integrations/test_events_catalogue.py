"""The event catalogue in docs/integrations.md against what the server writes: each type's
example body is held against an event caused here and rendered with the envelope an endpoint
receives (Standard Webhooks): the same keys, the same JSON types, and equal values wherever
the value does not depend on when it ran or on a generated id."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from server.domain.integrations.envelope import EndpointFormat, render
from server.domain.integrations.events import EventType
from server.domain.model import Decision, Verdict
from server.domain.review.decisions import OverturnInput, overturn_decision
from server.store.database import Database
from tests.conftest import APPROVER, reviewer
from tests.integration.helpers import claim, decide, enqueue_one
from tests.integrations.catalogue_support import catalogue_examples, held_against
from tests.integrations.events_support import (
    EXCEPTION_TYPES,
    REVIEW_TYPES,
    WORKFLOW,
    approve,
    as_event,
    close_as_rejected,
    correct,
    expire_lease,
    outbox,
    raise_one,
    redrive,
    report_success,
    subscribe,
    supplier_workflow,
    sweep,
)

RITA = reviewer("rita-reviewer", "kyc")


async def cause_every_event(db: Database, owner: asyncpg.Connection) -> None:
    """One of each type, with the names the catalogue's examples use."""
    await subscribe(owner, REVIEW_TYPES, queues=["kyc", "kyc-senior"])
    await subscribe(owner, EXCEPTION_TYPES, workflows=[WORKFLOW])
    await sweep(db)  # the time events' marks start now
    await owner.execute("UPDATE outbox_sweep_marks SET swept_until = now() - interval '1 hour'")

    await enqueue_one(db, "kyc", "app-7731", {"applicant": "withheld"})
    approved = await decide(db, RITA, await claim(db, RITA))
    overturn = await overturn_decision(
        db, APPROVER, OverturnInput(str(approved.id), "name_mismatch", None)
    )
    assert isinstance(overturn, Decision), overturn
    # Its effect fails for good: decision.failed.
    await owner.execute(
        "UPDATE decision_applications SET state = 'failed', attempts = 8,"
        " last_error = 'HTTP 400: refused', updated_at = now() WHERE decision_id = $1",
        approved.id,
    )
    await enqueue_one(db, "kyc", "app-7732")
    await decide(db, RITA, await claim(db, RITA), Verdict.ESCALATE, "needs_senior")

    late = await enqueue_one(db, "kyc", "app-7733")
    await owner.execute(
        "UPDATE review_items SET due_at = now() - interval '2 minutes' WHERE id = $1", late.id
    )
    held = await claim(db, RITA)  # the late one: overdue, and its lease lapses
    await expire_lease(owner, held.item.id, timedelta(seconds=5))
    await sweep(db)

    await supplier_workflow(db)
    raised = await raise_one(db, "SUP-1042")
    await correct(db, raised.exception.id)
    await approve(db, raised.exception.id)
    await report_success(db, await redrive(db, raised.exception.id))
    await close_as_rejected(db, (await raise_one(db, "SUP-1043")).exception.id)


@pytest.fixture
async def sent(db: Database, kyc_queue: str, owner_conn: asyncpg.Connection) -> dict[str, Any]:
    await cause_every_event(db, owner_conn)
    bodies: dict[str, Any] = {}
    for row in await outbox(owner_conn):
        body, content_type = render(as_event(row), EndpointFormat.STANDARD)
        assert content_type == "application/json"
        # The first of each type (exception.closed: the redrive's, then a person's).
        bodies.setdefault(row["event_type"], json.loads(json.dumps(body)))
    return bodies


async def test_every_event_type_has_one_example_in_the_catalogue() -> None:
    assert sorted(catalogue_examples()) == sorted(str(t) for t in EventType)


async def test_each_example_is_what_the_server_sends(sent: dict[str, Any]) -> None:
    assert sorted(sent) == sorted(str(t) for t in EventType), sorted(sent)
    problems = {
        event_type: held_against(example, sent[event_type])
        for event_type, example in catalogue_examples().items()
    }
    assert {t: p for t, p in problems.items() if p} == {}, json.dumps(sent, indent=2)


def test_the_comparison_can_fail() -> None:
    example = {"type": "item.overdue", "timestamp": "2026-01-05T09:30:00+00:00", "data": {}}
    assert held_against(example, {**example, "type": "item.escalated"})
    assert held_against(example, {**example, "timestamp": 1})
    assert held_against(example, {**example, "timestamp": "yesterday"})
    assert held_against(example, {**example, "extra": None})
    assert not held_against(example, {**example, "timestamp": "2026-12-06T17:00:00.5+00:00"})
