"""casework-client against a real `casework serve`: an integration enqueues, a reviewer
decides, and wait_for_decision returns the decision (through the item's subscription, and
by polling when no socket can be held); the exception calls and their typed errors; and a
real decision webhook checked with verify_webhook."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest
from casework_client import (
    CaseworkClient,
    Consequence,
    DecisionStatus,
    InvalidInputError,
    InvalidTransitionError,
    MemoryCursorStore,
    NotFoundError,
    NotPermittedError,
    RequestError,
    Verdict,
    WaitTimeout,
    WebhookVerificationError,
    verify_webhook,
)

from server.config import REPO_ROOT
from server.domain.exceptions.actions import approve_correction
from server.domain.exceptions.redrives import RedriveQueued, request_redrive
from server.domain.model import Role
from server.signatures import standard_headers
from server.store.database import Database
from tests.api.live_server import free_port
from tests.apply.helpers import configure_effect, webhook
from tests.apply.receiver import webhook_receiver
from tests.clients.conftest import CLIENT_DIR, WAIT_SECONDS, ReadCounter, decide_next
from tests.conftest import TestDatabase, token_maker
from tests.docs.helpers import code_blocks, section
from tests.exceptions.conftest import APPROVAL_QUEUE, REASON, WORKFLOW
from tests.exceptions.domain_drivers import ANN, claim_exception, corrected_by_sam
from tests.exceptions.operations import SETUP_SUPPLIER_WORKFLOW
from tests.live.helpers import serve_kyc

ADD_NOTE = """
mutation($input: AddNoteInput!) { addNote(input: $input) { __typename } }
"""
INTEGRATIONS_DOC = REPO_ROOT / "docs" / "integrations.md"
# A waiter that only its subscription can wake within the test's bounds.
NEVER_SECONDS = 600.0


async def test_wait_for_decision_returns_the_decision_through_the_subscription(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        reads = ReadCounter()
        async with (
            CaseworkClient(casework.url, tokens.integration, transport=reads) as integration,
            CaseworkClient(casework.url, tokens.rita) as rita,
        ):
            [entry] = await integration.enqueue_items(
                "kyc", [{"externalKey": "cust-1", "payload": {"name": "Ada"}}]
            )
            assert entry.created
            assert entry.item.queue == "kyc"
            waiting = asyncio.create_task(
                integration.wait_for_decision(
                    entry.item, poll_seconds=NEVER_SECONDS, recheck_seconds=NEVER_SECONDS
                )
            )
            # Its first read, then: the subscription has no acknowledgement, so a note wakes
            # the waiter once it is listening (its own reads are NEVER_SECONDS apart). Notes
            # until one does.
            assert await reads.wait_for_more("GetItem", 0, WAIT_SECONDS)
            for _ in range(int(WAIT_SECONDS)):
                before = reads.count("GetItem")
                note = {"itemId": entry.item.id, "body": "waiting for a reviewer"}
                await casework.api.call(tokens.integration, ADD_NOTE, input=note)
                if await reads.wait_for_more("GetItem", before, 1.0):
                    break
            else:
                raise AssertionError("the waiter never heard of a note on its item")
            assert not waiting.done()

            decision = await decide_next(rita)
            found = await asyncio.wait_for(waiting, WAIT_SECONDS)

    assert found.id == decision.id
    assert (found.verdict, found.status) == (Verdict.APPROVE, DecisionStatus.EFFECTIVE)
    assert (found.reason_code, found.reviewer) == ("documents_ok", "rita")
    assert found.item is not None
    assert found.item.id == entry.item.id
    casework.assert_no_traceback()


async def test_wait_for_decision_polls_when_no_socket_can_be_held(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        reads = ReadCounter()
        async with (
            CaseworkClient(casework.url, tokens.integration, transport=reads) as integration,
            CaseworkClient(casework.url, tokens.rita) as rita,
        ):
            # Websockets go nowhere (a proxy that passes only HTTP, say).
            integration.graphql.ws_url = f"ws://127.0.0.1:{free_port()}/graphql"
            [entry] = await integration.enqueue_items(
                "kyc", [{"externalKey": "cust-2", "payload": {"name": "Bo"}}]
            )
            with pytest.raises(WaitTimeout):
                await integration.wait_for_decision(entry.item.id, timeout=0.5, poll_seconds=0.1)
            polled = reads.count("GetItem")
            assert polled >= 2, reads.sent

            waiting = asyncio.create_task(
                integration.wait_for_decision(entry.item.id, poll_seconds=0.1)
            )
            assert await reads.wait_for_more("GetItem", polled + 1, WAIT_SECONDS)
            decision = await decide_next(rita)
            found = await asyncio.wait_for(waiting, WAIT_SECONDS)
    assert found.id == decision.id


ESCALATING = """
mutation {
  senior: configureQueue(input: {name: "kyc-senior"}) { __typename }
  kyc: configureQueue(input: {name: "kyc", escalationQueue: "kyc-senior"}) { __typename }
  up: defineReasonCode(input: {queue: "kyc", code: "needs_senior", label: "Needs a senior",
                               verdicts: [ESCALATE]}) { __typename }
  ok: defineReasonCode(input: {queue: "kyc-senior", code: "documents_ok",
                               label: "Documents match", verdicts: [APPROVE]}) { __typename }
}
"""


async def test_an_escalation_is_not_the_final_decision(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        await casework.api.call(tokens.admin, ESCALATING)
        senior = await token_maker(owner_db)("sol", Role.REVIEWER, "kyc-senior")
        reads = ReadCounter()
        async with (
            CaseworkClient(casework.url, tokens.integration, transport=reads) as integration,
            CaseworkClient(casework.url, tokens.rita) as rita,
            CaseworkClient(casework.url, senior) as sol,
        ):
            [entry] = await integration.enqueue_items(
                "kyc", [{"externalKey": "cust-3", "payload": {"name": "Cy"}}]
            )
            waiting = asyncio.create_task(
                integration.wait_for_decision(entry.item, poll_seconds=0.1)
            )
            escalation = await decide_next(rita, "kyc", "ESCALATE", "needs_senior")
            # Two reads after the escalation: the waiter has seen the item escalated.
            assert await reads.wait_for_more("GetItem", reads.count("GetItem") + 1, WAIT_SECONDS)
            assert not waiting.done()
            decision = await decide_next(sol, "kyc-senior")
            found = await asyncio.wait_for(waiting, WAIT_SECONDS)
    assert escalation.verdict == Verdict.ESCALATE
    assert (found.id, found.queue, found.verdict) == (decision.id, "kyc-senior", Verdict.APPROVE)


async def test_typed_errors_for_the_review_calls(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with (
        serve_kyc(test_database, owner_db) as (casework, tokens),
        CaseworkClient(casework.url, tokens.integration) as integration,
        CaseworkClient(casework.url, tokens.rita) as rita,
        CaseworkClient(casework.url, "not-a-token") as stranger,
    ):
        with pytest.raises(InvalidInputError) as invalid:
            await integration.enqueue_items("kyc", [{"externalKey": "", "payload": {}}])
        assert invalid.value.message
        with pytest.raises(NotPermittedError):
            await rita.enqueue_items("kyc", [{"externalKey": "k", "payload": {"a": 1}}])
        with pytest.raises(NotFoundError):
            await integration.wait_for_decision("999999999", timeout=WAIT_SECONDS)
        with pytest.raises(RequestError) as refused:
            await stranger.enqueue_items("kyc", [{"externalKey": "k", "payload": {}}])
        assert refused.value.code == "UNAUTHENTICATED"

        # A stream the token may not read ends at once: retrying would not cure it.
        async def never_called(decision: Any) -> None:
            raise AssertionError(decision)

        async with CaseworkClient(casework.url, tokens.olga) as olga:
            with pytest.raises(RequestError, match="does not cover"):
                await asyncio.wait_for(
                    olga.decision_events("kyc", MemoryCursorStore(), never_called), WAIT_SECONDS
                )


async def test_raise_exception_and_report_redrive_result(
    test_database: TestDatabase, owner_db: Database, db: Database
) -> None:
    async with serve_kyc(test_database, owner_db) as (casework, tokens):
        await casework.api.call(tokens.admin, SETUP_SUPPLIER_WORKFLOW)
        async with CaseworkClient(casework.url, tokens.integration) as erp:
            raised = await erp.raise_exception(
                WORKFLOW,
                "supplier-7",
                REASON,
                "The certificate names another legal entity.",
                Consequence.HIGH,
                completed_steps=["collect_documents"],
                blocked_step="verify_legal_entity",
                evidence=["docstore://suppliers/7/certificate.pdf"],
            )
            assert raised.created
            assert raised.exception.state.value == "NEEDS_REVIEW"
            again = await erp.raise_exception(WORKFLOW, "supplier-7", REASON, "Seen again.", "HIGH")
            assert (again.created, again.exception.id) == (False, raised.exception.id)
            assert again.exception.recurrences == 1
            with pytest.raises(InvalidInputError):
                await erp.raise_exception(WORKFLOW, "supplier-8", "no_such_reason", "x", "LOW")

            # A person corrects it, another approves, the redrive is issued.
            exception_id = raised.exception.id
            await corrected_by_sam(db, exception_id)
            theirs = await claim_exception(db, ANN, APPROVAL_QUEUE, exception_id)
            await approve_correction(
                db, ANN, exception_id, str(theirs.lease_token), version=1, note=None
            )
            queued = await request_redrive(db, ANN, exception_id, 1)
            assert isinstance(queued, RedriveQueued), queued

            recorded = await erp.report_redrive_result(queued.redrive_key, True, "re-run ok")
            assert not recorded.already_reported
            assert recorded.exception.state.value == "CLOSED"
            assert recorded.exception.redrive is not None
            assert recorded.exception.redrive.succeeded is True
            repeated = await erp.report_redrive_result(queued.redrive_key, True)
            assert repeated.already_reported
            with pytest.raises(InvalidTransitionError) as refused:
                await erp.report_redrive_result(queued.redrive_key, False)
            assert refused.value.result.exception_id == exception_id


async def test_a_real_decision_webhook_verifies(
    test_database: TestDatabase, owner_db: Database, db: Database
) -> None:
    secret = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LTMyLWJ5dGVzLWxvbmch"
    async with (
        webhook_receiver(secret) as receiver,
        serve_kyc(test_database, owner_db) as (casework, tokens),
    ):
        await configure_effect(db, "kyc", webhook(receiver.url, secret))
        async with (
            CaseworkClient(casework.url, tokens.integration) as integration,
            CaseworkClient(casework.url, tokens.rita) as rita,
        ):
            await integration.enqueue_items("kyc", [{"externalKey": "c-9", "payload": {"n": 9}}])
            decision = await decide_next(rita)
            request = await receiver.next_arrival(WAIT_SECONDS)

    body = verify_webhook(request.body, request.headers, secret)
    assert str(body["decisionId"]) == decision.id
    assert request.headers["webhook-id"] == decision.id
    with pytest.raises(WebhookVerificationError, match="signature"):
        verify_webhook(request.body + b" ", request.headers, secret, allow_legacy=False)


def doc_blocks(heading: str) -> list[str]:
    return code_blocks(section(INTEGRATIONS_DOC, heading), "python")


async def test_the_five_minute_start_runs_as_written(
    test_database: TestDatabase, owner_db: Database
) -> None:
    """The docs' script, run as a user would (its own process, the client from
    clients/python), while a reviewer decides the item it enqueued."""
    [script] = doc_blocks("### Five minutes: from an item to a decision")
    async with (
        serve_kyc(test_database, owner_db) as (casework, tokens),
        CaseworkClient(casework.url, tokens.rita) as rita,
    ):
        env = {
            **os.environ,
            "CASEWORK_URL": casework.url,
            "CASEWORK_INTEGRATION_TOKEN": tokens.integration,
            "PYTHONPATH": str(CLIENT_DIR),
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), WAIT_SECONDS)
            assert line.decode().startswith("enqueued item "), line
            decision = await decide_next(rita)
            out, err = await asyncio.wait_for(process.communicate(), WAIT_SECONDS)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 0, err.decode()
    assert out.decode() == "decided: APPROVE documents_ok by rita\n"
    assert decision.item.external_key == "applicant-1001"


def test_the_docs_webhook_handler_verifies_and_refuses() -> None:
    [handler] = doc_blocks("### Verifying a webhook with the client")
    namespace: dict[str, Any] = {}
    exec(compile(handler, "integrations.md", "exec"), namespace)
    [secret] = namespace["SECRETS"]
    body = b'{"type":"decision.effective","data":{}}'
    headers = standard_headers("evt_" + "0" * 32, body, [secret])
    assert namespace["handle"](body, headers) == 204
    assert namespace["handle"](body + b" ", headers) == 401


def test_the_docs_stream_script_compiles() -> None:
    [script] = doc_blocks("### Every decision of a queue, once you have handled it")
    compile(script, "integrations.md", "exec")
