"""A workflow's reasons, read to judge whether the reader's token covers it, are not read a
second time for `Workflow.reasons`: `workflows { reasons }` reads them once (it was twice)."""

from __future__ import annotations

import pytest

from tests.api.conftest import GraphQL
from tests.api.helpers import statements_of
from tests.exceptions.conftest import People

REASONS = "exception_reasons_get_by_workflows"
WORKFLOWS = "{ workflows { name reasons { code ownerRole } } }"
WORKFLOW = '{ workflow(name: "supplier_onboarding") { name reasons { code } } }'


async def test_a_workflows_reasons_are_read_once(
    gql: GraphQL, people: People, supplier_workflow: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed, calls = await statements_of(gql, people.manager, WORKFLOWS, monkeypatch)
    assert calls.count(REASONS) == 1, calls
    supplier = next(w for w in listed["workflows"] if w["name"] == "supplier_onboarding")
    assert [reason["code"] for reason in supplier["reasons"]] == [
        "entity_mismatch",
        "missing_approval",
    ]

    one, calls = await statements_of(gql, people.manager, WORKFLOW, monkeypatch)
    assert calls.count(REASONS) == 1, calls
    assert one["workflow"]["reasons"] == [{"code": "entity_mismatch"}, {"code": "missing_approval"}]
