"""The apply suite's fixtures from the API and exception suites: the real app in-process, a
GraphQL caller on it, and the supplier-onboarding people and workflow."""

from __future__ import annotations

from tests.api import conftest as api_fixtures
from tests.exceptions import conftest as exception_fixtures

client = api_fixtures.client
gql = api_fixtures.gql
people = exception_fixtures.people
supplier_workflow = exception_fixtures.supplier_workflow
