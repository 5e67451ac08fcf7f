"""What the API suite's modules share: the review loop's operations, as a console sends them."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from server.store.database import Database
from server.store.queries import Query
from tests.api.conftest import GraphQL, Tokens
from tests.api.live_server import Run, run_casework
from tests.conftest import TestDatabase

ENQUEUE = """
mutation($queue: String!, $items: [NewItemInput!]!) {
  enqueueItems(queue: $queue, items: $items) {
    __typename
    ... on EnqueuedItems { items { created evidenceUpdated item { id state evidenceHash } } }
    ... on Error { message }
  }
}
"""
CLAIM = """
mutation($queue: String!) {
  claimNext(queue: $queue) {
    __typename
    ... on Claim { leaseToken leaseExpiresAt evidenceHash item { id leaseCount payload } }
    ... on Error { message }
  }
}
"""
DECIDE = """
mutation($input: SubmitDecisionInput!) {
  submitDecision(input: $input) {
    __typename
    ... on DecisionRecorded {
      replay decision { id verdict reasonCode reviewer item { state } }
    }
    ... on EvidenceChanged { currentEvidenceHash }
    ... on StaleLease { decidedUnderThisLease }
    ... on Error { message }
  }
}
"""
OVERTURN = """
mutation($input: OverturnDecisionInput!) {
  overturnDecision(input: $input) {
    __typename
    ... on DecisionRecorded { decision { id verdict isOverturn supersedes { id } } }
    ... on Error { message }
  }
}
"""


async def enqueue(gql: GraphQL, tokens: Tokens, *keys: str) -> list[dict[str, Any]]:
    items = [{"externalKey": key, "payload": {"applicant": key}} for key in keys]
    body = await gql(tokens.integration, ENQUEUE, queue="kyc", items=items)
    result = body["data"]["enqueueItems"]
    assert result["__typename"] == "EnqueuedItems", result
    return [entry["item"] for entry in result["items"]]


def decision_input(claim: dict[str, Any], verdict: str, reason: str) -> dict[str, Any]:
    return {
        "itemId": claim["item"]["id"],
        "leaseToken": claim["leaseToken"],
        "verdict": verdict,
        "reasonCode": reason,
        "evidenceHash": claim["evidenceHash"],
    }


async def statements_of(
    gql: GraphQL, token: str, query: str, monkeypatch: pytest.MonkeyPatch, **variables: Any
) -> tuple[dict[str, Any], list[str]]:
    """The answer's data, and the names of the statements sent while it resolved."""
    calls: list[str] = []
    original_fetch = Database.fetch

    async def counting_fetch(self: Database, query: Query[...], **kwargs: Any) -> Any:
        calls.append(query.name)
        return await original_fetch(self, query, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Database, "fetch", counting_fetch)
        body = await gql(token, query, **variables)
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data, calls


async def casework(test_database: TestDatabase, home: Path, command_line: str) -> Run:
    """The `casework` command in a process of its own, as the operator runs it, on the test
    database (the owner's DSN; the service role's is derived from it)."""
    env = {
        **os.environ,
        "DATABASE_URL": test_database.owner_dsn,
        # Empty: were DATABASE_URL ignored, the command would work on a fresh embedded
        # database and the checks against the test database would fail.
        "CASEWORK_HOME": str(home),
    }
    env.pop("CASEWORK_APP_DATABASE_URL", None)
    return await run_casework(env, *shlex.split(command_line))


# Written whatever a call does, refused or not: how the caller authenticated (once per
# credential), and the liveness row a served process's apply worker renews on its own.
BOOKKEEPING_TABLES = ("authentications", "apply_workers")


async def data_tables(owner: asyncpg.Connection) -> list[str]:
    """The schema's tables a refused call must leave as they were: all but the bookkeeping."""
    rows = await owner.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
        "AND NOT tablename = ANY($1::text[]) ORDER BY tablename",
        list(BOOKKEEPING_TABLES),
    )
    return [row["tablename"] for row in rows]
