"""The runner's own decisions, with sources made here: a source that cannot open is named
at start, and one that ends while the intake is not stopping stops it with an error."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.domain.model import Principal
from server.intake.runner import IntakeRunner, IntakeStartError, SourceEnded
from server.intake.sources import BrokerKind, DeadLetter, DeadLetterSource, SourceConfig
from server.store.database import Database
from tests.intake.intake_support import INTAKE, source_table, sources

CONFIG = SourceConfig(
    name="orders",
    broker=BrokerKind.RABBITMQ,
    url="amqp://127.0.0.1:1/",
    dead_letter="orders.dead",
    parking="orders.parked",
)
CONFIGURED = sources(source_table(CONFIG, record_id={"path": "order.id"}))


async def me() -> Principal:
    return INTAKE


class Ending:
    """A source whose broker went away for good: its batches end."""

    closed = False

    async def batches(self, size: int) -> AsyncIterator[list[DeadLetter]]:
        nothing: tuple[list[DeadLetter], ...] = ()
        for batch in nothing:
            yield batch

    async def acknowledge(self, letter: DeadLetter) -> None:
        raise AssertionError("nothing to acknowledge")

    async def park(self, letter: DeadLetter, reason: str) -> None:
        raise AssertionError("nothing to park")

    async def close(self) -> None:
        self.closed = True


async def test_a_source_that_ends_unasked_stops_the_intake(db: Database) -> None:
    ending = Ending()

    async def open_ending(config: SourceConfig) -> DeadLetterSource:
        return ending

    runner = IntakeRunner(db, me, CONFIGURED, open_source=open_ending)
    with pytest.raises(SourceEnded, match="source 'orders': the broker stopped delivering"):
        await runner.run()
    assert ending.closed


async def test_a_source_that_cannot_open_is_named(db: Database) -> None:
    async def refuse(config: SourceConfig) -> DeadLetterSource:
        raise ConnectionRefusedError(111, "Connection refused")

    runner = IntakeRunner(db, me, CONFIGURED, open_source=refuse)
    with pytest.raises(IntakeStartError) as stopped:
        await runner.run()
    assert stopped.value.problems == ["source 'orders': [Errno 111] Connection refused"]
