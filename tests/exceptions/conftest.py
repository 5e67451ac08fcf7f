"""The supplier-onboarding workflow, over the real API: a supplier's uploaded document names
a different legal entity than the supplier record, and the onboarding flow stops."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from server.domain.model import Role
from server.store.database import Database
from tests.api.conftest import GraphQL, client, gql  # noqa: F401  (fixtures)
from tests.conftest import token_maker
from tests.exceptions.operations import SETUP_SUPPLIER_WORKFLOW

WORKFLOW = "supplier_onboarding"
OWNER_QUEUE = "supplier-ops"
ESCALATION_QUEUE = "procurement-leads"
APPROVAL_QUEUE = "supplier-approvals"
REASON = "entity_mismatch"


@dataclass(frozen=True)
class People:
    admin: str
    erp: str  # the owning system: raises exceptions, takes redrives, reports results
    sam: str  # supplier-ops reviewer, the corrector
    sam_as_approver: str  # the same person with an approver token: four-eyes must stop him
    sue: str  # another supplier-ops reviewer
    ann: str  # approver
    leo: str  # procurement lead: the escalation owner
    manager: str
    outsider: str


@pytest.fixture
async def people(owner_db: Database) -> People:
    make = token_maker(owner_db)

    return People(
        admin=await make("ada", Role.ADMIN),
        erp=await make("erp-onboarding", Role.INTEGRATION),
        sam=await make("sam", Role.REVIEWER, OWNER_QUEUE),
        sam_as_approver=await make("sam", Role.APPROVER, APPROVAL_QUEUE),
        sue=await make("sue", Role.REVIEWER, OWNER_QUEUE),
        ann=await make("ann", Role.APPROVER, APPROVAL_QUEUE),
        leo=await make("leo", Role.REVIEWER, ESCALATION_QUEUE),
        manager=await make("max", Role.MANAGER),
        outsider=await make("olga", Role.REVIEWER, "payouts"),
    )


@pytest.fixture
async def supplier_workflow(gql: GraphQL, people: People) -> str:  # noqa: F811
    body = await gql(people.admin, SETUP_SUPPLIER_WORKFLOW)
    typenames = {result["__typename"] for result in body["data"].values()}
    assert typenames == {"QueueConfigured", "WorkflowConfigured", "ExceptionReasonDefined"}, body
    return WORKFLOW
