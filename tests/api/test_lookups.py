"""Look-ups by the keys integrations hold: itemByExternalKey (following an escalation, with the
caller's scope, ambiguity across origin queues), exceptionBySourceRecordId, and the
exceptions list in an order of latest activity, paged by keyset."""

from __future__ import annotations

from typing import Any

import pytest

from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import CLAIM, DECIDE, ENQUEUE, decision_input
from tests.conftest import token_maker
from tests.exceptions.operations import RAISE, SETUP_SUPPLIER_WORKFLOW, mismatch_input

BY_KEY = """
query($key: String!, $queue: String) {
  itemByExternalKey(externalKey: $key, queue: $queue) {
    __typename
    ... on ReviewItem { id queue externalKey }
    ... on AmbiguousExternalKey { message externalKey queues }
  }
}
"""
SETUP = """
mutation {
  payouts: configureQueue(input: {name: "payouts"}) { __typename }
  unclear: defineReasonCode(input: {queue: "kyc", code: "unclear", label: "Unclear",
                                    verdicts: [ESCALATE]}) { __typename }
}
"""
BY_SOURCE = """
query($id: String!, $workflow: String) {
  exceptionBySourceRecordId(sourceRecordId: $id, workflow: $workflow) {
    __typename
    ... on Exception { id workflow sourceRecordId reasonCode }
    ... on AmbiguousSourceRecordId { message sourceRecordId workflows }
  }
}
"""
SECOND_WORKFLOW = """
mutation {
  ops: configureQueue(input: {name: "payments-ops"}) { __typename }
  workflow: configureWorkflow(input: {name: "supplier_payments",
                                      approvalQueue: "supplier-approvals"}) { __typename }
  reason: defineExceptionReason(input: {
    workflow: "supplier_payments", code: "entity_mismatch", label: "Another legal entity",
    ownerRole: "payments-ops", escalationOwnerRole: "procurement-leads",
    allowedActions: [CLOSE_EXCEPTION],
    dueSeconds: {low: 259200, medium: 86400, high: 14400, critical: 3600}
  }) { __typename }
}
"""
EXCEPTIONS = """
query($order: SearchOrder, $first: Int! = 50, $after: String) {
  exceptions(order: $order, first: $first, after: $after) {
    edges { cursor node { id sourceRecordId } }
    pageInfo { hasNextPage endCursor }
  }
}
"""


async def enqueue(gql: GraphQL, tokens: Tokens, queue: str, key: str) -> str:
    items = [{"externalKey": key, "payload": {"applicant": key}}]
    body = await gql(tokens.integration, ENQUEUE, queue=queue, items=items)
    assert body["data"]["enqueueItems"]["__typename"] == "EnqueuedItems", body
    item_id: str = body["data"]["enqueueItems"]["items"][0]["item"]["id"]
    return item_id


async def by_key(gql: GraphQL, token: str, key: str, queue: str | None = None) -> Any:
    body = await gql(token, BY_KEY, key=key, queue=queue)
    assert "errors" not in body, body
    return body["data"]["itemByExternalKey"]


@pytest.fixture
async def items(gql: GraphQL, tokens: Tokens, kyc: str) -> dict[str, str]:
    """app-7731 enqueued into kyc and, by another integration's numbering, into payouts."""
    body = await gql(tokens.admin, SETUP)
    assert "errors" not in body, body
    return {
        "kyc": await enqueue(gql, tokens, "kyc", "app-7731"),
        "payouts": await enqueue(gql, tokens, "payouts", "app-7731"),
        "other": await enqueue(gql, tokens, "kyc", "app-7732"),
    }


async def test_a_key_is_found_in_its_origin_queue_or_is_ambiguous_without_one(
    gql: GraphQL, tokens: Tokens, items: dict[str, str]
) -> None:
    for queue in ("kyc", "payouts"):
        found = await by_key(gql, tokens.manager, "app-7731", queue)
        assert found == {
            "__typename": "ReviewItem",
            "id": items[queue],
            "queue": queue,
            "externalKey": "app-7731",
        }
    ambiguous = await by_key(gql, tokens.manager, "app-7731")
    assert ambiguous["__typename"] == "AmbiguousExternalKey"
    assert (ambiguous["externalKey"], ambiguous["queues"]) == ("app-7731", ["kyc", "payouts"])
    assert "ask again" in ambiguous["message"]
    assert (await by_key(gql, tokens.manager, "app-7732"))["id"] == items["other"]
    # Another queue than the origin, a key nobody enqueued: nothing.
    assert await by_key(gql, tokens.manager, "app-7731", "kyc-senior") is None
    assert await by_key(gql, tokens.manager, "app-0000") is None
    assert await by_key(gql, tokens.manager, "app-7731", "no-such-queue") is None


async def test_only_what_the_callers_queues_hold_is_seen(
    gql: GraphQL, tokens: Tokens, items: dict[str, str], owner_db: Database
) -> None:
    olga = await token_maker(owner_db)("olga", Role.REVIEWER, "payouts")
    # Each sees the one it may: not ambiguous for either.
    assert (await by_key(gql, tokens.other_reviewer, "app-7731"))["id"] == items["kyc"]
    assert (await by_key(gql, olga, "app-7731"))["id"] == items["payouts"]
    assert await by_key(gql, olga, "app-7731", "kyc") is None
    assert await by_key(gql, tokens.outsider, "app-7732") is None


async def test_an_escalated_item_is_followed_by_its_key(
    gql: GraphQL, tokens: Tokens, items: dict[str, str]
) -> None:
    claim = (await gql(tokens.other_reviewer, CLAIM, queue="kyc"))["data"]["claimNext"]
    assert claim["item"]["id"] == items["kyc"]
    body = await gql(
        tokens.other_reviewer, DECIDE, input=decision_input(claim, "ESCALATE", "unclear")
    )
    assert body["data"]["submitDecision"]["__typename"] == "DecisionRecorded", body

    # Enqueued into kyc, now in kyc-senior: found by its origin, where it is now.
    found = await by_key(gql, tokens.reviewer, "app-7731", "kyc")
    assert (found["id"], found["queue"]) == (items["kyc"], "kyc-senior")
    # rob works in kyc only: the item has left his queues, and reads as missing.
    assert await by_key(gql, tokens.other_reviewer, "app-7731", "kyc") is None
    assert await by_key(gql, tokens.other_reviewer, "app-7731") is None
    ambiguous = await by_key(gql, tokens.manager, "app-7731")
    assert ambiguous["queues"] == ["kyc", "payouts"]


@pytest.fixture
async def workflows(gql: GraphQL, tokens: Tokens) -> list[str]:
    """supplier_onboarding (owned by supplier-ops) and supplier_payments (payments-ops)."""
    for setup in (SETUP_SUPPLIER_WORKFLOW, SECOND_WORKFLOW):
        body = await gql(tokens.admin, setup)
        typenames = {result["__typename"] for result in body["data"].values()}
        assert typenames <= {"QueueConfigured", "WorkflowConfigured", "ExceptionReasonDefined"}, (
            body
        )
    return ["supplier_onboarding", "supplier_payments"]


async def raise_exception(gql: GraphQL, token: str, **overrides: Any) -> dict[str, Any]:
    body = await gql(token, RAISE, input=mismatch_input(**overrides))
    raised = body["data"]["raiseException"]
    assert raised["__typename"] == "ExceptionRaised", body
    exception: dict[str, Any] = raised["exception"]
    return exception


async def by_source(gql: GraphQL, token: str, record: str, workflow: str | None = None) -> Any:
    body = await gql(token, BY_SOURCE, id=record, workflow=workflow)
    assert "errors" not in body, body
    return body["data"]["exceptionBySourceRecordId"]


async def test_an_exception_is_found_by_its_source_record(
    gql: GraphQL, tokens: Tokens, workflows: list[str], owner_db: Database
) -> None:
    onboarding = await raise_exception(gql, tokens.integration, source_record_id="SUP-1")
    payments = await raise_exception(
        gql, tokens.integration, source_record_id="SUP-1", workflow="supplier_payments"
    )
    found = await by_source(gql, tokens.manager, "SUP-1", "supplier_onboarding")
    assert (found["__typename"], found["id"]) == ("Exception", onboarding["id"])
    found = await by_source(gql, tokens.manager, "SUP-1", "supplier_payments")
    assert found["id"] == payments["id"]
    ambiguous = await by_source(gql, tokens.manager, "SUP-1")
    assert ambiguous["__typename"] == "AmbiguousSourceRecordId"
    assert ambiguous["workflows"] == ["supplier_onboarding", "supplier_payments"]
    assert ambiguous["sourceRecordId"] == "SUP-1"
    # A supplier-ops reviewer sees only the onboarding one: not ambiguous for him.
    sam = await token_maker(owner_db)("sam", Role.REVIEWER, "supplier-ops")
    assert (await by_source(gql, sam, "SUP-1"))["id"] == onboarding["id"]
    assert await by_source(gql, sam, "SUP-1", "supplier_payments") is None
    assert await by_source(gql, tokens.outsider, "SUP-1") is None
    assert await by_source(gql, tokens.manager, "SUP-2") is None


async def test_of_several_open_exceptions_of_a_record_the_newest_answers(
    gql: GraphQL, tokens: Tokens, workflows: list[str]
) -> None:
    await raise_exception(gql, tokens.integration, source_record_id="SUP-3")
    newer = await raise_exception(
        gql, tokens.integration, source_record_id="SUP-3", reasonCode="missing_approval"
    )
    found = await by_source(gql, tokens.manager, "SUP-3")
    assert (found["id"], found["reasonCode"]) == (newer["id"], "missing_approval")


async def page_through(gql: GraphQL, token: str, order: str | None) -> list[str]:
    shown: list[str] = []
    after = None
    while True:
        body = await gql(token, EXCEPTIONS, order=order, first=1, after=after)
        assert "errors" not in body, body
        page = body["data"]["exceptions"]
        shown += [edge["node"]["sourceRecordId"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return shown
        after = page["pageInfo"]["endCursor"]


async def test_the_exceptions_list_pages_by_latest_activity_both_ways(
    gql: GraphQL, tokens: Tokens, workflows: list[str]
) -> None:
    for record in ("SUP-A", "SUP-B", "SUP-C"):
        await raise_exception(gql, tokens.integration, source_record_id=record)
    # A's recurrence is its latest activity.
    again = await raise_exception(gql, tokens.integration, source_record_id="SUP-A")
    assert again["recurrences"] == 1

    assert await page_through(gql, tokens.manager, None) == ["SUP-A", "SUP-B", "SUP-C"]
    assert await page_through(gql, tokens.manager, "NEWEST_FIRST") == ["SUP-A", "SUP-C", "SUP-B"]
    assert await page_through(gql, tokens.manager, "OLDEST_FIRST") == ["SUP-B", "SUP-C", "SUP-A"]
    assert await page_through(gql, tokens.outsider, "NEWEST_FIRST") == []

    # A cursor of one order is not a position in another.
    body = await gql(tokens.manager, EXCEPTIONS, order="NEWEST_FIRST", first=1)
    cursor = body["data"]["exceptions"]["pageInfo"]["endCursor"]
    for order in ("OLDEST_FIRST", None):
        refused = await gql(tokens.manager, EXCEPTIONS, order=order, first=1, after=cursor)
        assert "malformed cursor" in refused["errors"][0]["message"], refused
