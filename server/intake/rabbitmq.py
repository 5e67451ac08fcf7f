"""RabbitMQ: a dead-letter queue fed by a dead-letter exchange, read with aio-pika.

A queue whose messages are rejected (nack/reject without requeue), expire, or overflow is
given `x-dead-letter-exchange`; the broker republishes such a message there with an
`x-death` header: a list, newest first, of where it died (queue), why (`rejected`,
`expired`, `maxlen`, `delivery_limit`), how often, when, and the exchange and routing keys
it had been published with. The intake drains the queue bound to that exchange:

- message id: the message's `message_id` property. A message without one gets a key derived
  from its body and its first death (`sha256:` and the digest of the body, the first death's
  queue and reason, and each death's time): two identical bodies dead-lettered from one queue
  in the same second share it, and the second is then acknowledged as a repeat of the first,
  which would have raised the same exception anyway. Publishers should set `message_id`.
- failure: the newest death's reason, queue, count, time, exchange and routing keys, the
  first death's queue and reason, and every death as the broker listed it.
- origin: the newest death's exchange and first routing key: where a redrive publishes.
- acknowledge: `basic.ack`. Messages taken but not yet acknowledged (the channel's prefetch,
  `options.prefetch`, default the batch size) go back to the queue if the intake stops or
  dies, and are taken again.
- park: the same body and properties, with a `Casework-Park-Reason` header, published (with
  publisher confirms) to the parking queue through the default exchange; then the dead
  letter is acknowledged.

Both queues must exist: they are checked (passively declared) when the source opens."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

import aio_pika
from aio_pika.abc import (
    AbstractIncomingMessage,
    AbstractRobustChannel,
    AbstractRobustConnection,
    AbstractRobustQueue,
)

# Redrives are published by their own module; the runner finds `open_publisher` here.
from server.intake.rabbitmq_publisher import open_publisher
from server.intake.sources import (
    BrokerKind,
    DeadLetter,
    DeadLetterSource,
    Origin,
    SourceConfig,
)

__all__ = ["RabbitMQSource", "open_publisher", "open_source"]

log = logging.getLogger("casework.intake.rabbitmq")

PARK_REASON_HEADER = "Casework-Park-Reason"
CONNECT_TIMEOUT_SECONDS = 10
# The headers the broker writes of a death: they go into `failure`, not `headers`.
_DEATH_HEADERS = ("x-death", "x-first-death-", "x-last-death-")


class SourceUnavailable(Exception):
    """The broker cannot be reached, or a queue the source names does not exist."""


def json_safe(value: Any) -> Any:
    """An AMQP field value as JSON: bytes as text, times as ISO 8601, decimals as text."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _as_text(value: Any) -> str:
    safe = json_safe(value)
    return safe if isinstance(safe, str) else json.dumps(safe, separators=(",", ":"))


def deaths_of(headers: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = headers.get("x-death")
    if not isinstance(raw, list):
        return []
    return [json_safe(death) for death in raw if isinstance(death, Mapping)]


def failure_of(headers: Mapping[str, Any]) -> dict[str, Any]:
    deaths = deaths_of(headers)
    newest = deaths[0] if deaths else {}
    failure: dict[str, Any] = {
        "reason": newest.get("reason"),
        "queue": newest.get("queue"),
        "count": newest.get("count"),
        "time": newest.get("time"),
        "exchange": newest.get("exchange"),
        "routingKeys": newest.get("routing-keys"),
        "firstDeathQueue": json_safe(headers.get("x-first-death-queue")),
        "firstDeathReason": json_safe(headers.get("x-first-death-reason")),
        "deaths": deaths,
    }
    return {key: value for key, value in failure.items() if value is not None}


def origin_of(headers: Mapping[str, Any]) -> Origin:
    deaths = deaths_of(headers)
    newest = deaths[0] if deaths else {}
    keys = newest.get("routing-keys") or []
    exchange = newest.get("exchange")
    if exchange is None:
        exchange = json_safe(headers.get("x-first-death-exchange"))
    return Origin(
        BrokerKind.RABBITMQ,
        exchange=exchange if isinstance(exchange, str) else None,
        routing_key=keys[0] if keys and isinstance(keys[0], str) else None,
    )


def message_id_of(message_id: str | None, body: bytes, headers: Mapping[str, Any]) -> str:
    if message_id:
        return message_id
    deaths = deaths_of(headers)
    first = deaths[-1] if deaths else {}
    marks = {
        "queue": json_safe(headers.get("x-first-death-queue")) or first.get("queue"),
        "reason": json_safe(headers.get("x-first-death-reason")) or first.get("reason"),
        "times": [death.get("time") for death in deaths],
    }
    digest = hashlib.sha256(body)
    digest.update(json.dumps(marks, sort_keys=True).encode())
    return f"sha256:{digest.hexdigest()}"


def plain_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    """The message's own headers, as text (the broker's death headers are in `failure`)."""
    return {
        str(name): _as_text(value)
        for name, value in headers.items()
        if not str(name).startswith(_DEATH_HEADERS)
    }


def dead_letter_of(message: AbstractIncomingMessage) -> DeadLetter:
    headers: Mapping[str, Any] = message.headers or {}
    return DeadLetter(
        message_id=message_id_of(message.message_id, message.body, headers),
        body=message.body,
        headers=plain_headers(headers),
        failure=failure_of(headers),
        origin=origin_of(headers),
        handle=message,
    )


class RabbitMQSource:
    """One dead-letter queue on one connection; see the module."""

    def __init__(
        self,
        config: SourceConfig,
        connection: AbstractRobustConnection,
        channel: AbstractRobustChannel,
        queue: AbstractRobustQueue,
    ) -> None:
        self._config = config
        self._connection = connection
        self._channel = channel
        self._queue = queue
        self._inbox: asyncio.Queue[AbstractIncomingMessage | None] = asyncio.Queue()
        self._consumer_tag: str | None = None
        self._closed = False

    async def _deliver(self, message: AbstractIncomingMessage) -> None:
        await self._inbox.put(message)

    async def batches(self, size: int) -> AsyncIterator[list[DeadLetter]]:
        prefetch = int(self._config.options.get("prefetch", size))
        await self._channel.set_qos(prefetch_count=max(prefetch, size))
        self._consumer_tag = await self._queue.consume(self._deliver)
        while not self._closed:
            first = await self._inbox.get()
            if first is None:
                return
            batch = [dead_letter_of(first)]
            while len(batch) < size and not self._inbox.empty():
                more = self._inbox.get_nowait()
                if more is None:
                    self._closed = True
                    break
                batch.append(dead_letter_of(more))
            yield batch

    async def acknowledge(self, letter: DeadLetter) -> None:
        message: AbstractIncomingMessage = letter.handle
        await message.ack()

    async def park(self, letter: DeadLetter, reason: str) -> None:
        message: AbstractIncomingMessage = letter.handle
        headers = dict(message.headers or {})
        headers[PARK_REASON_HEADER] = reason
        parked = aio_pika.Message(
            message.body,
            headers=headers,
            content_type=message.content_type,
            content_encoding=message.content_encoding,
            correlation_id=message.correlation_id,
            message_id=message.message_id or letter.message_id,
            timestamp=message.timestamp,
            type=message.type,
            app_id=message.app_id,
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        )
        # With publisher confirms, this returns once the broker holds the parked copy.
        await self._channel.default_exchange.publish(parked, routing_key=self._config.parking)
        await message.ack()

    async def close(self) -> None:
        if self._closed and self._connection.is_closed:
            return
        self._closed = True
        self._inbox.put_nowait(None)
        # Messages taken but not acknowledged go back to the queue with the channel.
        await self._connection.close()


async def open_source(config: SourceConfig) -> DeadLetterSource:
    try:
        connection = await aio_pika.connect_robust(config.url, timeout=CONNECT_TIMEOUT_SECONDS)
    except (OSError, TimeoutError, aio_pika.exceptions.AMQPError) as error:
        raise SourceUnavailable(f"cannot connect to RabbitMQ: {error}") from error
    try:
        await _check_queues(connection, config)
        channel: AbstractRobustChannel = await connection.channel(publisher_confirms=True)
        queue: AbstractRobustQueue = await channel.declare_queue(config.dead_letter, passive=True)
    except BaseException:
        await connection.close()
        raise
    return RabbitMQSource(config, connection, channel, queue)


async def _check_queues(connection: AbstractRobustConnection, config: SourceConfig) -> None:
    """Both queues exist (a passive declare of a missing queue closes its channel, so each
    is checked on a channel of its own)."""
    for role, name in (("dead_letter", config.dead_letter), ("parking", config.parking)):
        channel = await connection.channel()
        try:
            await channel.declare_queue(name, passive=True, robust=False)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            raise SourceUnavailable(f"{role} queue {name!r} does not exist on the broker") from None
        finally:
            if not channel.is_closed:
                await channel.close()
