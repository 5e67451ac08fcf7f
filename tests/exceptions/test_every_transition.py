"""Every action tried from every state, over the API.

The expected machine is written out here, not imported from the server, so that a change
to the server's table shows up as a failure to think about.
"""

from __future__ import annotations

from uuid import uuid4

import asyncpg
import pytest

from tests.api.conftest import GraphQL
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, People
from tests.exceptions.operations import SUBMIT_CORRECTION, correction_input, run
from tests.exceptions.states import (
    ACTIONS,
    Driven,
    after_failed_redrive,
    claim_own,
    drive,
    event_count,
    queue_redrive,
    raised,
    token_of,
    written,
)

# Every test here works in the supplier-onboarding workflow, set up over the API.
pytestmark = pytest.mark.usefixtures("supplier_workflow")

STATES = ["NEEDS_REVIEW", "AWAITING_APPROVAL", "REDRIVE_PENDING", "CLOSED"]

# state -> the actions it allows -> the state each leads to.
MACHINE: dict[str, dict[str, str]] = {
    "NEEDS_REVIEW": {
        "attachEvidence": "NEEDS_REVIEW",
        "submitCorrection": "AWAITING_APPROVAL",
        "closeException": "CLOSED",
    },
    "AWAITING_APPROVAL": {
        "attachEvidence": "AWAITING_APPROVAL",
        "approveCorrection": "REDRIVE_PENDING",
        "rejectCorrection": "NEEDS_REVIEW",
    },
    "REDRIVE_PENDING": {
        "requestRedrive": "REDRIVE_PENDING",
        "reportRedriveResult": "CLOSED",
    },
    "CLOSED": {
        "reopenException": "NEEDS_REVIEW",
    },
}

# Where an exception can be claimed in each state, and who works that queue. In the other
# states its item is parked: nobody can hold a lease on it.
CLAIMABLE = {"NEEDS_REVIEW": (OWNER_QUEUE, "sam"), "AWAITING_APPROVAL": (APPROVAL_QUEUE, "ann")}


def performer(action: str, state: str) -> str:
    # Evidence is attached by whoever holds the exception's claim: its owner's reviewer
    # before a correction, the approver while it waits for approval.
    if action == "attachEvidence" and state in CLAIMABLE:
        return CLAIMABLE[state][1]
    return ACTIONS[action].performer


async def lease_for(gql: GraphQL, people: People, who: str, state: str, driven: Driven) -> str:
    """A real claim where `who` can claim the exception; elsewhere a well-formed token that
    holds nothing, since the state is checked before the lease."""
    queue, worker = CLAIMABLE.get(state, (None, None))
    if queue is None or worker != who:
        return str(uuid4())
    return await claim_own(gql, token_of(people, who), queue, driven)


async def prepared(gql: GraphQL, people: People, state: str, action: str) -> Driven:
    """A fresh exception in `state`. A redrive result names its redrive by key, and only a
    requested redrive has one, so for that action the exception carries one: the current
    version's in REDRIVE_PENDING, an answered (failed) one in every other state."""
    if action != "reportRedriveResult":
        return await drive(gql, people, state, await raised(gql, people))
    if state == "REDRIVE_PENDING":
        return await queue_redrive(
            gql, people, await drive(gql, people, state, await raised(gql, people))
        )
    return await drive(gql, people, state, await after_failed_redrive(gql, people))


CASES = [
    pytest.param(state, action, id=f"{state}-{action}") for state in STATES for action in ACTIONS
]


@pytest.mark.parametrize(("state", "action"), CASES)
async def test_every_action_from_every_state(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    state: str,
    action: str,
) -> None:
    driven = await prepared(gql, people, state, action)
    who = performer(action, state)
    lease = await lease_for(gql, people, who, state, driven) if ACTIONS[action].needs_lease else ""
    before = await written(owner_conn)
    events_before = await event_count(owner_conn, driven.id)

    result = await run(
        gql,
        token_of(people, who),
        ACTIONS[action].operation,
        input=ACTIONS[action].arguments(driven, lease),
    )

    if action in MACHINE[state]:
        goes_to = MACHINE[state][action]
        assert result["__typename"] == ACTIONS[action].succeeded_as, result
        exception = result["exception"]
        assert exception["state"] == goes_to
        assert await event_count(owner_conn, driven.id) == events_before + 1
        last = exception["events"][-1]
        assert (last["fromState"], last["toState"]) == (state, goes_to)
        assert exception["allowedActions"] == [
            ACTIONS[name].name.upper() for name in MACHINE[goes_to]
        ]
    else:
        assert result == {
            **result,
            "__typename": "InvalidTransition",
            "state": state,
            "action": ACTIONS[action].name.upper(),
        }
        assert sorted(result["allowedActions"]) == sorted(
            ACTIONS[name].name.upper() for name in MACHINE[state]
        )
        assert await event_count(owner_conn, driven.id) == events_before
        assert await written(owner_conn) == before


async def test_a_reason_that_excludes_an_action_refuses_it_in_any_state(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    # missing_approval allows only attach_evidence, close_exception and reopen_exception.
    driven = await raised(gql, people, reasonCode="missing_approval")
    lease = await claim_own(gql, people.sam, OWNER_QUEUE, driven)
    before = await written(owner_conn)

    correction = correction_input(
        driven.id,
        lease,
        reason_code="missing_approval",
        changes={"approvalRef": "APR-77"},
        evidence=["ticket://procurement/PRC-313"],
    )
    result = await run(gql, people.sam, SUBMIT_CORRECTION, input=correction)

    assert result == {
        **result,
        "__typename": "InvalidTransition",
        "state": "NEEDS_REVIEW",
        "action": "SUBMIT_CORRECTION",
        "allowedActions": ["ATTACH_EVIDENCE", "CLOSE_EXCEPTION"],
    }
    assert await written(owner_conn) == before
