"""What every broker's adapter gives the intake, and takes from it.

An adapter (rabbitmq.py, nats.py, sqs.py) turns its broker's dead letters into DeadLetter
values, acknowledges one only when the intake says it is committed, parks what cannot be
mapped, and publishes a redrive to the message's origin. The intake itself (mapping,
idempotency, the database) knows no broker."""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class BrokerKind(enum.StrEnum):
    RABBITMQ = "rabbitmq"
    NATS = "nats"
    SQS = "sqs"


@dataclass(frozen=True)
class Origin:
    """Where the message failed, so a redrive can publish the corrected one back there.
    RabbitMQ: `exchange` and `routing_key` (from x-death); NATS: `subject` and `stream`;
    SQS: `queue` (the source queue's URL or name)."""

    broker: BrokerKind
    exchange: str | None = None
    routing_key: str | None = None
    subject: str | None = None
    stream: str | None = None
    queue: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None and k != "broker"} | {
            "broker": self.broker.value
        }


@dataclass(frozen=True)
class SourceConfig:
    """How to reach one dead-letter queue (from the intake's configuration file).
    RabbitMQ: `dead_letter` and `parking` are queue names; NATS: `dead_letter` is the
    stream whose consumer hit max deliveries (`options["consumer"]` names the consumer),
    `parking` a subject; SQS: `dead_letter` and `parking` are queue URLs (or names)."""

    name: str
    broker: BrokerKind
    url: str
    dead_letter: str
    parking: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DeadLetter:
    """One message taken from a dead-letter queue, not yet acknowledged."""

    # The broker's id of the message: the intake's idempotency key (with the source name).
    message_id: str
    body: bytes
    headers: Mapping[str, str]
    # What the broker says of the failure (x-death, the advisory, the receive count), as
    # JSON: becomes the exception's detail and context.
    failure: Mapping[str, Any]
    origin: Origin
    # The adapter's handle to acknowledge or park this message (a delivery tag, a NATS
    # message, an SQS receipt handle).
    handle: Any = field(default=None, compare=False, repr=False)


class DeadLetterSource(Protocol):
    """One dead-letter queue, drained in batches."""

    def batches(self, size: int) -> AsyncIterator[list[DeadLetter]]:
        """Yields batches of at most `size` unacknowledged dead letters, until closed."""
        ...

    async def acknowledge(self, letter: DeadLetter) -> None:
        """Removes the message for good: called only after its exception is committed."""
        ...

    async def park(self, letter: DeadLetter, reason: str) -> None:
        """Moves a message that cannot be mapped to the parking queue, with the reason (a
        header or attribute), then removes it from the dead-letter queue."""
        ...

    async def close(self) -> None: ...


class RedrivePublisher(Protocol):
    """Publishes a corrected message to its origin, with the redrive key as its message id,
    so a consumer that drops repeats by message id sees one however often it is sent."""

    async def publish(
        self, origin: Origin, body: bytes, *, message_id: str, headers: Mapping[str, str]
    ) -> None: ...

    async def close(self) -> None: ...


# Each adapter module (server/intake/rabbitmq.py, nats.py, sqs.py) provides:
#     async def open_source(config: SourceConfig) -> DeadLetterSource
#     async def open_publisher(config: SourceConfig) -> RedrivePublisher
