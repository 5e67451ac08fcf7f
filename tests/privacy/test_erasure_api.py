"""The GraphQL side of holds, relationship ends and deferrals: the unions' members and what
each role is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from server.cli import _parser
from server.config import Settings
from server.domain.identity.rule_file import parse_rules
from server.domain.model import Role
from server.domain.privacy.policy import PrivacyPolicy
from server.store.database import Database
from tests.api.conftest import GraphQL, graphql_caller, in_process_client
from tests.conftest import TestDatabase, token_maker
from tests.privacy.erasure_helpers import canary_payload

ENQUEUE = """
mutation($items: [NewItemInput!]!) {
  enqueueItems(queue: "kyc", items: $items) {
    __typename ... on EnqueuedItems { items { item { id } } } ... on Error { message }
  }
}
"""
PLACE = """
mutation($subjectRef: String, $itemIds: [ID!], $basis: String!, $until: DateTime) {
  placeHold(subjectRef: $subjectRef, itemIds: $itemIds, basis: $basis, until: $until) {
    __typename
    ... on PrivacyHold { id subjectRef itemIds basis until placedBy releasedAt }
    ... on InvalidInput { message field }
    ... on Error { message }
  }
}
"""
RELEASE = """
mutation($id: ID!) {
  releaseHold(holdId: $id, reason: "case closed") {
    __typename
    ... on PrivacyHold { id releasedBy releaseReason }
    ... on Error { message }
  }
}
"""
ENDED = """
mutation($at: DateTime!) {
  reportRelationshipEnded(subjectRef: "cust-1", at: $at) {
    __typename
    ... on RelationshipEnded { subjectRef relationshipEndedAt }
    ... on Error { message }
  }
}
"""
REQUEST = """
mutation {
  requestErasure(subjectRef: "cust-1", basis: "Art. 17") {
    __typename ... on ErasureRequest { id } ... on Error { message }
  }
}
"""
APPROVE = """
mutation($id: ID!) {
  approveErasure(input: {requestId: $id}) {
    __typename
    ... on ErasureDeferred {
      requestId subjectRef basis until restrictedAt deferredBy
      reasons { kind basis until itemIds holdId retentionClass }
    }
    ... on Error { message }
  }
}
"""


@pytest.fixture
async def api(
    test_database: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[GraphQL]:
    monkeypatch.setenv("CASEWORK_HOME", str(tmp_path))
    async with in_process_client(test_database, dev=False, settings=Settings.from_env()) as c:
        yield graphql_caller(c)


async def answer(gql: GraphQL, token: str, query: str, **variables: Any) -> Any:
    body = await gql(token, query, **variables)
    assert "errors" not in body, body
    return next(iter(body["data"].values()))


async def test_holds_relationship_ends_and_a_deferral_through_the_api(
    api: GraphQL,
    owner_db: Database,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
) -> None:
    make = token_maker(owner_db)
    integration = await make("kyc-provider", Role.INTEGRATION)
    admin = await make("ada", Role.ADMIN)
    cora = await make("cora", Role.COMPLIANCE)
    carl = await make("carl", Role.COMPLIANCE)
    items = [{"externalKey": "app-1", "payload": canary_payload(1), "subjectRef": "cust-1"}]
    enqueued = await answer(api, integration, ENQUEUE, items=items)
    item_id = enqueued["items"][0]["item"]["id"]
    until = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)

    refused = await answer(api, admin, PLACE, **{"subjectRef": "cust-1", "basis": "b"})
    assert refused["__typename"] == "NotPermitted"
    both = await answer(
        api, cora, PLACE, **{"subjectRef": "cust-1", "itemIds": [item_id], "basis": "b"}
    )
    assert (both["__typename"], both["field"]) == ("InvalidInput", "subjectRef")
    bad_id = await answer(api, cora, PLACE, **{"itemIds": ["x"], "basis": "b"})
    assert (bad_id["__typename"], bad_id["field"]) == ("InvalidInput", "itemIds")
    hold = await answer(
        api,
        cora,
        PLACE,
        **{"itemIds": [item_id], "basis": "Case 7", "until": until.isoformat()},
    )
    assert hold["__typename"] == "PrivacyHold", hold
    assert (hold["subjectRef"], hold["itemIds"], hold["placedBy"]) == (None, [item_id], "cora")

    assert (await answer(api, cora, ENDED, at=until.isoformat()))["__typename"] == "NotPermitted"
    ended_at = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0)
    ended = await answer(api, integration, ENDED, at=ended_at.isoformat())
    assert ended["__typename"] == "RelationshipEnded", ended
    assert datetime.fromisoformat(ended["relationshipEndedAt"]) == ended_at

    request = await answer(api, cora, REQUEST)
    assert (await answer(api, admin, REQUEST))["__typename"] == "NotPermitted"
    deferred = await answer(api, carl, APPROVE, id=request["id"])
    assert deferred["__typename"] == "ErasureDeferred", deferred
    assert (deferred["basis"], deferred["deferredBy"]) == ("Case 7", "carl")
    assert datetime.fromisoformat(deferred["until"]) == until
    assert deferred["reasons"] == [
        {
            "kind": "HOLD",
            "basis": "Case 7",
            "until": deferred["until"],
            "itemIds": [item_id],
            "holdId": hold["id"],
            "retentionClass": None,
        }
    ]
    assert deferred["restrictedAt"] is not None
    assert (await answer(api, carl, APPROVE, id="nope"))["__typename"] == "InvalidInput"

    released = await answer(api, carl, RELEASE, id=hold["id"])
    assert (released["releasedBy"], released["releaseReason"]) == ("carl", "case closed")
    actions = [
        r["action"] for r in await owner_conn.fetch("SELECT action FROM privacy_log ORDER BY id")
    ]
    assert actions == [
        "policy_set",
        "hold_placed",
        "relationship_ended",
        "erasure_requested",
        "erasure_deferred",
        "hold_released",
    ]


def test_the_compliance_role_is_one_tokens_and_rule_files_give() -> None:
    args = _parser().parse_args(["token", "create", "--user", "cora", "--role", "compliance"])
    assert Role(args.role) is Role.COMPLIANCE
    [rule] = parse_rules(
        {"rule": [{"name": "dpo", "claim": "groups", "contains": "dpo", "role": "compliance"}]},
        "rules.toml",
    )
    assert rule.grant.role is Role.COMPLIANCE
    assert rule.grant.queues == ()
