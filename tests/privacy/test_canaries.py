"""Canaries: recognisable personal values enqueued, reviewed and erased through the API; then
no column of any table, no log line, no metric, no audit pack and no ledger line holds one,
nothing still opens, and the decisions are byte for byte what they were."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from server.config import Settings
from server.domain.model import Role
from server.domain.privacy.keys import Keyring, LocalKeyFile
from server.domain.privacy.ledger import ErasureLedger
from server.domain.privacy.policy import PrivacyPolicy
from server.domain.privacy.sealing import policy_evidence_hash
from server.domain.quality import audit
from server.store.database import Database
from tests.api.conftest import GraphQL, graphql_caller, in_process_client
from tests.conftest import TestDatabase, token_maker
from tests.privacy.erasure_helpers import (
    canaries,
    canary_payload,
    columns_holding,
    readable_values,
    table_text,
)

ENQUEUE = """
mutation($items: [NewItemInput!]!) {
  enqueueItems(queue: "kyc", items: $items) {
    __typename
    ... on EnqueuedItems { items { item { id evidenceHash } } }
    ... on Error { message }
  }
}
"""
CLAIM = """
mutation {
  claimNext(queue: "kyc") {
    __typename
    ... on Claim { leaseToken evidenceHash item { id payload } }
    ... on Error { message }
  }
}
"""
DECIDE = """
mutation($input: SubmitDecisionInput!) {
  submitDecision(input: $input) { __typename ... on Error { message } }
}
"""
REQUEST = """
mutation($subject: String!) {
  requestErasure(subjectRef: $subject, basis: "GDPR Art. 17, ticket 8812") {
    __typename
    ... on ErasureRequest { id requestedBy queues }
    ... on Error { message }
  }
}
"""
APPROVE = """
mutation($id: ID!) {
  approveErasure(input: {requestId: $id}) {
    __typename
    ... on ErasureReceipt {
      requestId subjectRef erasedAt requestedBy approvedBy fieldsErased keysShredded
      items { itemId evidenceHash policyVersion erasedPaths verifies
              fields { path class digest erased } }
    }
    ... on FourEyesRequired { requestId message }
    ... on Error { message }
  }
}
"""


@pytest.fixture
async def client(
    test_database: TestDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    monkeypatch.setenv("CASEWORK_HOME", str(tmp_path))
    monkeypatch.setenv("CASEWORK_KEY_FILE", str(tmp_path / "keys.json"))
    monkeypatch.setenv("CASEWORK_ERASURE_LEDGER", str(tmp_path / "ledger.jsonl"))
    async with in_process_client(test_database, dev=False, settings=Settings.from_env()) as c:
        yield c


async def data(gql: GraphQL, token: str, query: str, **variables: Any) -> Any:
    body = await gql(token, query, **variables)
    assert "errors" not in body, body
    return next(iter(body["data"].values()))


async def test_no_canary_survives_an_erasure_anywhere(
    client: httpx.AsyncClient,
    db: Database,
    owner_db: Database,
    kyc_policy: PrivacyPolicy,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    api = graphql_caller(client)
    make = token_maker(owner_db)
    admin = await make("ada", Role.ADMIN)
    integration = await make("kyc-provider", Role.INTEGRATION)
    reviewer = await make("rita", Role.REVIEWER, "kyc")
    cora = await make("cora", Role.COMPLIANCE)
    carl = await make("carl", Role.COMPLIANCE, "kyc")
    needles = [n for i in (1, 2, 3) for n in canaries(i)]
    items = [
        {"externalKey": f"app-{i}", "payload": canary_payload(i), "subjectRef": "cust-1"}
        for i in (1, 2, 3)
    ]
    enqueued = await data(api, integration, ENQUEUE, items=items)
    assert enqueued["__typename"] == "EnqueuedItems", enqueued
    item_ids = [int(entry["item"]["id"]) for entry in enqueued["items"]]
    for _ in range(2):
        claim = await data(api, reviewer, CLAIM)
        assert claim["__typename"] == "Claim", claim
        decided = await data(
            api,
            reviewer,
            DECIDE,
            input={
                "itemId": claim["item"]["id"],
                "leaseToken": claim["leaseToken"],
                "verdict": "APPROVE",
                "reasonCode": "documents_ok",
                "evidenceHash": claim["evidenceHash"],
            },
        )
        assert decided["__typename"] == "DecisionRecorded", decided
    decisions = await table_text(owner_conn, "review_decisions", "id")
    assert len(decisions) == 2
    keyring = Keyring(LocalKeyFile.load(tmp_path / "keys.json"))
    before = " ".join(await readable_values(owner_conn, keyring))
    assert all(needle in before for needle in needles)

    request = await data(api, cora, REQUEST, subject="cust-1")
    assert request["__typename"] == "ErasureRequest", request
    assert (request["requestedBy"], request["queues"]) == ("cora", None)
    refused = await data(api, cora, APPROVE, id=request["id"])
    assert refused["__typename"] == "FourEyesRequired"
    receipt = await data(api, carl, APPROVE, id=request["id"])

    # carl's token covers queue kyc only; the request (cora's) covers every queue.
    assert receipt["__typename"] == "NotFound", receipt
    carl_everywhere = await make("carl", Role.COMPLIANCE)
    receipt = await data(api, carl_everywhere, APPROVE, id=request["id"])
    assert receipt["__typename"] == "ErasureReceipt", receipt
    assert (receipt["requestedBy"], receipt["approvedBy"]) == ("cora", "carl")
    assert [int(i["itemId"]) for i in receipt["items"]] == item_ids
    assert (receipt["fieldsErased"], receipt["keysShredded"]) == (9, 1)
    for item in receipt["items"]:
        assert item["verifies"]
        digests = {f["path"]: f["digest"] for f in item["fields"]}
        assert policy_evidence_hash(item["policyVersion"], digests) == item["evidenceHash"]
        assert [f["path"] for f in item["fields"] if f["erased"]] == item["erasedPaths"]
    assert await data(api, carl_everywhere, APPROVE, id=request["id"]) == receipt

    # Nowhere: no column of any table, nothing that still opens, no log line, no audit
    # pack (what `casework export` writes), no ledger line, no answer of the API.
    assert await columns_holding(owner_conn, needles) == []
    assert await readable_values(owner_conn, keyring) == []
    logged = caplog.text + " ".join(repr(r.args) for r in caplog.records)
    assert not [n for n in needles if n in logged]
    packs = await audit.audit_packs(db, item_ids)
    exported = b"".join(audit.pack_bytes(packs[i]) for i in item_ids).decode()
    assert not [n for n in needles if n in exported]
    assert not [n for n in needles if n in (tmp_path / "ledger.jsonl").read_text()]
    assert not [n for n in needles if n in str(receipt)]
    metrics = await client.get("/metrics", headers={"Authorization": f"Bearer {admin}"})
    assert metrics.status_code == 200, metrics.text
    assert not [n for n in needles if n in metrics.text]
    assert await table_text(owner_conn, "review_decisions", "id") == decisions
    ledger = list(ErasureLedger(tmp_path / "ledger.jsonl").entries())
    assert [(e.subject_ref, e.item_ids) for e in ledger] == [("cust-1", tuple(item_ids))]
