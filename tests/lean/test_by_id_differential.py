"""A trusted document asked for by id (`documentId`, or Apollo's persisted query hash)
answers on both paths alike, and as the same document sent as text does. Until trusted
documents are resolved by id this fails: it is never skipped."""

from __future__ import annotations

from typing import Any

import pytest

from server.graphql.documents.ids import document_id, hash_of
from tests.lean.apps import Pair, bearer, graphql_body
from tests.lean.documents import console_document
from tests.lean.outcomes import COVERAGE, outcome
from tests.lean.snapshot import Snapshot
from tests.lean.state import State
from tests.lean.wire import differences


def _by_id(text: str, variables: Any, operation_name: str) -> bytes:
    return graphql_body(None, variables, documentId=document_id(text), operationName=operation_name)


def _by_apollo_hash(text: str, variables: Any, operation_name: str) -> bytes:
    digest = hash_of(document_id(text))
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    return graphql_body(None, variables, extensions=persisted, operationName=operation_name)


@pytest.mark.parametrize("form", [_by_id, _by_apollo_hash], ids=["documentId", "apollo"])
@pytest.mark.parametrize(
    ("role", "operation_name", "variables"),
    [
        ("reviewer", "Me", None),
        ("manager", "Queue", {"name": "kyc"}),
        ("reviewer", "ClaimNext", {"queue": "kyc"}),
        ("reviewer", "ClaimNext", {"queue": "quiet"}),
        ("reviewer", "Item", {"id": 7}),
    ],
)
async def test_a_document_by_id_answers_as_by_text_on_both_paths(
    form: Any,
    role: str,
    operation_name: str,
    variables: Any,
    pair: Pair,
    world: State,
    snapshot: Snapshot,
) -> None:
    chosen = console_document(operation_name)
    headers = bearer(world.tokens[role])
    restore = snapshot.restore if chosen.is_mutation else None
    by_id, found = await pair.compare(
        form(chosen.text, variables, operation_name),
        headers,
        mutation=chosen.is_mutation,
        restore=restore,
    )
    COVERAGE[(chosen.name, outcome(by_id), f"by id ({form.__name__})")] += 1
    assert not found, "\n".join(found)
    by_text, _ = await pair.compare(
        graphql_body(chosen.text, variables, operationName=operation_name),
        headers,
        mutation=chosen.is_mutation,
        restore=restore,
    )
    assert differences(by_id, by_text, fresh_values=chosen.is_mutation) == [], by_id.body
