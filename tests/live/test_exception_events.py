"""exceptionEvents over a real websocket against a running `casework serve`: an integration
follows the supplier_onboarding workflow while the walk-through happens over HTTP, gets
every event in order, and resumes from a cursor with no gap and no duplicate. A token that
covers none of the workflow's queues is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from server.domain.model import Role
from server.store.database import Database
from tests.apply.helpers import SECRET, wait_until
from tests.apply.receiver import OK, Reply, always, webhook_receiver
from tests.conftest import TestDatabase, token_maker
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, WORKFLOW
from tests.exceptions.operations import (
    APPROVE_CORRECTION,
    ATTACH_EVIDENCE,
    CLAIM,
    RAISE,
    REGISTRY_EVIDENCE,
    REOPEN_EXCEPTION,
    REPORT_REDRIVE_RESULT,
    REQUEST_REDRIVE,
    SETUP_SUPPLIER_WORKFLOW,
    SUBMIT_CORRECTION,
    correction_input,
    mismatch_input,
    under_claim,
)
from tests.live.helpers import Api, Casework, serve_casework
from tests.live.wsclient import GraphQLSocket, graphql_socket

EXCEPTION_EVENTS = """
subscription($workflow: String!, $after: ID) {
  exceptionEvents(workflow: $workflow, after: $after) {
    id exceptionId workflow kind actor actorRole fromState toState version redriveKey
    exception { id sourceRecordId }
  }
}
"""
EVENT_IDS = """
query($id: ID!) { exception(id: $id) { events { id kind } } }
"""
KEY = "supplier_onboarding:SUP-1042:v1"
CONFIGURE_WEBHOOK = """
mutation($url: String!, $secret: String!) {
  configureQueue(input: {name: "kyc", effect: {kind: WEBHOOK, target: $url, secret: $secret}}) {
    __typename ... on Error { message }
  }
}
"""
EXCEPTION_OF_DECISION = """
query($record: String!) {
  exceptions(filter: {workflow: "apply_decision", sourceRecordId: $record}) {
    edges { node { id state events { id kind } } }
  }
}
"""


@dataclass(frozen=True)
class Tokens:
    admin: str
    erp: str  # the owning system, an integration over every queue: the subscriber
    sam: str  # supplier-ops reviewer
    ann: str  # supplier-approvals approver
    olga: str  # a reviewer of payouts only
    kyc_feed: str  # an integration scoped to the kyc queue only
    rita: str  # a kyc reviewer
    rex: str  # a reviewer of apply_decision
    amy: str  # an approver of apply_decision.approvals


async def create_tokens(owner_db: Database) -> Tokens:
    make = token_maker(owner_db)

    return Tokens(
        admin=await make("ada", Role.ADMIN),
        erp=await make("erp-onboarding", Role.INTEGRATION),
        sam=await make("sam", Role.REVIEWER, OWNER_QUEUE),
        ann=await make("ann", Role.APPROVER, APPROVAL_QUEUE),
        olga=await make("olga", Role.REVIEWER, "payouts"),
        kyc_feed=await make("kyc-feed", Role.INTEGRATION, "kyc"),
        rita=await make("rita", Role.REVIEWER, "kyc"),
        rex=await make("rex", Role.REVIEWER, "apply_decision"),
        amy=await make("amy", Role.APPROVER, "apply_decision.approvals"),
    )


async def result(api: Api, token: str, operation: str, **variables: Any) -> dict[str, Any]:
    """The one root field's result of an operation over HTTP."""
    [value] = (await api.call(token, operation, **variables)).values()
    assert isinstance(value, dict), value
    return value


async def answered(
    api: Api, token: str, operation: str, typename: str, **variables: Any
) -> dict[str, Any]:
    """As `result`, asserting what the result is."""
    value = await result(api, token, operation, **variables)
    assert value["__typename"] == typename, value
    return value


async def set_up(api: Api, tokens: Tokens) -> str:
    """The supplier workflow, and one exception raised before anyone subscribes: the
    integration's history. Returns the id of its `raised` event, the subscriber's cursor."""
    data = await api.call(tokens.admin, SETUP_SUPPLIER_WORKFLOW)
    assert {value["__typename"] for value in data.values()} == {
        "QueueConfigured",
        "WorkflowConfigured",
        "ExceptionReasonDefined",
    }, data
    earlier = await answered(
        api,
        tokens.erp,
        RAISE,
        "ExceptionRaised",
        # Low: the walk-through's exception (high) is claimed before it.
        input=mismatch_input("SUP-0999", reasonCode="missing_approval", consequence="LOW"),
    )
    [raised] = (await api.call(tokens.erp, EVENT_IDS, id=earlier["exception"]["id"]))["exception"][
        "events"
    ]
    assert raised["kind"] == "raised"
    cursor: str = raised["id"]
    return cursor


@asynccontextmanager
async def served_with_history(
    test_database: TestDatabase, owner_db: Database
) -> AsyncIterator[tuple[Casework, Tokens, str]]:
    """`casework serve` with the tokens and the history of set_up: yields the served
    Casework, the tokens and the subscriber's cursor."""
    tokens = await create_tokens(owner_db)
    async with serve_casework(test_database) as casework:
        yield casework, tokens, await set_up(casework.api, tokens)


async def next_event(socket: GraphQLSocket, operation: str) -> dict[str, Any]:
    event: dict[str, Any] = (await socket.next(operation))["exceptionEvents"]
    return event


def summary(event: dict[str, Any]) -> tuple[Any, ...]:
    return (
        event["kind"],
        event["actor"],
        event["actorRole"],
        event["fromState"],
        event["toState"],
        event["version"],
        event["redriveKey"],
    )


async def test_the_walkthrough_arrives_in_order_and_resumes_from_a_cursor_exactly(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with served_with_history(test_database, owner_db) as (casework, tokens, cursor):
        api = casework.api

        # First connection: the integration resumes after the last event it processed.
        async with graphql_socket(casework.url, tokens.erp) as first:
            stream = await first.subscribe(EXCEPTION_EVENTS, workflow=WORKFLOW, after=cursor)

            raised = await answered(
                api, tokens.erp, RAISE, "ExceptionRaised", input=mismatch_input()
            )
            exception_id = raised["exception"]["id"]
            seen = [await next_event(first, stream)]

            claim = await result(api, tokens.sam, CLAIM, queue=OWNER_QUEUE)
            assert claim["item"]["exception"]["id"] == exception_id, claim
            lease = claim["leaseToken"]
            evidence = under_claim(exception_id, lease, evidence=[REGISTRY_EVIDENCE])
            await answered(api, tokens.sam, ATTACH_EVIDENCE, "ExceptionUpdated", input=evidence)
            seen.append(await next_event(first, stream))

            correction = correction_input(
                exception_id,
                lease,
                changes={"legalName": "Acme Holdings Ltd"},
                evidence=["ticket://procurement/PRC-311"],
            )
            await answered(api, tokens.sam, SUBMIT_CORRECTION, "ExceptionUpdated", input=correction)
            seen.append(await next_event(first, stream))
            # Gone without a close frame, as a crashed integration goes.
            await first.abort()

        assert [summary(e) for e in seen] == [
            ("raised", "erp-onboarding", "integration", None, "NEEDS_REVIEW", 0, None),
            ("evidence_attached", "sam", "reviewer", "NEEDS_REVIEW", "NEEDS_REVIEW", 0, None),
            (
                "correction_submitted",
                "sam",
                "reviewer",
                "NEEDS_REVIEW",
                "AWAITING_APPROVAL",
                1,
                None,
            ),
        ]
        assert {e["exceptionId"] for e in seen} == {exception_id}
        assert {e["workflow"] for e in seen} == {WORKFLOW}
        assert seen[0]["exception"] == {"id": exception_id, "sourceRecordId": "SUP-1042"}

        # While nobody listens: the approval and the redrive request.
        theirs = await result(api, tokens.ann, CLAIM, queue=APPROVAL_QUEUE)
        approval = under_claim(exception_id, theirs["leaseToken"], version=1)
        await answered(api, tokens.ann, APPROVE_CORRECTION, "ExceptionUpdated", input=approval)
        queued = await result(
            api, tokens.ann, REQUEST_REDRIVE, input={"exceptionId": exception_id, "version": 1}
        )
        assert (queued["__typename"], queued["redriveKey"]) == ("RedriveQueued", KEY), queued

        # Second connection, resumed from the middle of what the first one saw: exactly the
        # events after that one (the correction again, then what happened meanwhile).
        middle = seen[1]["id"]
        async with graphql_socket(casework.url, tokens.erp) as second:
            stream = await second.subscribe(EXCEPTION_EVENTS, workflow=WORKFLOW, after=middle)
            replayed = [await next_event(second, stream) for _ in range(3)]
            assert replayed[0] == seen[2]
            assert [summary(e) for e in replayed[1:]] == [
                (
                    "correction_approved",
                    "ann",
                    "approver",
                    "AWAITING_APPROVAL",
                    "REDRIVE_PENDING",
                    1,
                    None,
                ),
                (
                    "redrive_requested",
                    "ann",
                    "approver",
                    "REDRIVE_PENDING",
                    "REDRIVE_PENDING",
                    1,
                    KEY,
                ),
            ]

            # Then live: the owning system reports its durable result.
            await answered(
                api,
                tokens.erp,
                REPORT_REDRIVE_RESULT,
                "RedriveResultRecorded",
                input={"redriveKey": KEY, "succeeded": True, "detail": "onboarded"},
            )
            succeeded = await next_event(second, stream)
            assert summary(succeeded) == (
                "redrive_succeeded",
                "erp-onboarding",
                "integration",
                "REDRIVE_PENDING",
                "CLOSED",
                1,
                KEY,
            )
            # And the next live event is the next one: nothing repeated in between.
            await answered(
                api,
                tokens.sam,
                REOPEN_EXCEPTION,
                "ExceptionUpdated",
                input={"exceptionId": exception_id, "reason": "the ERP lost the update"},
            )
            again = await next_event(second, stream)
            assert summary(again) == (
                "reopened",
                "sam",
                "reviewer",
                "CLOSED",
                "NEEDS_REVIEW",
                1,
                None,
            )

        # What arrived, across both connections and without the repeat, is the table's history.
        history = (await api.call(tokens.erp, EVENT_IDS, id=exception_id))["exception"]["events"]
        delivered = [*seen, *replayed[1:], succeeded, again]
        assert [(e["id"], e["kind"]) for e in delivered] == [(e["id"], e["kind"]) for e in history]
        ids = [int(e["id"]) for e in delivered]
        assert ids == sorted(ids)
        assert len(set(ids)) == len(ids)
    casework.assert_no_traceback()


async def test_a_token_that_covers_none_of_the_workflows_queues_is_refused(
    test_database: TestDatabase, owner_db: Database
) -> None:
    async with served_with_history(test_database, owner_db) as (casework, tokens, cursor):
        api = casework.api
        raised = await answered(api, tokens.erp, RAISE, "ExceptionRaised", input=mismatch_input())

        refusals = (
            (tokens.olga, {"workflow": WORKFLOW}, "no workflow 'supplier_onboarding' that"),
            (tokens.kyc_feed, {"workflow": WORKFLOW}, "no workflow 'supplier_onboarding' that"),
            (tokens.erp, {"workflow": "no_such_flow"}, "no workflow 'no_such_flow' that"),
            (tokens.erp, {"workflow": WORKFLOW, "after": "999999"}, "no event 999999 in"),
        )
        for token, variables, expected in refusals:
            async with graphql_socket(casework.url, token) as socket:
                operation = await socket.subscribe(EXCEPTION_EVENTS, **variables)
                refused = await socket.message(operation)
                assert refused["type"] == "next", refused
                assert refused["payload"]["data"] is None, refused
                [error] = refused["payload"]["errors"]
                assert error["message"].startswith(expected), (variables, error)
                assert (await socket.message(operation))["type"] == "complete"

        # The workflow's own people are let in, on either of its queues.
        for token in (tokens.sam, tokens.ann):
            async with graphql_socket(casework.url, token) as socket:
                operation = await socket.subscribe(
                    EXCEPTION_EVENTS, workflow=WORKFLOW, after=cursor
                )
                event = await next_event(socket, operation)
                assert (event["kind"], event["exceptionId"]) == (
                    "raised",
                    raised["exception"]["id"],
                )
    casework.assert_no_traceback()


async def test_the_served_worker_raises_and_closes_apply_decision_exceptions_on_the_stream(
    test_database: TestDatabase, owner_db: Database
) -> None:
    """The apply worker inside `casework serve`: a refused decision's exception, and the
    redrive it carries out, reach a subscriber of apply_decision like any other event."""
    tokens = await create_tokens(owner_db)
    refusal = Reply(422, body=b'{"error":"account closed"}')
    async with (
        webhook_receiver(SECRET, always(refusal)) as old_crm,
        webhook_receiver(SECRET, always(OK)) as new_crm,
        serve_casework(test_database) as casework,
    ):
        api = casework.api
        await api.configure_queue(tokens.admin, "kyc")

        async def point_at(url: str) -> None:
            await answered(
                api, tokens.admin, CONFIGURE_WEBHOOK, "QueueConfigured", url=url, secret=SECRET
            )

        async def refused_decision(key: str) -> str:
            await api.enqueue(tokens.kyc_feed, "kyc", {key: {"customer": key}})
            decision_id = await api.decide(tokens.rita, await api.claim(tokens.rita, "kyc"))
            request = await old_crm.next_arrival()
            assert request.key == decision_id
            return decision_id

        async def exception_of(decision_id: str) -> dict[str, Any]:
            """Once the worker has recorded the failure (no signal announces it)."""

            async def raised() -> list[dict[str, Any]]:
                data = await api.call(tokens.rex, EXCEPTION_OF_DECISION, record=decision_id)
                edges: list[dict[str, Any]] = data["exceptions"]["edges"]
                return edges

            [edge] = await wait_until(raised, within=15, what=f"decision {decision_id} raised")
            node: dict[str, Any] = edge["node"]
            return node

        await point_at(old_crm.url)
        first_decision = await refused_decision("cust-1")
        first = await exception_of(first_decision)
        [cursor] = first["events"]
        assert cursor["kind"] == "raised"

        async with graphql_socket(casework.url, tokens.rex) as socket:
            stream = await socket.subscribe(
                EXCEPTION_EVENTS, workflow="apply_decision", after=cursor["id"]
            )
            second_decision = await refused_decision("cust-2")
            raised = await next_event(socket, stream)
            assert summary(raised) == (
                "raised",
                "casework",
                "system",
                None,
                "NEEDS_REVIEW",
                0,
                None,
            )
            assert raised["exception"]["sourceRecordId"] == second_decision

            # The first exception is worked: corrected, approved, redriven.
            await point_at(new_crm.url)
            mine = await result(api, tokens.rex, CLAIM, queue="apply_decision")
            assert mine["item"]["exception"]["id"] == first["id"], mine
            await answered(
                api,
                tokens.rex,
                SUBMIT_CORRECTION,
                "ExceptionUpdated",
                input={
                    "exceptionId": first["id"],
                    "leaseToken": mine["leaseToken"],
                    "reasonCode": "effect_refused",
                    "changes": {"effectTarget": new_crm.url},
                    "evidence": ["ticket://ops/OPS-17"],
                },
            )
            theirs = await result(api, tokens.amy, CLAIM, queue="apply_decision.approvals")
            await answered(
                api,
                tokens.amy,
                APPROVE_CORRECTION,
                "ExceptionUpdated",
                input={
                    "exceptionId": first["id"],
                    "leaseToken": theirs["leaseToken"],
                    "version": 1,
                },
            )
            queued = await result(
                api, tokens.amy, REQUEST_REDRIVE, input={"exceptionId": first["id"], "version": 1}
            )
            key = f"apply_decision:{first_decision}:v1"
            assert (queued["__typename"], queued["redriveKey"]) == ("RedriveQueued", key), queued

            redriven = await new_crm.next_arrival()
            assert redriven.key == first_decision
            rest = [await next_event(socket, stream) for _ in range(4)]
            assert {e["exceptionId"] for e in rest} == {first["id"]}
            assert [summary(e) for e in rest] == [
                (
                    "correction_submitted",
                    "rex",
                    "reviewer",
                    "NEEDS_REVIEW",
                    "AWAITING_APPROVAL",
                    1,
                    None,
                ),
                (
                    "correction_approved",
                    "amy",
                    "approver",
                    "AWAITING_APPROVAL",
                    "REDRIVE_PENDING",
                    1,
                    None,
                ),
                (
                    "redrive_requested",
                    "amy",
                    "approver",
                    "REDRIVE_PENDING",
                    "REDRIVE_PENDING",
                    1,
                    key,
                ),
                ("redrive_succeeded", "casework", "system", "REDRIVE_PENDING", "CLOSED", 1, key),
            ]
    # The second decision was never sent to the new receiver: only the redriven one was.
    assert [r.key for r in new_crm.requests] == [first_decision]
    assert [r.key for r in old_crm.requests] == [first_decision, second_decision]
    casework.assert_no_traceback()
