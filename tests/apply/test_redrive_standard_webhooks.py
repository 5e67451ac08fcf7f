"""Standard Webhooks on a workflow's redrive webhook: the legacy headers for a workflow
configured before them (and the admin's switch), rotation with an overlap verified by PyPI's
standardwebhooks with the old and the new secret, a 410, and migration 0032 turning the
legacy headers on for exactly the webhook targets that existed before it."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from server.domain.exceptions import redrive_delivery
from server.domain.review.apply import utcnow
from server.effects.http import open_session
from server.effects.webhook import post_redrive
from server.signatures import as_standard_secret, new_secret, verify_signature
from server.store.migrate import apply_migrations
from server.worker import WorkerStats
from tests import pg
from tests.api.conftest import GraphQL
from tests.apply.helpers import (
    REDRIVE_SECRET,
    DeliveringWorker,
    OnboardingDesk,
    configure_workflow,
    delivery_row,
)
from tests.apply.receiver import Receiver, Reply, Request, always
from tests.exceptions.conftest import WORKFLOW, People

PLAIN_SECRET = "erp-redrive-plain-secret-2025"
NAMED = ["kyc", "plain", "credit", "approvals", "onboarding", "payouts"]
NEXT_SECRET = new_secret()

ROTATE = """
mutation($workflow: String!, $secret: String, $overlapHours: Int) {
  result: rotateRedriveSecret(workflow: $workflow, secret: $secret, overlapHours: $overlapHours) {
    __typename
    ... on RedriveSecretRotated {
      generatedSecret overlapEndsAt
      workflow { name redriveLegacyHeaders redriveSecretOverlapEndsAt }
    }
    ... on Error { message }
    ... on InvalidInput { field }
  }
}
"""

WORKFLOW_SETTINGS = """
query($name: String!) {
  workflow(name: $name) { name redriveVia redriveLegacyHeaders redriveSecretOverlapEndsAt }
}
"""


def accepts(secret: str, request: Request) -> bool:
    try:
        Webhook(as_standard_secret(secret)).verify(request.body, request.headers)
    except WebhookVerificationError:
        return False
    return True


async def rotate(gql: GraphQL, token: str, **variables: Any) -> dict[str, Any]:
    body = await gql(token, ROTATE, workflow=WORKFLOW, **variables)
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["result"]
    return result


async def redrive_due(onboarding: OnboardingDesk) -> str:
    """The walk-through's redrive, requested (not yet delivered): its key."""
    exception_id, version = await onboarding.approved_mismatch()
    return await onboarding.request_redrive(exception_id, version)


async def deliver_once(onboarding: OnboardingDesk) -> None:
    """Claims the due redrive and POSTs it once with the real effect; then puts it back as a
    retry due now (the worker's path for a transient failure), so it can be sent again."""
    (due,) = await redrive_delivery.claim_due(onboarding.db, 1)
    async with open_session(4) as client:
        await post_redrive(client, due)
    state = await redrive_delivery.record_failure(
        onboarding.db, due, error="sent again by the test", permanent=False, retry_at=utcnow()
    )
    assert state == "pending"


async def as_before_0032(conn: asyncpg.Connection, receiver: Receiver) -> None:
    """The workflow as migration 0032 leaves one configured before it."""
    await conn.execute(
        "UPDATE workflows SET redrive_secret = $2, redrive_legacy_headers = true, "
        "redrive_target = $3 WHERE name = $1",
        WORKFLOW,
        PLAIN_SECRET,
        receiver.url,
    )


@pytest.mark.usefixtures("supplier_workflow")
async def test_a_workflow_configured_before_gets_both_and_rotates_with_an_overlap(
    onboarding: OnboardingDesk,
) -> None:
    async with onboarding.redrive_receiver() as erp:
        erp.secret = PLAIN_SECRET
        await as_before_0032(onboarding.conn, erp)
        await redrive_due(onboarding)
        await deliver_once(onboarding)

        rotated = await rotate(onboarding.gql, onboarding.people.admin, secret=NEXT_SECRET)
        assert rotated["__typename"] == "RedriveSecretRotated", rotated
        assert rotated["workflow"]["redriveLegacyHeaders"] is True
        ends = rotated["overlapEndsAt"]
        assert ends is not None
        assert rotated["workflow"]["redriveSecretOverlapEndsAt"] == ends
        await deliver_once(onboarding)

        await onboarding.conn.execute(
            "UPDATE retiring_webhook_secrets SET retired_at = now() - interval '25 hours', "
            "expires_at = now() - interval '1 second'"
        )
        await deliver_once(onboarding)

    before, during, after = erp.requests
    assert all(r.legacy for r in erp.requests)
    assert all(r.headers["idempotency-key"] == r.headers["webhook-id"] for r in erp.requests)
    assert len({r.headers["webhook-id"] for r in erp.requests}) == 1
    assert (accepts(PLAIN_SECRET, before), accepts(NEXT_SECRET, before)) == (True, False)
    assert (accepts(PLAIN_SECRET, during), accepts(NEXT_SECRET, during)) == (True, True)
    assert (accepts(PLAIN_SECRET, after), accepts(NEXT_SECRET, after)) == (False, True)
    legacy = [r.headers["casework-signature"] for r in erp.requests]
    assert verify_signature(PLAIN_SECRET, legacy[0], before.body)
    assert verify_signature(PLAIN_SECRET, legacy[1], during.body)
    assert verify_signature(NEXT_SECRET, legacy[2], after.body)


@pytest.mark.usefixtures("supplier_workflow")
async def test_an_admin_switches_a_workflows_legacy_headers(
    onboarding: OnboardingDesk,
) -> None:
    async with onboarding.redrive_receiver() as erp:
        shown = await onboarding.gql(onboarding.people.admin, WORKFLOW_SETTINGS, name=WORKFLOW)
        assert shown["data"]["workflow"]["redriveLegacyHeaders"] is False
        await redrive_due(onboarding)
        await deliver_once(onboarding)
        on = await configure_workflow(
            onboarding.gql, onboarding.people.admin, redriveLegacyHeaders=True
        )
        assert on["__typename"] == "WorkflowConfigured", on
        await deliver_once(onboarding)

    assert [r.legacy for r in erp.requests] == [False, True]
    assert all(r.signature_ok and accepts(REDRIVE_SECRET, r) for r in erp.requests)
    shown = await onboarding.gql(onboarding.people.admin, WORKFLOW_SETTINGS, name=WORKFLOW)
    assert shown["data"]["workflow"]["redriveLegacyHeaders"] is True
    assert shown["data"]["workflow"]["redriveSecretOverlapEndsAt"] is None


@pytest.mark.usefixtures("supplier_workflow")
async def test_a_refused_rotation_names_why(
    onboarding: OnboardingDesk, gql: GraphQL, people: People
) -> None:
    subscription = await rotate(gql, people.admin, secret=NEXT_SECRET)
    assert (subscription["__typename"], subscription["field"]) == ("InvalidInput", "workflow")

    async with onboarding.redrive_receiver():
        not_admin = await rotate(gql, people.erp, secret=NEXT_SECRET)
        plain = await rotate(gql, people.admin, secret=PLAIN_SECRET)
        unknown = await gql(people.admin, ROTATE, workflow="no_such_flow", secret=NEXT_SECRET)
        generated = await rotate(gql, people.admin)

    assert not_admin["__typename"] == "NotPermitted", not_admin
    assert (plain["__typename"], plain["field"]) == ("InvalidInput", "secret")
    assert "whsec_<base64>" in plain["message"]
    assert unknown["data"]["result"]["__typename"] == "InvalidInput"
    assert generated["__typename"] == "RedriveSecretRotated", generated
    assert generated["generatedSecret"].startswith("whsec_")
    assert generated["overlapEndsAt"] is not None


@pytest.mark.usefixtures("supplier_workflow")
async def test_a_410_makes_the_redrive_undeliverable_and_back_to_a_person(
    onboarding: OnboardingDesk,
) -> None:
    gone = Reply(410, body=b'{"error":"retired"}')
    async with onboarding.redrive_receiver(always(gone), redriveMaxAttempts=5) as erp:
        worker = DeliveringWorker(onboarding.db)
        async with onboarding.redrive_requested(worker) as (exception_id, key):
            await worker.until(lambda s: s.redrives_undeliverable == 1, "undeliverable")
            await worker.claimed_everything_due()
        assert worker.stats == WorkerStats(redrives_undeliverable=1)

    [request] = erp.requests
    assert request.signature_ok
    assert accepts(REDRIVE_SECRET, request)
    row = await delivery_row(onboarding.conn, key)
    assert (row["delivery_state"], row["delivery_attempts"]) == ("failed", 1)
    assert "410 Gone" in row["last_delivery_error"]
    back = await onboarding.exception_of(onboarding.people.erp, exception_id)
    assert back["state"] == "NEEDS_REVIEW"
    assert back["events"][-1]["kind"] == "redrive_failed"


# --- migration 0032 ---------------------------------------------------------------------------


@pytest.fixture
async def before_0032(pg_server: str, tmp_path: Path) -> AsyncIterator[asyncpg.Connection]:
    """A database migrated up to 0031, as a deployment was before this change."""
    for migration in sorted(pg.MIGRATIONS_DIR.glob("*.sql")):
        if int(migration.name[:4]) <= 31:
            shutil.copy(migration, tmp_path / migration.name)
    name = await pg.create_empty_database(pg_server, "casework_before_0032")
    conn = await asyncpg.connect(pg.owner_dsn(pg_server, name))
    try:
        await apply_migrations(conn, tmp_path)
        yield conn
    finally:
        await conn.close()
        await pg.drop_database(pg_server, name)


async def test_0032_keeps_the_legacy_headers_for_every_webhook_configured_before_it(
    before_0032: asyncpg.Connection,
) -> None:
    conn = before_0032
    await conn.execute(
        "INSERT INTO queues (name, effect_kind, effect_target, effect_secret) VALUES "
        "('kyc', 'webhook', 'https://erp.example/d', $1), ('plain', 'none', NULL, NULL), "
        "('credit', 'handler', 'credit_limits', NULL), ('approvals', 'none', NULL, NULL)",
        PLAIN_SECRET,
    )
    await conn.execute(
        "INSERT INTO workflows (name, approval_queue, redrive_via, redrive_target, redrive_secret) "
        "VALUES ('onboarding', 'approvals', 'webhook', 'https://erp.example/r', $1), "
        "('payouts', 'approvals', 'subscription', NULL, NULL)",
        PLAIN_SECRET,
    )

    applied = await apply_migrations(conn, pg.MIGRATIONS_DIR)

    assert 32 in [m.version for m in applied]
    queues = dict(
        await conn.fetch(
            "SELECT name, effect_legacy_headers FROM queues WHERE name = ANY ($1)", NAMED
        )
    )
    assert queues == {"kyc": True, "plain": False, "credit": False, "approvals": False}
    workflows = dict(
        await conn.fetch(
            "SELECT name, redrive_legacy_headers FROM workflows WHERE name = ANY ($1)", NAMED
        )
    )
    assert workflows == {"onboarding": True, "payouts": False}
    # The plain secrets stay as they were: they keep signing (their whsec_ form verifies).
    secrets = await conn.fetchval("SELECT effect_secret FROM queues WHERE name = 'kyc'")
    assert secrets == PLAIN_SECRET
    # A queue configured afterwards starts with the Standard headers only.
    await conn.execute("INSERT INTO queues (name) VALUES ('new-queue')")
    assert not await conn.fetchval(
        "SELECT effect_legacy_headers FROM queues WHERE name = 'new-queue'"
    )
