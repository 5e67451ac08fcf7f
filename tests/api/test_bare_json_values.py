"""A JSON argument that is a bare number, boolean or string (a payload, an exception's context,
a correction's changes) is the client's mistake: each is refused as InvalidInput naming the
argument, with nothing logged. The string check in front of every root field
(server/graphql/input_strings.py) used to fail on them with a TypeError: "Unexpected
error." and a traceback (found by tests/api/test_schema_fuzz.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.api.conftest import GraphQL, Tokens

ENQUEUE = """
mutation($items: [NewItemInput!]!) {
  enqueueItems(queue: "kyc", items: $items) {
    __typename ... on InvalidInput { field message }
  }
}
"""
RAISE = """
mutation($input: RaiseExceptionInput!) {
  raiseException(input: $input) { __typename ... on InvalidInput { field message } }
}
"""
CORRECT = """
mutation($input: SubmitCorrectionInput!) {
  submitCorrection(input: $input) { __typename ... on InvalidInput { field message } }
}
"""
# In the document itself as well as in variables: both reach the check the same way.
ENQUEUE_LITERAL = """
mutation {
  enqueueItems(queue: "kyc", items: [{externalKey: "k-1", payload: 3.5}]) {
    __typename ... on InvalidInput { field message }
  }
}
"""
BARE = [3.5, 7, True, False, "text"]


def refused(body: dict[str, Any], field: str) -> dict[str, Any]:
    assert "errors" not in body, body
    (result,) = body["data"].values()
    assert isinstance(result, dict)
    assert result["__typename"] == "InvalidInput", result
    assert result["field"] == field, result
    return result


@pytest.fixture
def no_error_logged(caplog: pytest.LogCaptureFixture) -> Any:
    caplog.set_level(logging.WARNING)
    yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == []


@pytest.mark.usefixtures("no_error_logged")
@pytest.mark.parametrize("value", BARE)
async def test_a_bare_payload_is_refused_as_invalid_input(
    gql: GraphQL, tokens: Tokens, kyc: str, value: Any
) -> None:
    items = [{"externalKey": "k-1", "payload": value}]
    result = refused(await gql(tokens.integration, ENQUEUE, items=items), "items[0].payload")
    assert "must be a JSON object" in result["message"]


@pytest.mark.usefixtures("no_error_logged")
async def test_a_bare_payload_in_the_document_is_refused_as_invalid_input(
    gql: GraphQL, tokens: Tokens, kyc: str
) -> None:
    refused(await gql(tokens.integration, ENQUEUE_LITERAL), "items[0].payload")


@pytest.mark.usefixtures("no_error_logged")
@pytest.mark.parametrize("value", BARE)
async def test_a_bare_exception_context_is_refused_as_invalid_input(
    gql: GraphQL, tokens: Tokens, value: Any
) -> None:
    raised = {
        "workflow": "supplier_onboarding",
        "sourceRecordId": "SUP-1",
        "reasonCode": "entity_mismatch",
        "detail": "the document names another entity",
        "consequence": "LOW",
        "context": value,
    }
    refused(await gql(tokens.integration, RAISE, input=raised), "context")


@pytest.mark.usefixtures("no_error_logged")
@pytest.mark.parametrize("value", BARE)
async def test_bare_correction_changes_are_refused_as_invalid_input(
    gql: GraphQL, tokens: Tokens, value: Any
) -> None:
    correction = {
        "exceptionId": "1",
        "leaseToken": "00000000-0000-0000-0000-000000000000",
        "reasonCode": "entity_mismatch",
        "changes": value,
        "evidence": ["doc:1"],
    }
    refused(await gql(tokens.reviewer, CORRECT, input=correction), "changes")
