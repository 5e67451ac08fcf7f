"""The Redis transport, for many replicas: hints travel through Redis pub/sub, not NOTIFY.

The service's connections set `casework.events = 'app'`, so writes send no NOTIFY (whose
commit lock serialises every notifying commit in the cluster); each write's hint comes back
as a column and is published here after its commit. Subscribing mirrors the PostgreSQL
listener: one connection per process, a heartbeat, reconnects with backoff and jitter, and
a resync of every subscriber after each reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub

from server.events.channels import CHANNEL, parse_event
from server.events.transport import EventHandler, ReconnectHandler, TransportStatus

log = logging.getLogger("casework.events.redis")

HEARTBEAT_INTERVAL_SECONDS = 2.0
HEARTBEAT_TIMEOUT_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 5.0
BACKOFF_FIRST_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 5.0


class RedisTransport:
    def __init__(self, url: str, *, channel: str = CHANNEL) -> None:
        self._url = url
        self._channel = channel
        self._publisher = aioredis.from_url(url, socket_timeout=CONNECT_TIMEOUT_SECONDS)
        self._task: asyncio.Task[None] | None = None
        self._on_event: EventHandler | None = None
        self._on_reconnect: ReconnectHandler | None = None
        self._connected = asyncio.Event()
        self.reconnects = 0
        self.last_error: str | None = None
        self.publish_failures = 0

    async def start(self, on_event: EventHandler, on_reconnect: ReconnectHandler) -> None:
        self._on_event, self._on_reconnect = on_event, on_reconnect
        self._task = asyncio.create_task(self._run(), name="casework-redis-listener")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), CONNECT_TIMEOUT_SECONDS)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._publisher.aclose()

    def status(self) -> TransportStatus:
        return TransportStatus("redis", self._connected.is_set(), self.reconnects, self.last_error)

    async def publish(self, hint: str) -> None:
        """Called after the write committed. The write stands whatever happens here; a
        lost hint is what the subscribers' resync after a reconnect is for."""
        try:
            await self._publisher.publish(self._channel, hint)
        except Exception as error:
            self.publish_failures += 1
            log.warning("redis: a hint was not published (%s: %s)", type(error).__name__, error)

    async def _run(self) -> None:
        failures = 0
        ever_connected = False
        while True:
            client = aioredis.from_url(self._url, socket_timeout=CONNECT_TIMEOUT_SECONDS)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await self._listen_until_lost(pubsub, client, first=not ever_connected)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self.last_error = f"{type(error).__name__}: {error}"
                log.warning("redis listener: %s; reconnecting", self.last_error)
            finally:
                if self._connected.is_set():
                    ever_connected, failures = True, 0
                else:
                    failures += 1
                self._connected.clear()
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
                    await client.aclose()
            delay = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2**failures)
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))

    async def _listen_until_lost(
        self, pubsub: PubSub, client: aioredis.Redis, *, first: bool
    ) -> None:
        await asyncio.wait_for(pubsub.subscribe(self._channel), CONNECT_TIMEOUT_SECONDS)
        self._connected.set()
        if not first:
            self.reconnects += 1
            log.info("redis listener: reconnected; resyncing subscribers")
            assert self._on_reconnect is not None
            self._on_reconnect()
        loop = asyncio.get_running_loop()
        # In subscribed mode a PING is answered by a `pong` message on the same stream.
        ping_sent_at: float | None = None
        while True:
            message = await pubsub.get_message(timeout=HEARTBEAT_INTERVAL_SECONDS)
            if message is None:
                if ping_sent_at is not None:
                    if loop.time() - ping_sent_at > HEARTBEAT_TIMEOUT_SECONDS:
                        raise ConnectionError("no answer to the heartbeat")
                    continue
                await pubsub.ping()
                ping_sent_at = loop.time()
            elif message.get("type") == "pong":
                ping_sent_at = None
            elif message.get("type") == "message":
                self._deliver(message["data"])

    def _deliver(self, data: bytes | str) -> None:
        payload = data.decode() if isinstance(data, bytes) else data
        event = parse_event(payload)
        assert self._on_event is not None
        assert self._on_reconnect is not None
        if event is None:
            log.warning("redis listener: unreadable hint %.200r; resyncing", payload)
            self._on_reconnect()
            return
        self._on_event(event)
