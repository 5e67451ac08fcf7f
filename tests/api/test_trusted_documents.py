"""Trusted documents over HTTP and websockets: by id (GraphQL over HTTP's documentId and
Apollo's persisted query hash), by GET, unknown ids, and CASEWORK_DOCUMENTS=trusted."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from server.config import Settings
from server.config_documents import DocumentMode, DocumentSettings
from server.graphql.documents.build import console_documents, python_client_documents
from server.graphql.documents.ids import document_id, hash_of
from server.store.database import Database
from tests.api.conftest import Tokens, in_process_client
from tests.conftest import TestDatabase
from tests.live.helpers import create_live_tokens, serve_casework
from tests.live.wsclient import graphql_socket

# The console's own documents, as operations.js has them.
CONSOLE = {text.split("(")[0].split("{")[0].split()[1]: text for text in console_documents()}
ME = CONSOLE["Me"]
CLAIM_NEXT = CONSOLE["ClaimNext"]
QUEUE_BACKLOG = CONSOLE["QueueBacklog"]
# A document an operator's integration sends, trusted by the operator's manifest only.
OWN = "query OwnQueues { queues { name } }"
UNKNOWN_ID = "sha256:" + "0" * 64


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body["errors"]]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def own_manifest(tmp_path: Path) -> Path:
    path = tmp_path / "integration.json"
    path.write_text(json.dumps({document_id(OWN): OWN}))
    return path


@pytest.fixture
async def trusted(
    test_database: TestDatabase, own_manifest: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """An application in CASEWORK_DOCUMENTS=trusted with the operator's manifest."""
    documents = DocumentSettings(mode=DocumentMode.TRUSTED, manifests=(own_manifest,))
    settings = replace(Settings.from_env(), documents=documents)
    async with in_process_client(test_database, dev=False, settings=settings) as client:
        yield client


async def test_a_document_by_its_id(client: httpx.AsyncClient, tokens: Tokens) -> None:
    response = await client.post(
        "/graphql",
        json={"documentId": document_id(ME), "variables": {}},
        headers=bearer(tokens.manager),
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["me"]["user"] == "max"


async def test_a_document_by_apollos_hash(client: httpx.AsyncClient, tokens: Tokens) -> None:
    digest = hash_of(document_id(ME))
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    response = await client.post(
        "/graphql", json={"extensions": persisted}, headers=bearer(tokens.manager)
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["me"]["user"] == "max"
    # With its text too (what Apollo's clients send after PersistedQueryNotFound).
    both = await client.post(
        "/graphql", json={"query": ME, "extensions": persisted}, headers=bearer(tokens.manager)
    )
    assert both.json()["data"]["me"]["user"] == "max"
    # A text that is not the hash's is refused.
    other = await client.post(
        "/graphql",
        json={"query": "{ me { user } }", "extensions": persisted},
        headers=bearer(tokens.manager),
    )
    assert other.status_code == 400
    assert codes(other.json()) == ["BAD_REQUEST"]


async def test_an_unknown_id_is_persisted_document_not_found(
    client: httpx.AsyncClient, tokens: Tokens
) -> None:
    response = await client.post(
        "/graphql", json={"documentId": UNKNOWN_ID}, headers=bearer(tokens.manager)
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "data" not in body
    assert codes(body) == ["PERSISTED_DOCUMENT_NOT_FOUND"]
    # Apollo's clients send the text again on Apollo's own message.
    apollo = await client.post(
        "/graphql",
        json={"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "0" * 64}}},
        headers=bearer(tokens.manager),
    )
    assert apollo.json()["errors"][0]["message"] == "PersistedQueryNotFound"
    assert codes(apollo.json()) == ["PERSISTED_DOCUMENT_NOT_FOUND"]
    # Malformed parameters are the client's mistake, 400.
    for bad in ({"documentId": 7}, {"extensions": {"persistedQuery": {"version": 2}}}):
        refused = await client.post("/graphql", json=bad, headers=bearer(tokens.manager))
        assert refused.status_code == 400, refused.text
        assert codes(refused.json()) == ["BAD_REQUEST"]


async def test_a_query_by_get_names_its_document(client: httpx.AsyncClient, tokens: Tokens) -> None:
    params = {"documentId": document_id(ME), "variables": "{}"}
    response = await client.get("/graphql", params=params, headers=bearer(tokens.manager))
    assert response.status_code == 200, response.text
    assert response.json()["data"]["me"]["user"] == "max"
    # Apollo's form over GET too.
    extensions = json.dumps(
        {"persistedQuery": {"version": 1, "sha256Hash": hash_of(document_id(ME))}}
    )
    apollo = await client.get(
        "/graphql", params={"extensions": extensions}, headers=bearer(tokens.manager)
    )
    assert apollo.json()["data"]["me"]["user"] == "max"
    # Without a token: 401, as a POST.
    anonymous = await client.get("/graphql", params=params)
    assert anonymous.status_code == 401
    assert codes(anonymous.json()) == ["UNAUTHENTICATED"]
    # A text by GET stays refused.
    text = await client.get("/graphql", params={"query": ME}, headers=bearer(tokens.manager))
    assert text.status_code == 400
    assert codes(text.json()) == ["BAD_REQUEST"]


async def test_a_mutation_by_get_is_405(client: httpx.AsyncClient, tokens: Tokens) -> None:
    params = {"documentId": document_id(CLAIM_NEXT), "variables": json.dumps({"queue": "kyc"})}
    response = await client.get("/graphql", params=params, headers=bearer(tokens.reviewer))
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == "POST"
    assert codes(response.json()) == ["BAD_REQUEST"]


async def test_trusted_mode_runs_trusted_documents_only(
    trusted: httpx.AsyncClient, tokens: Tokens
) -> None:
    headers = bearer(tokens.manager)
    unknown = await trusted.post("/graphql", json={"query": "{ me { user } }"}, headers=headers)
    assert unknown.status_code == 200
    assert "data" not in unknown.json()
    assert codes(unknown.json()) == ["DOCUMENT_NOT_TRUSTED"]
    # A built-in document by its exact text, and by its id.
    by_text = await trusted.post("/graphql", json={"query": ME}, headers=headers)
    assert by_text.json()["data"]["me"]["user"] == "max"
    by_id = await trusted.post("/graphql", json={"documentId": document_id(ME)}, headers=headers)
    assert by_id.json()["data"]["me"]["user"] == "max"
    # The Python client's texts, as it sends them.
    get_item = next(text for text in python_client_documents() if "query GetItem(" in text)
    answer = await trusted.post(
        "/graphql", json={"query": get_item, "variables": {"id": "1"}}, headers=headers
    )
    assert answer.json()["data"] == {"item": None}, answer.text
    # The operator's manifest counts as the built-in ones do.
    own = await trusted.post("/graphql", json={"query": OWN}, headers=headers)
    assert "errors" not in own.json(), own.text
    assert isinstance(own.json()["data"]["queues"], list)
    # The same text with one more space is another document.
    spaced = await trusted.post("/graphql", json={"query": ME + " "}, headers=headers)
    assert codes(spaced.json()) == ["DOCUMENT_NOT_TRUSTED"]


async def test_dev_accepts_any_document_whatever_the_setting(
    test_database: TestDatabase, tokens: Tokens
) -> None:
    documents = DocumentSettings(mode=DocumentMode.TRUSTED)
    settings = replace(Settings.from_env(), documents=documents)
    async with in_process_client(test_database, dev=True, settings=settings) as client:
        response = await client.post(
            "/graphql", json={"query": "{ me { user } }"}, headers=bearer(tokens.manager)
        )
    assert response.json() == {"data": {"me": {"user": "max"}}}


async def test_a_socket_in_trusted_mode_refuses_an_untrusted_subscription(
    test_database: TestDatabase, owner_db: Database, owner_conn: asyncpg.Connection
) -> None:
    live = await create_live_tokens(owner_db)
    async with serve_casework(test_database, CASEWORK_DOCUMENTS="trusted") as casework:
        await owner_conn.execute("INSERT INTO queues (name) VALUES ('kyc')")
        async with graphql_socket(casework.url, live.admin) as socket:
            untrusted = await socket.subscribe(
                'subscription { queueBacklog(queue: "kyc") { pending } }'
            )
            errors = await socket.error(untrusted)
            assert [error["extensions"]["code"] for error in errors] == ["DOCUMENT_NOT_TRUSTED"]
            # The socket goes on: the console's document by its text, then by its id.
            by_text = await socket.subscribe(QUEUE_BACKLOG, queue="kyc")
            assert (await socket.next(by_text))["queueBacklog"]["pending"] == 0
            operation = "by-id"
            await socket.connection.send(
                json.dumps(
                    {
                        "id": operation,
                        "type": "subscribe",
                        "payload": {
                            "documentId": document_id(QUEUE_BACKLOG),
                            "variables": {"queue": "kyc"},
                        },
                    }
                )
            )
            assert (await socket.next(operation))["queueBacklog"]["pending"] == 0
            unknown = "unknown"
            await socket.connection.send(
                json.dumps(
                    {"id": unknown, "type": "subscribe", "payload": {"documentId": UNKNOWN_ID}}
                )
            )
            errors = await socket.error(unknown)
            assert [error["extensions"]["code"] for error in errors] == [
                "PERSISTED_DOCUMENT_NOT_FOUND"
            ]
    casework.assert_no_traceback()
