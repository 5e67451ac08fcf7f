"""What the exception API refuses, over the API, and that a refusal writes nothing: no
exception, no event, no correction, no redrive, no change to the item or its lease."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import asyncpg
import pytest

from tests.api.conftest import GraphQL
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, People
from tests.exceptions.operations import (
    ATTACH_EVIDENCE,
    RAISE,
    REPORT_REDRIVE_RESULT,
    SUBMIT_CORRECTION,
    correction_input,
    mismatch_input,
    release,
    run,
    under_claim,
)
from tests.exceptions.states import (
    ACTIONS,
    CORRECTION,
    CORRECTION_EVIDENCE,
    Driven,
    claim_own,
    correct,
    queue_redrive,
    raised,
    redrive_pending,
    written,
)
from tests.integration.helpers import expire_lease

# Every test here works in the supplier-onboarding workflow, set up over the API.
pytestmark = pytest.mark.usefixtures("supplier_workflow")


async def held(gql: GraphQL, people: People) -> tuple[Driven, str]:
    """A fresh exception that Sam holds under a claim, with his lease token."""
    driven = await raised(gql, people)
    return driven, await claim_own(gql, people.sam, OWNER_QUEUE, driven)


def correction(driven: Driven, lease: str, **overrides: Any) -> dict[str, Any]:
    submitted = correction_input(driven.id, lease, changes=CORRECTION, evidence=CORRECTION_EVIDENCE)
    submitted.update(overrides)
    return submitted


async def refused_raise(
    gql: GraphQL, token: str, owner_conn: asyncpg.Connection, **overrides: Any
) -> dict[str, Any]:
    """The walk-through's exception raised with `overrides` by `token`, and it writes
    nothing: the result."""
    before = await written(owner_conn)

    result = await run(gql, token, RAISE, input=mismatch_input(**overrides))

    assert await written(owner_conn) == before
    return result


async def refused_correction(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection, **overrides: Any
) -> tuple[Driven, dict[str, Any]]:
    """Sam, holding a fresh exception, submits a correction with `overrides`, and it writes
    nothing: the exception and the result."""
    driven, lease = await held(gql, people)
    before = await written(owner_conn)

    result = await run(
        gql, people.sam, SUBMIT_CORRECTION, input=correction(driven, lease, **overrides)
    )

    assert await written(owner_conn) == before
    return driven, result


def invalid(field: str) -> dict[str, str]:
    return {"__typename": "InvalidInput", "field": field}


# --- corrections ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        # missing_approval is in the workflow's catalogue, but it is not this exception's reason.
        pytest.param({"reasonCode": "missing_approval"}, "reasonCode", id="another-reason"),
        pytest.param({"evidence": []}, "evidence", id="without-evidence"),
    ],
)
async def test_a_correction_that_does_not_answer_the_exception_is_refused(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    overrides: dict[str, Any],
    field: str,
) -> None:
    _, result = await refused_correction(gql, people, owner_conn, **overrides)

    assert result == {**result, **invalid(field)}


# --- no secrets in the record --------------------------------------------------------------

CREDENTIAL_FACTS = [
    pytest.param({"password": "hunter2"}, id="password"),
    pytest.param({"apiKey": "ak-123"}, id="apiKey"),
    pytest.param({"api_key": "ak-123"}, id="api_key"),
    pytest.param({"X-Api-Key": "ak-123"}, id="X-Api-Key"),
    pytest.param({"client_secret": "cs-123"}, id="client_secret"),
    pytest.param({"sessionToken": "st-123"}, id="sessionToken"),
    pytest.param({"private_key": "-----BEGIN"}, id="private_key"),
    pytest.param({"Authorization": "Bearer abc"}, id="Authorization"),
    pytest.param({"bank": {"iban": "GB00X", "accessToken": "at-123"}}, id="nested"),
    pytest.param({"accounts": [{"iban": "GB00X"}, {"refresh_token": "rt"}]}, id="in-a-list"),
]


@pytest.mark.parametrize("context", CREDENTIAL_FACTS)
async def test_a_credential_key_in_the_raised_context_is_refused(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    context: dict[str, Any],
) -> None:
    result = await refused_raise(gql, people.erp, owner_conn, context=context)

    assert result == {**result, **invalid("context")}


@pytest.mark.parametrize("changes", CREDENTIAL_FACTS)
async def test_a_credential_key_in_a_correction_is_refused(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    changes: dict[str, Any],
) -> None:
    _, result = await refused_correction(gql, people, owner_conn, changes=changes)

    assert result == {**result, **invalid("changes")}


CREDENTIAL_REFERENCES = [
    pytest.param("https://sam:hunter2@docs.example.com/certificate.pdf", id="user-and-password"),
    pytest.param("https://sam@docs.example.com/certificate.pdf", id="user"),
    pytest.param(
        "https://bucket.s3.amazonaws.com/certificate.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAEXAMPLE%2F20250101%2Feu-west-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20250101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=abcdef0123456789",
        id="s3-presigned",
    ),
    pytest.param(
        "https://acct.blob.core.windows.net/docs/certificate.pdf?sv=2022-11-02&sr=b&sp=r&sig=abc",
        id="azure-sas",
    ),
    pytest.param("https://docs.example.com/certificate.pdf?token=abc123", id="token-query"),
    # An OAuth implicit-grant redirect carries its bearer token in the fragment.
    pytest.param(
        "https://docs.example.com/certificate.pdf#access_token=abc123", id="token-fragment"
    ),
]


@pytest.mark.parametrize("reference", CREDENTIAL_REFERENCES)
async def test_a_credential_reference_is_refused_when_raising(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    reference: str,
) -> None:
    result = await refused_raise(gql, people.erp, owner_conn, evidence=[reference])

    assert result == {**result, **invalid("evidence")}


@pytest.mark.parametrize("reference", CREDENTIAL_REFERENCES)
async def test_a_credential_reference_is_refused_as_evidence(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    reference: str,
) -> None:
    driven, lease = await held(gql, people)
    before = await written(owner_conn)

    attached = await run(
        gql, people.sam, ATTACH_EVIDENCE, input=under_claim(driven.id, lease, evidence=[reference])
    )
    corrected = await run(
        gql,
        people.sam,
        SUBMIT_CORRECTION,
        input=correction(driven, lease, evidence=[*CORRECTION_EVIDENCE, reference]),
    )

    assert attached == {**attached, **invalid("evidence")}
    assert corrected == {**corrected, **invalid("evidence")}
    assert await written(owner_conn) == before


# --- the catalogue -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"reasonCode": "entity_mismatch_v2"}, id="unknown-reason"),
        pytest.param({"workflow": "supplier_offboarding"}, id="unknown-workflow"),
    ],
)
async def test_a_raise_outside_the_catalogue_is_refused(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    overrides: dict[str, str],
) -> None:
    result = await refused_raise(gql, people.erp, owner_conn, **overrides)

    assert result == {**result, **invalid("reasonCode")}


# --- roles ---------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["sam", "ann", "admin", "manager"])
async def test_only_an_integration_raises(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection, who: str
) -> None:
    result = await refused_raise(gql, getattr(people, who), owner_conn)

    assert result["__typename"] == "NotPermitted", result


@pytest.mark.parametrize("action", ["approveCorrection", "rejectCorrection"])
@pytest.mark.parametrize("who", ["sue", "admin"])
async def test_only_an_approver_judges_a_correction(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    action: str,
    who: str,
) -> None:
    driven = await correct(gql, people, await raised(gql, people))
    # Even with the approver's live lease token in hand.
    lease = await claim_own(gql, people.ann, APPROVAL_QUEUE, driven)
    arguments = ACTIONS[action].arguments(driven, lease)
    before = await written(owner_conn)

    result = await run(gql, getattr(people, who), ACTIONS[action].operation, input=arguments)

    assert result["__typename"] == "NotPermitted", result
    assert await written(owner_conn) == before
    # The same call by the approver goes through: only the role was wrong.
    theirs = await run(gql, people.ann, ACTIONS[action].operation, input=arguments)
    assert theirs["__typename"] == "ExceptionUpdated", theirs


@pytest.mark.parametrize("who", ["sam", "ann", "admin"])
async def test_only_an_integration_reports_a_redrive_result(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection, who: str
) -> None:
    driven = await queue_redrive(
        gql, people, await redrive_pending(gql, people, await raised(gql, people))
    )
    arguments = {"redriveKey": driven.redrive_key, "succeeded": True}
    before = await written(owner_conn)

    result = await run(gql, getattr(people, who), REPORT_REDRIVE_RESULT, input=arguments)

    assert result["__typename"] == "NotPermitted", result
    assert await written(owner_conn) == before
    theirs = await run(gql, people.erp, REPORT_REDRIVE_RESULT, input=arguments)
    assert theirs["__typename"] == "RedriveResultRecorded", theirs


# --- stale leases --------------------------------------------------------------------------

# Each action taken under a claim, in a state that allows it.
UNDER_CLAIM = [
    ("NEEDS_REVIEW", "attachEvidence"),
    ("NEEDS_REVIEW", "submitCorrection"),
    ("NEEDS_REVIEW", "closeException"),
    ("AWAITING_APPROVAL", "attachEvidence"),
    ("AWAITING_APPROVAL", "approveCorrection"),
    ("AWAITING_APPROVAL", "rejectCorrection"),
]


@pytest.mark.parametrize("lost_by", ["released", "expired-and-claimed-by-another"])
@pytest.mark.parametrize(("state", "action"), UNDER_CLAIM)
async def test_an_old_lease_token_is_stale(
    gql: GraphQL,
    people: People,
    owner_conn: asyncpg.Connection,
    state: str,
    action: str,
    lost_by: str,
) -> None:
    driven = await raised(gql, people)
    if state == "NEEDS_REVIEW":
        queue, holder, other = OWNER_QUEUE, people.sam, people.sue
    else:
        driven = await correct(gql, people, driven)
        queue, holder, other = APPROVAL_QUEUE, people.ann, people.sam_as_approver
    old = await claim_own(gql, holder, queue, driven)
    if lost_by == "released":
        await release(gql, holder, driven.item_id, old)
    else:
        await expire_lease(owner_conn, int(driven.item_id))
        assert await claim_own(gql, other, queue, driven) != old
    before = await written(owner_conn)

    result = await run(
        gql, holder, ACTIONS[action].operation, input=ACTIONS[action].arguments(driven, old)
    )

    assert result == {**result, "__typename": "StaleLease", "itemId": driven.item_id}
    assert await written(owner_conn) == before


async def test_a_lease_token_that_never_existed_is_stale(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection
) -> None:
    driven, result = await refused_correction(gql, people, owner_conn, leaseToken=str(uuid4()))

    assert result == {**result, "__typename": "StaleLease", "itemId": driven.item_id}
