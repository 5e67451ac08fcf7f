"""docs/exceptions.md's set-up example, run as written on a fresh database."""

from __future__ import annotations

from server.config import REPO_ROOT
from tests.api.conftest import GraphQL, Tokens
from tests.docs.helpers import code_blocks, section

EXCEPTIONS_DOC = REPO_ROOT / "docs" / "exceptions.md"
SUCCESS = {"QueueConfigured", "WorkflowConfigured", "ExceptionReasonDefined"}

RAISE = """
mutation { raiseException(input: {workflow: "supplier_onboarding", sourceRecordId: "SUP-1",
  reasonCode: "entity_mismatch", detail: "The letter names another entity.",
  consequence: HIGH}) { __typename ... on ExceptionRaised { exception { ownerRole } } } }
"""


def setup_example() -> str:
    (example,) = code_blocks(section(EXCEPTIONS_DOC, "## Workflows and their reasons"), "graphql")
    return example


async def test_the_setup_example_works_on_a_fresh_database_and_again(
    gql: GraphQL, tokens: Tokens
) -> None:
    first = await gql(tokens.admin, setup_example())
    second = await gql(tokens.admin, setup_example())
    raised = await gql(tokens.integration, RAISE)

    for body in (first, second):
        assert "errors" not in body, body
        assert {result["__typename"] for result in body["data"].values()} <= SUCCESS, body
    assert len(first["data"]) == 5
    assert raised["data"]["raiseException"] == {
        "__typename": "ExceptionRaised",
        "exception": {"ownerRole": "supplier-ops"},
    }
