"""Who sees which workflow: a token sees a workflow when it covers one of its queues."""

from __future__ import annotations

from tests.api.conftest import GraphQL
from tests.exceptions.conftest import People

WORKFLOWS = "{ workflows { name approvalQueue redriveVia reasons { code ownerRole } } }"


async def names(gql: GraphQL, token: str) -> list[str]:
    body = await gql(token, WORKFLOWS)
    assert "errors" not in body, body
    return [workflow["name"] for workflow in body["data"]["workflows"]]


async def test_each_token_sees_the_workflows_of_its_queues(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    assert await names(gql, people.admin) == ["apply_decision", "supplier_onboarding"]
    assert await names(gql, people.sam) == ["supplier_onboarding"]
    assert await names(gql, people.ann) == ["supplier_onboarding"]
    assert await names(gql, people.leo) == ["supplier_onboarding"]
    assert await names(gql, people.outsider) == []

    body = await gql(people.sam, WORKFLOWS)
    [supplier] = body["data"]["workflows"]
    assert supplier["approvalQueue"] == "supplier-approvals"
    assert supplier["redriveVia"] == "SUBSCRIPTION"
    assert {(r["code"], r["ownerRole"]) for r in supplier["reasons"]} == {
        ("entity_mismatch", "supplier-ops"),
        ("missing_approval", "supplier-ops"),
    }
