"""What the personal-data tests over HTTP share: the app with a key file of the test's own,
tokens of every role, the kyc queues, and the operations an admin's script sends."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.config import PrivacySettings, Settings
from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import SETUP_QUEUES, GraphQL, graphql_caller, in_process_client
from tests.conftest import TestDatabase, token_maker

SET_POLICY = """
mutation($input: SetPrivacyPolicyInput!) {
  setPrivacyPolicy(input: $input) {
    __typename
    ... on PrivacyPolicy {
      queue version unlisted retentionClass createdBy createdAt revealRoles
      fields { path class }
      visible { role classes }
    }
    ... on InvalidInput { message field }
    ... on Error { message }
  }
}
"""
QUEUE_POLICY = """
query($name: String!) {
  queue(name: $name) {
    privacyPolicy { version unlisted retentionClass fields { path class } visible { role classes } }
  }
}
"""
ENQUEUE = """
mutation($queue: String!, $items: [NewItemInput!]!) {
  enqueueItems(queue: $queue, items: $items) {
    __typename
    ... on EnqueuedItems { items { created droppedPaths item { id payload } } }
    ... on InvalidInput { message field }
    ... on Error { message }
  }
}
"""
DEFINE_CLASS = """
mutation($input: DefineRetentionClassInput!) {
  defineRetentionClass(input: $input) {
    __typename
    ... on RetentionClass { name keepSeconds keepDays anchor basis createdBy }
    ... on InvalidInput { message field }
    ... on Error { message }
  }
}
"""
KYC_RULES = [
    {"path": "applicant.name", "class": "PERSONAL"},
    {"path": "applicant.date_of_birth", "class": "PERSONAL"},
    {"path": "applicant.passport_number", "class": "SENSITIVE"},
    {"path": "document", "class": "REFERENCE"},
    {"path": "risk_score", "class": "PUBLIC"},
    {"path": "credentials.password", "class": "SECRET"},
]
CANARY_PASSWORD = "hunter2-CANARY-7731"
AML_BASIS = "EU AMLR Art. 77: five years after the end of the business relationship"


@dataclasses.dataclass(frozen=True)
class PolicyTokens:
    admin: str
    reviewer: str
    manager: str
    integration: str
    compliance: str


async def make_tokens(owner_db: Database) -> PolicyTokens:
    make = token_maker(owner_db)
    return PolicyTokens(
        admin=await make("ada", Role.ADMIN),
        reviewer=await make("rita", Role.REVIEWER, "kyc"),
        manager=await make("max", Role.MANAGER),
        integration=await make("kyc-provider", Role.INTEGRATION),
        compliance=await make("cora", Role.COMPLIANCE),
    )


@asynccontextmanager
async def keyed_client(
    test_database: TestDatabase, key_file: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its key file at `key_file` (made when a policy first needs a key)."""
    settings = dataclasses.replace(Settings.from_env(), privacy=PrivacySettings(key_file=key_file))
    async with in_process_client(test_database, dev=False, settings=settings) as client:
        yield client


async def setup_kyc(gql: GraphQL, admin: str) -> str:
    body = await gql(admin, SETUP_QUEUES)
    assert {r["__typename"] for r in body["data"].values()} == {
        "QueueConfigured",
        "ReasonCodeDefined",
    }, body
    return "kyc"


async def set_policy(gql: GraphQL, token: str, **policy: Any) -> dict[str, Any]:
    body = await gql(token, SET_POLICY, input={"queue": "kyc", "fields": KYC_RULES, **policy})
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["setPrivacyPolicy"]
    return result


# The fixtures of the tests that drive the policy API over HTTP (tests/privacy/conftest.py
# makes them every test's here): the callers, a client with the test's own key file, and
# the `kyc` queues set up through the API.


@pytest.fixture
async def tokens(owner_db: Database) -> PolicyTokens:
    return await make_tokens(owner_db)


@pytest.fixture
async def gql(test_database: TestDatabase, tmp_path: Path) -> AsyncIterator[GraphQL]:
    async with keyed_client(test_database, tmp_path / "keys.json") as client:
        yield graphql_caller(client)


@pytest.fixture
async def kyc(gql: GraphQL, tokens: PolicyTokens) -> str:
    return await setup_kyc(gql, tokens.admin)
