"""Fixtures of the intake's tests: the order workflow, and one harness per broker."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.store.database import Database
from tests.intake.brokers_support import BrokerHarness
from tests.intake.intake_support import HARNESSES, order_workflow
from tests.intake.rabbitmq_support import RabbitMQHarness, rabbitmq_answers


@pytest.fixture
async def workflow(db: Database) -> str:
    return await order_workflow(db)


@pytest.fixture(params=sorted(HARNESSES))
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[BrokerHarness]:
    """Each broker in turn (skipped where it does not run here)."""
    opened = await HARNESSES[request.param]()
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def rabbitmq() -> AsyncIterator[RabbitMQHarness]:
    """RabbitMQ alone: for what only its harness can do (a message id sent twice)."""
    if why := await rabbitmq_answers():
        pytest.skip(why)
    opened = await RabbitMQHarness.connect()
    try:
        yield opened
    finally:
        await opened.close()
