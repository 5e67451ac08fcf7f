"""The Redis transport, for many replicas: hints travel through Redis pub/sub, not NOTIFY.

The service's connections set `casework.events = 'app'`, so writes send no NOTIFY (whose
commit lock serialises every notifying commit in the cluster); each write's hint comes back
as a column and is published here after its commit. Subscribing works like the PostgreSQL
listener (see `reconnecting.py`), with a PING heartbeat.
"""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub

from server.events.channels import CHANNEL
from server.events.reconnecting import (
    CONNECT_TIMEOUT_SECONDS,
    HEARTBEAT_INTERVAL_SECONDS,
    HEARTBEAT_TIMEOUT_SECONDS,
    ReconnectingTransport,
)

log = logging.getLogger("casework.events.redis")


class RedisTransport(ReconnectingTransport):
    name = "redis"

    def __init__(self, url: str, *, channel: str = CHANNEL) -> None:
        super().__init__()
        self._url = url
        self._channel = channel
        self._publisher = aioredis.from_url(url, socket_timeout=CONNECT_TIMEOUT_SECONDS)
        self._client: aioredis.Redis | None = None
        self._pubsub: PubSub | None = None
        self.publish_failures = 0
        # Heartbeats answered (for tests and operators: the connection is being checked).
        self.heartbeats = 0

    async def stop(self) -> None:
        await super().stop()
        await self._publisher.aclose()

    async def publish(self, hint: str) -> None:
        """Called after the write committed. The write stands whatever happens here; a
        lost hint is what the subscribers' resync after a reconnect is for."""
        try:
            await self._publisher.publish(self._channel, hint)
        except Exception as error:
            self.publish_failures += 1
            log.warning("redis: a hint was not published (%s: %s)", type(error).__name__, error)

    async def _session(self) -> None:
        self._client = aioredis.from_url(self._url, socket_timeout=CONNECT_TIMEOUT_SECONDS)
        pubsub = self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        await asyncio.wait_for(pubsub.subscribe(self._channel), CONNECT_TIMEOUT_SECONDS)
        self._listening()
        loop = asyncio.get_running_loop()
        # In subscribed mode a PING is answered by a `pong` message on the same stream.
        ping_sent_at: float | None = None
        while True:
            waited = HEARTBEAT_INTERVAL_SECONDS
            if ping_sent_at is not None:
                waited = max(0.0, ping_sent_at + HEARTBEAT_TIMEOUT_SECONDS - loop.time())
            message = await pubsub.get_message(timeout=waited)
            if message is None and ping_sent_at is not None:
                # The wait ran out. When this process's loop was busy past the deadline
                # (a long synchronous step, a starved CPU), the pong may have arrived
                # meanwhile: read what is already there before calling the server gone.
                message = await pubsub.get_message(timeout=0)
            if message is not None:
                # Anything from the server answers the heartbeat.
                if ping_sent_at is not None:
                    self.heartbeats += 1
                ping_sent_at = None
                if message.get("type") == "message":
                    data = message["data"]
                    self._deliver(data.decode() if isinstance(data, bytes) else data)
            elif ping_sent_at is None:
                await pubsub.ping()
                ping_sent_at = loop.time()
            elif loop.time() - ping_sent_at >= HEARTBEAT_TIMEOUT_SECONDS:
                raise ConnectionError("no answer to the heartbeat")

    async def _close_session(self) -> None:
        pubsub, client, self._pubsub, self._client = self._pubsub, self._client, None, None
        if pubsub is not None:
            await pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]
        if client is not None:
            await client.aclose()
