"""Webhook targets (queue effects and workflow redrives): an http(s) URL without a user or
password; with CASEWORK_EFFECT_ALLOWED_HOSTS set, only to the hosts it names, checked when
configured and again by the worker before each POST. What a receiver answered is stored cut
to text.RECEIVER_TEXT_LIMIT characters and shown only to admins and integrations.

Real PostgreSQL, the real GraphQL app in-process, a real HTTP receiver, an in-process
ApplyWorker whose recordings the test awaits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from server.config import Settings
from server.domain.failures import InvalidInput
from server.domain.identity.tokens import create_token
from server.domain.model import EffectKind, Role
from server.domain.review.queues import Effect, QueueSettings, configure_queue
from server.domain.text import RECEIVER_TEXT_LIMIT, TRUNCATED_MARK
from server.store.database import Database
from tests.api.conftest import GraphQL, graphql_caller, in_process_client
from tests.apply.helpers import (
    CONFIGURE_WORKFLOW,
    REDRIVE_SECRET,
    SECRET,
    DeliveringWorker,
    OnboardingDesk,
    application_row,
    attempt_rows,
    delivery_row,
    make_decision,
    running,
    webhook,
)
from tests.apply.receiver import Reply, always, webhook_receiver
from tests.conftest import ADMIN, TestDatabase
from tests.exceptions.conftest import APPROVAL_QUEUE, WORKFLOW, People
from tests.exceptions.operations import run
from tests.exceptions.states import written

CONFIGURE_QUEUE = """
mutation($input: ConfigureQueueInput!) {
  result: configureQueue(input: $input) {
    __typename
    ... on QueueConfigured { queue { name effectKind effectTarget } }
    ... on Error { message }
    ... on InvalidInput { field }
  }
}
"""

APPLICATION = """
query($id: ID!) {
  decision(id: $id) {
    application { state attempts lastError note history { attempt outcome error } }
  }
}
"""

WITH_USERINFO = [
    "https://user:password@hooks.example/casework",
    "https://user@hooks.example/casework",
    "https://:secret@hooks.example/casework",
    "http://%75ser:pw@127.0.0.1:9/hook",
]
NOT_HTTP = ["ftp://hooks.example/casework", "file:///etc/passwd", "hooks.example/casework", ""]


def queue_effect(target: str) -> dict[str, Any]:
    return {"name": "kyc", "effect": {"kind": "WEBHOOK", "target": target, "secret": SECRET}}


def workflow_webhook(target: str) -> dict[str, Any]:
    return {
        "name": WORKFLOW,
        "approvalQueue": APPROVAL_QUEUE,
        "redriveVia": "WEBHOOK",
        "redriveTarget": target,
        "redriveSecret": REDRIVE_SECRET,
    }


# --- 1. the shape of a target --------------------------------------------------------------


@pytest.mark.parametrize("target", WITH_USERINFO + NOT_HTTP)
async def test_a_queue_effect_with_credentials_or_another_scheme_is_refused(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection, target: str
) -> None:
    before = await written(owner_conn)
    queues_before = await owner_conn.fetch("SELECT q::text FROM queues AS q ORDER BY name")

    result = await run(gql, people.admin, CONFIGURE_QUEUE, input=queue_effect(target))

    assert (result["__typename"], result["field"]) == ("InvalidInput", "effect.target"), result
    if target in WITH_USERINFO:
        assert "user or password" in result["message"], result
    assert await written(owner_conn) == before
    assert await owner_conn.fetch("SELECT q::text FROM queues AS q ORDER BY name") == queues_before


@pytest.mark.parametrize("target", WITH_USERINFO + NOT_HTTP)
async def test_a_redrive_webhook_with_credentials_or_another_scheme_is_refused(
    gql: GraphQL,
    people: People,
    supplier_workflow: str,
    owner_conn: asyncpg.Connection,
    target: str,
) -> None:
    workflows_before = await owner_conn.fetch("SELECT w::text FROM workflows AS w ORDER BY name")

    result = await run(gql, people.admin, CONFIGURE_WORKFLOW, input=workflow_webhook(target))

    assert (result["__typename"], result["field"]) == ("InvalidInput", "redrive.target"), result
    if target in WITH_USERINFO:
        assert "user or password" in result["message"], result
    after = await owner_conn.fetch("SELECT w::text FROM workflows AS w ORDER BY name")
    assert after == workflows_before


async def test_a_plain_https_target_is_shown_as_configured(gql: GraphQL, people: People) -> None:
    target = "https://hooks.example:8443/casework?team=kyc"

    result = await run(gql, people.admin, CONFIGURE_QUEUE, input=queue_effect(target))

    assert result["__typename"] == "QueueConfigured", result
    assert result["queue"]["effectTarget"] == target


# --- 2. the allow-list, when configuring ----------------------------------------------------


@pytest.fixture
async def allow_listed(test_database: TestDatabase) -> AsyncIterator[GraphQL]:
    """The app with CASEWORK_EFFECT_ALLOWED_HOSTS=hooks.example,127.0.0.1."""
    settings = dataclasses.replace(
        Settings.from_env(), effect_allowed_hosts=frozenset({"hooks.example", "127.0.0.1"})
    )
    async with in_process_client(test_database, dev=False, settings=settings) as c:
        yield graphql_caller(c)


@pytest.mark.parametrize(
    ("target", "allowed"),
    [
        ("https://hooks.example/redrives", True),
        ("https://HOOKS.example./redrives", True),
        ("http://127.0.0.1:9/redrives", True),
        ("https://metadata.internal/latest", False),
        ("https://hooks.example.attacker.test/redrives", False),
        ("http://10.0.0.1/redrives", False),
    ],
)
async def test_a_redrive_webhook_to_a_host_not_allowed_is_refused(
    allow_listed: GraphQL,
    people: People,
    supplier_workflow: str,
    owner_conn: asyncpg.Connection,
    target: str,
    allowed: bool,
) -> None:
    workflows_before = await owner_conn.fetch("SELECT w::text FROM workflows AS w ORDER BY name")

    result = await run(
        allow_listed, people.admin, CONFIGURE_WORKFLOW, input=workflow_webhook(target)
    )

    if allowed:
        assert result["__typename"] == "WorkflowConfigured", result
        return
    assert (result["__typename"], result["field"]) == ("InvalidInput", "redrive.target"), result
    assert "is not allowed" in result["message"], result
    after = await owner_conn.fetch("SELECT w::text FROM workflows AS w ORDER BY name")
    assert after == workflows_before


async def test_a_queue_effect_to_a_host_not_allowed_is_refused(
    db: Database, owner_conn: asyncpg.Connection
) -> None:
    allowed = frozenset({"hooks.example"})
    before = await owner_conn.fetch("SELECT q::text FROM queues AS q ORDER BY name")

    refused = await configure_queue(
        db,
        ADMIN,
        QueueSettings("kyc", effect=webhook("https://metadata.internal/hook")),
        allowed_hosts=allowed,
    )
    assert isinstance(refused, InvalidInput), refused
    assert refused.field == "effect.target"
    assert "'metadata.internal' is not allowed" in refused.message
    assert await owner_conn.fetch("SELECT q::text FROM queues AS q ORDER BY name") == before

    accepted = await configure_queue(
        db,
        ADMIN,
        QueueSettings("kyc", effect=webhook("https://hooks.example/hook")),
        allowed_hosts=allowed,
    )
    assert not isinstance(accepted, InvalidInput), accepted
    # A handler names a Python callable, not a host: the allow-list is not about it.
    handler = await configure_queue(
        db,
        ADMIN,
        QueueSettings("kyc", effect=Effect(EffectKind.HANDLER, "some.handler")),
        allowed_hosts=allowed,
    )
    assert not isinstance(handler, InvalidInput), handler


async def test_configure_queue_over_the_api_honours_the_allow_list(
    allow_listed: GraphQL, people: People
) -> None:
    result = await run(
        allow_listed,
        people.admin,
        CONFIGURE_QUEUE,
        input=queue_effect("https://metadata.internal/hook"),
    )

    assert (result["__typename"], result["field"]) == ("InvalidInput", "effect.target"), result


# --- 3. the allow-list, when delivering -----------------------------------------------------


class AllowListWorker(DeliveringWorker):
    def __init__(self, db: Database, allowed_hosts: frozenset[str]) -> None:
        super().__init__(db)
        self._settings = dataclasses.replace(self._settings, allowed_hosts=allowed_hosts)


async def test_an_effect_to_a_host_no_longer_allowed_fails_for_good_without_a_post(
    db: Database, kyc_queue: str, owner_conn: asyncpg.Connection
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        # Configured while any host was allowed; the deployment then set an allow-list.
        configured = await configure_queue(
            db, ADMIN, QueueSettings(kyc_queue, effect=webhook(receiver.url), effect_max_attempts=5)
        )
        assert not isinstance(configured, InvalidInput), configured
        refused = await make_decision(db, kyc_queue, "refused")
        worker = AllowListWorker(db, frozenset({"hooks.example"}))
        async with running(worker):
            worker.wake()
            await worker.until(lambda s: s.failed == 1, "the decision failed")
        assert receiver.requests == []

        # The same target, allowed: carried out.
        fine = await make_decision(db, kyc_queue, "fine")
        worker = AllowListWorker(db, frozenset({"127.0.0.1"}))
        async with running(worker):
            worker.wake()
            await worker.until(lambda s: s.applied == 1, "the decision applied")
        assert [r.key for r in receiver.requests] == [str(fine)]

    (attempt,) = await attempt_rows(owner_conn, refused)
    assert attempt["outcome"] == "permanent"
    assert "'127.0.0.1' is not allowed" in attempt["error"], attempt["error"]
    row = await application_row(owner_conn, refused)
    assert (row["state"], row["attempts"], row["last_error"]) == ("failed", 1, attempt["error"])
    # The permanent-failure path: a person owns it.
    owned = await owner_conn.fetchrow(
        "SELECT workflow, reason_code, state FROM exceptions WHERE source_record_id = $1",
        str(refused),
    )
    assert owned is not None
    assert tuple(owned) == ("apply_decision", "effect_refused", "needs_review")


async def test_a_redrive_to_a_host_no_longer_allowed_is_undeliverable_without_a_post(
    onboarding: OnboardingDesk, supplier_workflow: str
) -> None:
    async with onboarding.redrive_receiver(redriveMaxAttempts=5) as erp:
        worker = AllowListWorker(onboarding.db, frozenset({"hooks.example"}))
        async with onboarding.redrive_requested(worker) as (exception_id, key):
            await worker.until(lambda s: s.redrives_undeliverable == 1, "undeliverable")
        assert erp.requests == []

    row = await delivery_row(onboarding.conn, key)
    assert (row["delivery_state"], row["delivery_attempts"]) == ("failed", 1)
    assert "'127.0.0.1' is not allowed" in row["last_delivery_error"]
    back = await onboarding.exception_of(onboarding.people.erp, exception_id)
    assert (back["state"], back["attempts"]) == ("NEEDS_REVIEW", 2)


# --- 4. what a receiver answered: cut, and shown to whom ------------------------------------

LONG_BODY = ("x" * 5000 + "END").encode()


async def test_a_long_answer_is_stored_cut_and_shown_only_to_admins_and_integrations(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    owner_db: Database,
    gql: GraphQL,
) -> None:
    async with webhook_receiver(SECRET, always(Reply(400, body=LONG_BODY))) as receiver:
        configured = await configure_queue(
            db, ADMIN, QueueSettings(kyc_queue, effect=webhook(receiver.url))
        )
        assert not isinstance(configured, InvalidInput), configured
        decision_id = await make_decision(db, kyc_queue, "refused")
        worker = AllowListWorker(db, frozenset())
        async with running(worker):
            worker.wake()
            await worker.until(lambda s: s.failed == 1, "the decision failed")
        assert len(receiver.requests) == 1

    (attempt,) = await attempt_rows(owner_conn, decision_id)
    error = attempt["error"]
    assert len(error) == RECEIVER_TEXT_LIMIT
    assert error.startswith("webhook answered 400: xxx")
    assert error.endswith(TRUNCATED_MARK)
    assert "END" not in error
    assert (await application_row(owner_conn, decision_id))["last_error"] == error

    async def token(role: Role, *queues: str) -> str:
        return await create_token(owner_db, user=f"u-{role.value}", role=role, queues=list(queues))

    shown = {
        "admin": await token(Role.ADMIN, "kyc"),
        "integration": await token(Role.INTEGRATION, "kyc"),
    }
    hidden = {
        "reviewer": await token(Role.REVIEWER, "kyc"),
        "approver": await token(Role.APPROVER, "kyc"),
        "manager": await token(Role.MANAGER, "kyc"),
    }
    for role, bearer in {**shown, **hidden}.items():
        body = await gql(bearer, APPLICATION, id=str(decision_id))
        assert "errors" not in body, body
        application = body["data"]["decision"]["application"]
        # Everyone in scope sees that it failed, how often, and how.
        assert (application["state"], application["attempts"]) == ("FAILED", 1), role
        assert [a["outcome"] for a in application["history"]] == ["permanent"], role
        expected = error if role in shown else None
        assert application["lastError"] == expected, role
        assert [a["error"] for a in application["history"]] == [expected], role


async def test_a_redrive_receivers_answer_is_cut_and_hidden_from_reviewers_and_managers(
    onboarding: OnboardingDesk, supplier_workflow: str
) -> None:
    async with onboarding.redrive_receiver(always(Reply(422, body=LONG_BODY))):
        worker = AllowListWorker(onboarding.db, frozenset())
        async with onboarding.redrive_requested(worker) as (exception_id, key):
            await worker.until(lambda s: s.redrives_undeliverable == 1, "undeliverable")

    stored = (await delivery_row(onboarding.conn, key))["last_delivery_error"]
    assert len(stored) == RECEIVER_TEXT_LIMIT
    assert stored.startswith("webhook answered 422: xxx")
    assert stored.endswith(TRUNCATED_MARK)
    for who, sees in (
        ("erp", True),
        ("admin", True),
        ("manager", False),
        ("sam", False),
        ("ann", False),
    ):
        seen = await onboarding.exception_of(getattr(onboarding.people, who), exception_id)
        redrive = seen["redrive"]
        assert redrive["deliveryState"] == "failed", who
        assert redrive["lastDeliveryError"] == (stored if sees else None), who


async def test_a_target_with_credentials_stored_before_the_check_is_not_shown_nor_posted_to(
    db: Database,
    kyc_queue: str,
    owner_conn: asyncpg.Connection,
    gql: GraphQL,
    people: People,
) -> None:
    async with webhook_receiver(SECRET) as receiver:
        legacy = receiver.url.replace("http://", "http://casework:hunter2@")
        # As an older version accepted it.
        await owner_conn.execute(
            "UPDATE queues SET effect_kind = 'webhook', effect_target = $1, effect_secret = $2 "
            "WHERE name = $3",
            legacy,
            SECRET,
            kyc_queue,
        )
        shown = await gql(people.admin, 'query { queue(name: "kyc") { effectTarget } }')
        assert shown["data"]["queue"]["effectTarget"] == receiver.url.replace(
            "http://", "http://***@"
        ), shown
        decision_id = await make_decision(db, kyc_queue, "legacy")
        worker = AllowListWorker(db, frozenset())
        async with running(worker):
            worker.wake()
            await worker.until(lambda s: s.failed == 1, "the decision failed")
        assert receiver.requests == []

    (attempt,) = await attempt_rows(owner_conn, decision_id)
    assert attempt["outcome"] == "permanent"
    assert "user or password" in attempt["error"], attempt["error"]
    assert "hunter2" not in attempt["error"]
