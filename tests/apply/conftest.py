"""The apply suite's fixtures from the API and exception suites: the real app in-process, a
GraphQL caller on it, and the supplier-onboarding people and workflow; and those people's
desk."""

from __future__ import annotations

import asyncpg
import pytest

from server.store.database import Database
from tests.api import conftest as api_fixtures
from tests.api.conftest import GraphQL
from tests.apply.helpers import OnboardingDesk
from tests.exceptions import conftest as exception_fixtures
from tests.exceptions.conftest import People

client = api_fixtures.client
gql = api_fixtures.gql
tokens = api_fixtures.tokens
people = exception_fixtures.people
supplier_workflow = exception_fixtures.supplier_workflow


@pytest.fixture
def onboarding(
    db: Database, owner_conn: asyncpg.Connection, gql: GraphQL, people: People
) -> OnboardingDesk:
    return OnboardingDesk(db, owner_conn, gql, people)
