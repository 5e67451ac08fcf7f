"""configureWorkflow unsets a workflow's minutes per day with `clear` (capacity unknown
again); a minutes setting given as null, or left out, stays as it is. Before `clear` a
setting once given could never be unset."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import GraphQL
from tests.exceptions.conftest import WORKFLOW, People

CONFIGURE = """
mutation($input: ConfigureWorkflowInput!) {
  configureWorkflow(input: $input) {
    __typename
    ... on InvalidInput { field message }
    ... on WorkflowConfigured { workflow { reviewerMinutesPerDay approverMinutesPerDay } }
  }
}
"""
READ = """
query($name: String!) {
  workflow(name: $name) {
    reviewerMinutesPerDay approverMinutesPerDay
    measures { capacity { availableMinutesPerDay } approvalCapacity { availableMinutesPerDay } }
  }
}
"""


async def configure(gql: GraphQL, people: People, **settings: Any) -> dict[str, Any]:
    body = await gql(people.admin, CONFIGURE, input={"name": WORKFLOW, **settings})
    assert "errors" not in body, body
    answer: dict[str, Any] = body["data"]["configureWorkflow"]
    return answer


async def minutes(gql: GraphQL, people: People) -> tuple[Any, Any, Any, Any]:
    found = (await gql(people.admin, READ, name=WORKFLOW))["data"]["workflow"]
    measures = found["measures"]
    return (
        found["reviewerMinutesPerDay"],
        found["approverMinutesPerDay"],
        measures["capacity"]["availableMinutesPerDay"],
        measures["approvalCapacity"]["availableMinutesPerDay"],
    )


async def test_clear_unsets_a_minutes_setting_and_null_leaves_it(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    set_ = await configure(gql, people, reviewerMinutesPerDay=240, approverMinutesPerDay=60)
    assert set_["__typename"] == "WorkflowConfigured", set_
    assert await minutes(gql, people) == (240, 60, 240, 60)

    # Null, or left out, leaves it as it is.
    await configure(gql, people, reviewerMinutesPerDay=None, approverMinutesPerDay=None)
    await configure(gql, people)
    assert await minutes(gql, people) == (240, 60, 240, 60)

    cleared = await configure(gql, people, clear=["REVIEWER_MINUTES_PER_DAY"])
    assert cleared["workflow"] == {"reviewerMinutesPerDay": None, "approverMinutesPerDay": 60}
    assert await minutes(gql, people) == (None, 60, None, 60)

    # Clearing what is unset is no change; a setting can be given again after.
    await configure(gql, people, clear=["REVIEWER_MINUTES_PER_DAY", "APPROVER_MINUTES_PER_DAY"])
    assert await minutes(gql, people) == (None, None, None, None)
    await configure(gql, people, approverMinutesPerDay=30)
    assert await minutes(gql, people) == (None, 30, None, 30)


async def test_a_setting_given_and_cleared_at_once_is_refused(
    gql: GraphQL, people: People, supplier_workflow: str
) -> None:
    await configure(gql, people, reviewerMinutesPerDay=240)
    refused = await configure(
        gql, people, reviewerMinutesPerDay=120, clear=["REVIEWER_MINUTES_PER_DAY"]
    )
    assert refused == {
        "__typename": "InvalidInput",
        "field": "clear",
        "message": "REVIEWER_MINUTES_PER_DAY is both given and cleared",
    }
    assert (await minutes(gql, people))[0] == 240
