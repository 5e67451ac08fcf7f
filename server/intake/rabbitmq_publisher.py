"""Publishing redrives to RabbitMQ: the corrected message goes to the exchange and routing key
it was first published with (the origin the dead letter's x-death named), persistent, with
the redrive key as its message id and the headers the redrive loop gives (the original's,
and Casework-Redrive-Key).

Publisher confirms are on and every message is mandatory: `publish` returns only once the
broker has taken the message, and raises if it could not (no such exchange, no queue bound
for the routing key, the connection lost). Each failure is the redrive loop's to retry or
give up on; nothing here retries. A channel error closes the channel (AMQP's rule), so the
next publish opens another on the same connection; the connection itself reconnects
(aio-pika's robust connection)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractExchange, AbstractRobustConnection

from server.intake.sources import BrokerKind, Origin, RedrivePublisher, SourceConfig


class RabbitMQPublisher:
    """One connection per source; a channel opened when needed, with publisher confirms."""

    def __init__(self, connection: AbstractRobustConnection) -> None:
        self._connection = connection
        self._channel: AbstractChannel | None = None
        # One channel at a time is opened; publishes on it run concurrently.
        self._opening = asyncio.Lock()

    async def _open_channel(self) -> AbstractChannel:
        async with self._opening:
            if self._channel is None or self._channel.is_closed:
                old, self._channel = self._channel, None
                if old is not None:
                    with contextlib.suppress(Exception):
                        await old.close()
                self._channel = await self._connection.channel(
                    publisher_confirms=True, on_return_raises=True
                )
            return self._channel

    async def _exchange(self, channel: AbstractChannel, name: str) -> AbstractExchange:
        if not name:
            return channel.default_exchange
        # Not declared, not even passively: a missing exchange fails the publish itself,
        # and an exchange is the owner's to declare, with its own arguments.
        return await channel.get_exchange(name, ensure=False)

    async def publish(
        self, origin: Origin, body: bytes, *, message_id: str, headers: Mapping[str, str]
    ) -> None:
        if origin.broker is not BrokerKind.RABBITMQ:
            raise ValueError(f"a {origin.broker.value} origin cannot be published to RabbitMQ")
        if origin.routing_key is None:
            raise ValueError("the origin names no routing key")
        channel = await self._open_channel()
        exchange = await self._exchange(channel, origin.exchange or "")
        message = aio_pika.Message(
            body,
            headers=dict(headers),
            message_id=message_id,
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        )
        await exchange.publish(message, origin.routing_key, mandatory=True)

    async def close(self) -> None:
        if self._channel is not None and not self._channel.is_closed:
            with contextlib.suppress(Exception):
                await self._channel.close()
        await self._connection.close()


async def open_publisher(config: SourceConfig) -> RedrivePublisher:
    """A publisher on the source's broker (`config.url`, an amqp:// or amqps:// URL)."""
    connection = await aio_pika.connect_robust(config.url)
    return RabbitMQPublisher(connection)
