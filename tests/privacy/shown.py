"""The service over HTTP with the test's key file (fixture `key_file`), and a caller that
keeps each response's raw bytes (a masked value must not be in them). With `kyc_policy`:
queue `kyc` under KYC_FIELDS, escalating to `kyc-senior`, which has no policy."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.config import Settings
from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import in_process_client
from tests.conftest import TestDatabase, token_maker

# Recognisable values: whatever shows them was shown a personal or sensitive value.
CANARY_NAME = "Zebediah Canarywood"
CANARY_BIRTH = "1961-04-12"
CANARY_PASSPORT = "P-CANARY-440192"


def applicant() -> dict[str, Any]:
    """A KYC producer's payload under KYC_FIELDS (tests/privacy/conftest.py)."""
    return {
        "applicant": {
            "name": CANARY_NAME,
            "date_of_birth": CANARY_BIRTH,
            "passport_number": CANARY_PASSPORT,
        },
        "document": {"id": "doc-1", "sha256": "ab" * 32},
        "risk_score": 71,
    }


@dataclass(frozen=True)
class Answer:
    body: dict[str, Any]
    raw: bytes

    @property
    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = self.body["data"]
        return data


Call = Callable[..., Awaitable[Answer]]


@dataclass(frozen=True)
class People:
    admin: str
    integration: str
    reviewer: str  # rita: kyc, kyc-senior, kyc-qa
    other_reviewer: str  # rob: kyc
    outsider: str  # olga: payouts only
    manager: str
    compliance: str
    checker: str  # quinn: kyc-qa


@pytest.fixture
async def privacy_client(
    test_database: TestDatabase, key_file: Path
) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings.from_env()
    settings = dataclasses.replace(
        settings, privacy=dataclasses.replace(settings.privacy, key_file=key_file)
    )
    async with in_process_client(test_database, dev=False, settings=settings) as client:
        yield client


@pytest.fixture
def call(privacy_client: httpx.AsyncClient) -> Call:
    async def run(token: str, query: str, **variables: Any) -> Answer:
        response = await privacy_client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        return Answer(response.json(), response.content)

    return run


@pytest.fixture
async def people(owner_db: Database) -> People:
    make = token_maker(owner_db)
    return People(
        admin=await make("ada", Role.ADMIN),
        integration=await make("kyc-provider", Role.INTEGRATION),
        reviewer=await make("rita", Role.REVIEWER, "kyc", "kyc-senior", "kyc-qa"),
        other_reviewer=await make("rob", Role.REVIEWER, "kyc"),
        outsider=await make("olga", Role.REVIEWER, "payouts"),
        manager=await make("max", Role.MANAGER),
        compliance=await make("cora", Role.COMPLIANCE),
        checker=await make("quinn", Role.REVIEWER, "kyc-qa"),
    )


ENQUEUE = """
mutation($queue: String!, $items: [NewItemInput!]!) {
  enqueueItems(queue: $queue, items: $items) {
    __typename
    ... on EnqueuedItems { items { item { id evidenceHash } } }
    ... on Error { message }
  }
}
"""

ITEM_VIEW = """
id payload subjectRef policyVersion
fields { path class state digest value }
"""

CLAIM = f"""
mutation($queue: String!) {{
  claimNext(queue: $queue) {{
    __typename
    ... on Claim {{ leaseToken evidenceHash item {{ {ITEM_VIEW} }} }}
    ... on Error {{ message }}
  }}
}}
"""

DECIDE = """
mutation($input: SubmitDecisionInput!) {
  submitDecision(input: $input) {
    __typename
    ... on DecisionRecorded { decision { id disclosure { shown revealed } } }
    ... on Error { message }
  }
}
"""

REVEAL = """
mutation($itemId: ID!, $path: String!, $reason: String!) {
  revealField(input: {itemId: $itemId, path: $path, reason: $reason}) {
    __typename
    ... on RevealedField { itemId path class value revealedAt }
    ... on FieldErased { itemId path }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}
"""


async def enqueue(
    call: Call, people: People, *keys: str, queue: str = "kyc", subject: str = "cust-9"
) -> list[dict[str, Any]]:
    items = [
        {"externalKey": key, "payload": applicant(), "subjectRef": subject}
        if queue == "kyc"
        else {"externalKey": key, "payload": applicant()}
        for key in keys
    ]
    answer = await call(people.integration, ENQUEUE, queue=queue, items=items)
    result = answer.data["enqueueItems"]
    assert result["__typename"] == "EnqueuedItems", result
    return [entry["item"] for entry in result["items"]]


async def claim(call: Call, token: str, queue: str = "kyc") -> tuple[dict[str, Any], bytes]:
    answer = await call(token, CLAIM, queue=queue)
    claimed = answer.data["claimNext"]
    assert claimed["__typename"] == "Claim", claimed
    return claimed, answer.raw


def decision_input(claimed: dict[str, Any], verdict: str, reason: str) -> dict[str, Any]:
    return {
        "itemId": claimed["item"]["id"],
        "leaseToken": claimed["leaseToken"],
        "verdict": verdict,
        "reasonCode": reason,
        "evidenceHash": claimed["evidenceHash"],
    }
