"""Resolver outcomes arranged on purpose, each answered alike by both paths: a value, null,
each member of the review loop's result unions, and an unexpected exception (masked as
INTERNAL). The outage is test_outage_differential.py's.

Each case says what the lean path's answer must be (its outcome, outcomes.py), so that a
state that stopped producing the case fails here instead of comparing two refusals.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from server.domain.review import queues as queue_domain
from tests.lean.apps import Pair, bearer, graphql_body
from tests.lean.documents import console_document
from tests.lean.outcomes import COVERAGE, outcome
from tests.lean.snapshot import Snapshot
from tests.lean.state import State


async def assert_alike(
    pair: Pair,
    snapshot: Snapshot,
    world: State,
    role: str,
    operation_name: str,
    variables: dict[str, Any] | None,
    expected: str,
) -> None:
    chosen = console_document(operation_name)
    body = graphql_body(chosen.text, variables, operationName=operation_name)
    lean, found = await pair.compare(
        body,
        bearer(world.tokens[role]),
        mutation=chosen.is_mutation,
        restore=snapshot.restore if chosen.is_mutation else None,
    )
    COVERAGE[(chosen.name, outcome(lean), "arranged")] += 1
    assert not found, "\n".join(found)
    assert outcome(lean) == expected, lean.body


def _decision(world: State, **changes: Any) -> dict[str, Any]:
    lease = world.lease
    return {
        "itemId": lease["item"]["id"],
        "leaseToken": lease["leaseToken"],
        "verdict": "APPROVE",
        "reasonCode": "documents_ok",
        "evidenceHash": lease["evidenceHash"],
    } | changes


def _tomorrow() -> str:
    return (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0).isoformat()


# (role, operation, variables from the state, the lean path's expected outcome)
CASES: list[tuple[str, str, Any, str]] = [
    ("reviewer", "Me", lambda w: None, "200 me:value"),
    ("integration", "Me", lambda w: None, "200 me:value"),
    ("manager", "Queue", lambda w: {"name": "kyc"}, "200 queue:value"),
    ("reviewer", "Queue", lambda w: {"name": "nowhere"}, "200 queue:null"),
    ("reviewer", "Item", lambda w: {"id": w.pending_items[0]}, "200 item:value"),
    ("reviewer", "Item", lambda w: {"id": "999999"}, "200 item:null"),
    ("reviewer", "Item", lambda w: {"id": "not-an-id"}, "200 item:null errors:BAD_REQUEST"),
    ("admin", "ItemEvents", lambda w: {"id": w.decided_item}, "200 item:value"),
    ("reviewer", "MyLeases", lambda w: None, "200 me:value"),
    ("reviewer", "ClaimNext", lambda w: {"queue": "kyc"}, "200 claimNext:Claim"),
    ("reviewer", "ClaimNext", lambda w: {"queue": "quiet"}, "200 claimNext:QueueEmpty"),
    ("reviewer", "ClaimNext", lambda w: {"queue": "solo"}, "200 claimNext:LeaseLimitReached"),
    ("integration", "ClaimNext", lambda w: {"queue": "kyc"}, "200 claimNext:NotPermitted"),
    ("reviewer", "ClaimNext", lambda w: {"queue": ""}, "200 claimNext:NotPermitted"),
    (
        "reviewer",
        "SubmitDecision",
        lambda w: {"input": _decision(w)},
        "200 submitDecision:DecisionRecorded",
    ),
    (
        "reviewer",
        "SubmitDecision",
        lambda w: {"input": _decision(w, leaseToken=str(uuid.UUID(int=7)))},
        "200 submitDecision:StaleLease",
    ),
    (
        "reviewer",
        "SubmitDecision",
        lambda w: {"input": _decision(w, evidenceHash="0" * 64)},
        "200 submitDecision:EvidenceChanged",
    ),
    (
        "reviewer",
        "SubmitDecision",
        lambda w: {"input": _decision(w, reasonCode="name_mismatch")},
        "200 submitDecision:InvalidReasonCode",
    ),
    (
        "reviewer",
        "SubmitDecision",
        lambda w: {"input": _decision(w, note="x" * 100_000)},
        "200 submitDecision:InvalidInput",
    ),
    (
        "reviewer",
        "SubmitDecision",
        lambda w: {"input": _decision(w, verdict="MAYBE")},
        "200 errors:BAD_REQUEST",
    ),
    (
        "reviewer",
        "RenewLease",
        lambda w: {"itemId": w.lease["item"]["id"], "leaseToken": w.lease["leaseToken"]},
        "200 renewLease:LeaseRenewed",
    ),
    (
        "reviewer",
        "ReleaseLease",
        lambda w: {"itemId": w.lease["item"]["id"], "leaseToken": str(uuid.UUID(int=7))},
        "200 releaseLease:StaleLease",
    ),
    (
        "reviewer",
        "HoldItem",
        lambda w: {
            "input": {
                "itemId": w.lease["item"]["id"],
                "leaseToken": w.lease["leaseToken"],
                "until": _tomorrow(),
                "reason": "awaiting_documents",
            }
        },
        "200 holdItem:ItemHeld",
    ),
    (
        "reviewer",
        "HoldItem",
        lambda w: {
            "input": {
                "itemId": w.lease["item"]["id"],
                "leaseToken": w.lease["leaseToken"],
                "until": _tomorrow(),
                "reason": "no_such_reason",
            }
        },
        "200 holdItem:InvalidHoldReason",
    ),
    (
        "reviewer",
        "AddNote",
        lambda w: {"input": {"itemId": w.lease["item"]["id"], "body": "Called the applicant."}},
        "200 addNote:NoteAdded",
    ),
]


@pytest.mark.parametrize(
    ("role", "operation_name", "variables", "expected"),
    CASES,
    ids=[f"{case[1]}-{case[3].split(':')[-1]}-{case[0]}" for case in CASES],
)
async def test_an_arranged_outcome_is_answered_alike(
    role: str,
    operation_name: str,
    variables: Any,
    expected: str,
    pair: Pair,
    world: State,
    snapshot: Snapshot,
) -> None:
    await assert_alike(pair, snapshot, world, role, operation_name, variables(world), expected)


async def test_an_unexpected_exception_is_masked_alike(
    pair: Pair, world: State, snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A domain function that raises, in both applications (they share this process)."""

    async def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a bug in the domain")

    monkeypatch.setattr(queue_domain, "list_queues", broken)
    await assert_alike(pair, snapshot, world, "manager", "Queues", None, "200 errors:INTERNAL")
    await assert_alike(
        pair, snapshot, world, "admin", "ManagerOverview", None, "200 errors:INTERNAL"
    )
