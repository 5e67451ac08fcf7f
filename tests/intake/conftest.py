"""Fixtures of the intake's tests: the order workflow, and one harness per broker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from server.store.database import Database
from tests.intake.brokers_support import BrokerHarness
from tests.intake.intake_support import HARNESSES, order_workflow
from tests.intake.nats_support import nats_url
from tests.intake.rabbitmq_support import (
    MACHINE_URL,
    RABBITMQ_URL,
    RabbitMQHarness,
    own_rabbitmq,
    rabbitmq_answers,
    server_binary,
)

__all__ = ["nats_url"]  # fixtures


@pytest.fixture
async def workflow(db: Database) -> str:
    return await order_workflow(db)


@pytest.fixture(params=sorted(HARNESSES))
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[BrokerHarness]:
    """Each broker in turn (skipped where it does not run here)."""
    opened = await HARNESSES[request.param](request)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture(scope="session")
def rabbitmq_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The machine's RabbitMQ when it answers (or TEST_RABBITMQ_URL's); else one this
    session starts where rabbitmq-server is installed; else the tests skip, saying why."""
    why = rabbitmq_answers(RABBITMQ_URL)
    if why is None:
        yield RABBITMQ_URL
        return
    if RABBITMQ_URL != MACHINE_URL or server_binary() is None:
        pytest.skip(why)
    with own_rabbitmq(tmp_path_factory.mktemp("rabbitmq")) as url:
        yield url


@pytest.fixture
async def rabbitmq(rabbitmq_url: str) -> AsyncIterator[RabbitMQHarness]:
    """RabbitMQ alone: for what only its harness can do (a message id sent twice)."""
    opened = await RabbitMQHarness.connect(rabbitmq_url)
    try:
        yield opened
    finally:
        await opened.close()
