"""What an end-to-end intake test needs of a broker: one harness per broker (RabbitMQ,
NATS JetStream, SQS through moto's server), so one test runs against each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from server.intake.sources import BrokerKind, SourceConfig


@dataclass(frozen=True)
class Received:
    message_id: str
    body: bytes
    headers: Mapping[str, str]


class BrokerHarness(Protocol):
    kind: BrokerKind

    async def declare(self, name: str) -> SourceConfig:
        """A fresh work queue (or stream subject) named after `name`, whose failed messages
        reach a dead-letter queue, and a parking queue: returns the intake's config."""
        ...

    async def fail_to_dead_letter(self, name: str, body: bytes, headers: Mapping[str, str]) -> str:
        """Publishes to the work queue and has its consumer fail the message until the
        broker dead-letters it; returns once it is on the dead-letter queue, with the id the
        intake will see."""
        ...

    async def take_from_work_queue(self, name: str, count: int) -> list[Received]:
        """Waits for and takes `count` messages now on the work queue (redrives land here)."""
        ...

    async def take_parked(self, name: str, count: int) -> list[Received]: ...

    async def close(self) -> None: ...
