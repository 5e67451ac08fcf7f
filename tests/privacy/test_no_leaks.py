"""Nothing personal leaks: a real `casework serve` (JSON log lines at DEBUG) takes items with
recognisable personal values on a policy queue through enqueue, claim, a sealed note,
reading, decide, and an enqueue refused for carrying a secret; then none of the canaries is
in its log output, its `/metrics`, the NOTIFY hints it sent, the statement texts the
database saw, or (personal values in plaintext, the secret at all) any column of any table.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server.events.channels import CHANNEL, EventKind, parse_event
from server.store.database import Database
from tests.api.helpers import decision_input
from tests.conftest import TestDatabase
from tests.live.helpers import Casework, LiveTokens, create_live_tokens, serve_casework
from tests.privacy.canaries import (
    CANARY_BIRTH_DATE,
    CANARY_NAME,
    CANARY_NOTE,
    CANARY_SECRET,
    PERSONAL_CANARIES,
    applicant,
)
from tests.privacy.conftest import attach_policy
from tests.privacy.scan import find_canaries

# A value under a path the policy does not list: dropped before anything is stored.
CANARY_UNLISTED = "CANARY-UNLISTED-nickname-Zeb"
CANARIES = (*PERSONAL_CANARIES, CANARY_SECRET, CANARY_UNLISTED)
HINTS_WITHIN_SECONDS = 20.0
REFUSED_REQUEST_ID = "refused-enqueue-with-a-secret"

ENQUEUE = """
mutation($items: [NewItemInput!]!) {
  enqueueItems(queue: "kyc", items: $items) {
    __typename
    ... on EnqueuedItems { items { droppedPaths item { id } } }
    ... on Error { message }
    ... on InvalidInput { field }
  }
}
"""
CLAIM = """mutation { claimNext(queue: "kyc") {
  __typename ... on Claim { leaseToken evidenceHash item { id payload } } } }"""
ADD_NOTE = """mutation($input: AddNoteInput!) { addNote(input: $input) {
  __typename ... on NoteAdded { event { body noteState } } } }"""
DECIDE = """mutation($i: SubmitDecisionInput!) { submitDecision(input: $i) {
  __typename ... on DecisionRecorded { decision { id } } } }"""
READ = """query($id: ID!) { item(id: $id) {
  payload auditPack events { edges { node { kind body noteState } } } } }"""


@dataclass(frozen=True)
class Run:
    """What a served run left behind, for the checks."""

    log: list[str]
    metrics: str
    hints: list[str]
    refusal: str


def present(canaries: Iterable[str], text: str) -> list[str]:
    return [canary for canary in canaries if canary in text]


async def run_scenario(
    test_database: TestDatabase, db: Database, owner_db: Database, tmp_path: Path
) -> Run:
    tokens = await create_live_tokens(owner_db)
    hints: list[str] = []
    decided = asyncio.Event()

    def heard(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
        hints.append(payload)
        event = parse_event(payload)
        if event is not None and event.kind is EventKind.DECIDED:
            decided.set()

    listener = await asyncpg.connect(test_database.owner_dsn)
    try:
        await listener.add_listener(CHANNEL, heard)
        async with serve_casework(
            test_database,
            CASEWORK_LOG_FORMAT="json",
            CASEWORK_LOG_LEVEL="DEBUG",
            CASEWORK_KEY_FILE=str(tmp_path / "keys.json"),
        ) as casework:
            await casework.api.configure_queue(tokens.admin, "kyc")
            await attach_policy(db, "kyc")
            refusal = await flow(casework, tokens)
            # The decision is the last write: its hint is the last to come.
            await asyncio.wait_for(decided.wait(), HINTS_WITHIN_SECONDS)
            response = await casework.api.client.get(
                "/metrics", headers={"Authorization": f"Bearer {tokens.admin}"}
            )
            assert response.status_code == 200, response.text
            metrics = response.text
    finally:
        await listener.close()
    # The process has exited: its log is complete.
    casework.assert_no_traceback()
    return Run(log=list(casework.log), metrics=metrics, hints=hints, refusal=refusal)


async def flow(casework: Casework, tokens: LiveTokens) -> str:
    """Enqueue, a refused enqueue, claim, note, read, decide; returns the refusal's body."""
    api = casework.api
    items = [
        {"externalKey": "app-1", "payload": applicant(), "subjectRef": "cust-9"},
        {
            "externalKey": "app-2",
            "payload": applicant(nickname=CANARY_UNLISTED),
            "subjectRef": "cust-10",
        },
    ]
    enqueued = (await api.call(tokens.integration, ENQUEUE, items=items))["enqueueItems"]
    assert enqueued["__typename"] == "EnqueuedItems", enqueued
    assert [entry["droppedPaths"] for entry in enqueued["items"]] == [[], ["nickname"]]

    secret = [
        {"externalKey": "app-3", "payload": applicant(password=CANARY_SECRET), "subjectRef": "c"}
    ]
    response = await api.client.post(
        "/graphql",
        json={"query": ENQUEUE, "variables": {"items": secret}},
        headers={
            "Authorization": f"Bearer {tokens.integration}",
            "X-Request-ID": REFUSED_REQUEST_ID,
        },
    )
    assert response.status_code == 200, response.text
    refused = response.json()["data"]["enqueueItems"]
    assert refused["__typename"] == "InvalidInput", refused
    assert "credentials.password" in refused["message"]

    claim = (await api.call(tokens.rita, CLAIM))["claimNext"]
    assert claim["__typename"] == "Claim", claim
    # The values did go in: the reviewer is shown the personal ones.
    assert present(CANARIES, json.dumps(claim)) == [CANARY_NAME, CANARY_BIRTH_DATE]
    item_id = claim["item"]["id"]
    added = await api.call(tokens.rita, ADD_NOTE, input={"itemId": item_id, "body": CANARY_NOTE})
    assert added["addNote"]["event"] == {"body": CANARY_NOTE, "noteState": "VISIBLE"}
    for reader in (tokens.rita, tokens.admin):
        read = (await api.call(reader, READ, id=item_id))["item"]
        assert read["auditPack"]["pack"]["item"]["id"] == int(item_id)
    decision = decision_input(claim, "APPROVE", "documents_ok")
    recorded = (await api.call(tokens.rita, DECIDE, i=decision))["submitDecision"]
    assert recorded["__typename"] == "DecisionRecorded", recorded
    return response.text


async def test_no_canary_reaches_a_log_line_a_metric_a_hint_or_a_table(
    test_database: TestDatabase,
    db: Database,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    run = await run_scenario(test_database, db, owner_db, tmp_path)

    # The refusal names the path, never the value.
    assert present(CANARIES, run.refusal) == []

    # The log: every line, including the refused enqueue's access line.
    lines = [json.loads(line) for line in run.log if line.strip()]
    assert any(line.get("request_id") == REFUSED_REQUEST_ID for line in lines), run.log
    assert present(CANARIES, "".join(run.log)) == []

    # /metrics, as Prometheus reads it: no canary in a name, a label or the text.
    families = list(text_string_to_metric_families(run.metrics))
    assert families, run.metrics
    labels = [
        f"{sample.name} {json.dumps(sample.labels)}"
        for family in families
        for sample in family.samples
    ]
    assert present(CANARIES, "\n".join(labels)) == []
    assert present(CANARIES, run.metrics) == []

    # The hints: ids and queue names only.
    kinds = {event.kind for event in map(parse_event, run.hints) if event is not None}
    assert {EventKind.ENQUEUED, EventKind.CLAIMED, EventKind.NOTED, EventKind.DECIDED} <= kinds
    assert present(CANARIES, "\n".join(run.hints)) == []

    # Statement texts the database holds for its sessions: parameters, never values.
    texts = await owner_conn.fetch(
        "SELECT query FROM pg_stat_activity WHERE datname = current_database()"
    )
    assert present(CANARIES, "\n".join(row["query"] or "" for row in texts)) == []

    # Every text, jsonb and bytea column of every table: personal values only sealed, the
    # secret and the unlisted value nowhere.
    assert await find_canaries(owner_conn, CANARIES) == []
    # ... where a value kept as it is (a reference) is found.
    assert await find_canaries(owner_conn, ["doc-1"]) == ["review_items.payload"]


async def test_no_canary_reaches_pg_stat_statements(
    test_database: TestDatabase,
    db: Database,
    owner_db: Database,
    owner_conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:
    try:
        await owner_conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        await owner_conn.execute("SELECT pg_stat_statements_reset()")
    except asyncpg.FeatureNotSupportedError as error:
        # The embedded server's build has no contrib modules.
        pytest.skip(f"pg_stat_statements is not installed on the test server: {error}")
    except (asyncpg.ObjectNotInPrerequisiteStateError, asyncpg.UndefinedFileError) as error:
        pytest.skip(
            "pg_stat_statements cannot record here: the test server does not load it "
            f"(shared_preload_libraries = {await shared_preload_libraries(owner_conn)!r}): "
            f"{error}"
        )
    await run_scenario(test_database, db, owner_db, tmp_path)
    texts = await owner_conn.fetch(
        "SELECT s.query FROM pg_stat_statements AS s "
        "JOIN pg_database AS d ON d.oid = s.dbid WHERE d.datname = current_database()"
    )
    assert texts, "pg_stat_statements recorded nothing of the run"
    assert present(CANARIES, "\n".join(row["query"] for row in texts)) == []


async def shared_preload_libraries(owner_conn: asyncpg.Connection) -> str:
    value: str = await owner_conn.fetchval("SHOW shared_preload_libraries")
    return value
