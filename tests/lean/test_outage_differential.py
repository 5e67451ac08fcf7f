"""An outage answered alike: both applications reach PostgreSQL through a forwarder
(proxy.py), which is cut: pooled connections break, new ones are refused. A token both
applications have cached fails in the operation (503, UNAVAILABLE in `errors`); a token
neither has seen fails in its lookup (503 before any operation ran). Its own module, whose
applications connect through the forwarder.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.config import Settings
from server.domain.model import Role
from server.store.queries import Queries
from tests import pg
from tests.conftest import TestDatabase, pooled, token_maker
from tests.lean.apps import Pair, bearer, graphql_body, paired_apps
from tests.lean.conftest import seeded
from tests.lean.documents import console_document
from tests.lean.outcomes import COVERAGE, outcome
from tests.lean.proxy import CuttableProxy, proxy_of
from tests.lean.state import State


@pytest.fixture(scope="module")
async def outage_database(pg_server: str, template_database: str) -> AsyncIterator[TestDatabase]:
    name = await pg.clone_database(pg_server, template_database)
    yield TestDatabase(name, pg.owner_dsn(pg_server, name), pg.app_dsn(pg_server, name))
    await pg.drop_database(pg_server, name)


@pytest.fixture(scope="module")
async def proxy(outage_database: TestDatabase) -> AsyncIterator[CuttableProxy]:
    async with proxy_of(outage_database.app_dsn) as forwarder:
        yield forwarder


@pytest.fixture(scope="module")
async def outage_pair(outage_database: TestDatabase, proxy: CuttableProxy) -> AsyncIterator[Pair]:
    """This module's applications reach the database through the forwarder only."""
    async with paired_apps(proxy.dsn(outage_database.app_dsn), Settings.from_env()) as apps:
        yield apps


@pytest.fixture(scope="module")
async def outage_world(outage_database: TestDatabase, outage_pair: Pair) -> State:
    return await seeded(outage_database, outage_pair)


@pytest.fixture
async def unseen_token(outage_database: TestDatabase, outage_world: State) -> str:
    async with pooled(outage_database.owner_dsn, Queries(pg.QUERIES_DIR), max_size=1) as owner:
        return await token_maker(owner)("una", Role.MANAGER, "kyc")


@pytest.mark.parametrize("operation_name", ["Queues", "Queue", "ClaimNext", "SubmitDecision"])
async def test_an_outage_is_answered_alike(
    operation_name: str,
    outage_pair: Pair,
    outage_world: State,
    unseen_token: str,
    proxy: CuttableProxy,
) -> None:
    pair, world = outage_pair, outage_world
    await proxy.cut()
    chosen = console_document(operation_name)
    variables = {
        "Queues": None,
        "Queue": {"name": "kyc"},
        "ClaimNext": {"queue": "kyc"},
        "SubmitDecision": {
            "input": {
                "itemId": world.lease["item"]["id"],
                "leaseToken": world.lease["leaseToken"],
                "verdict": "APPROVE",
                "reasonCode": "documents_ok",
                "evidenceHash": world.lease["evidenceHash"],
            }
        },
    }[operation_name]
    body = graphql_body(chosen.text, variables, operationName=operation_name)
    known = world.tokens["reviewer" if chosen.is_mutation else "admin"]
    for token in (known, unseen_token):
        lean, found = await pair.compare(body, bearer(token), mutation=chosen.is_mutation)
        COVERAGE[(chosen.name, outcome(lean), "outage")] += 1
        assert not found, "\n".join(found)
        assert lean.status == 503, lean.body
        assert outcome(lean).endswith("errors:UNAVAILABLE"), lean.body
