"""The machine's RabbitMQ as a BrokerHarness: per name, a work exchange and queue whose
rejected messages go through a dead-letter exchange to a dead-letter queue, and a parking
queue. Everything is named after the test's own prefix and deleted at the end."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import aio_pika
from aio_pika.abc import (
    AbstractChannel,
    AbstractConnection,
    AbstractIncomingMessage,
    AbstractQueue,
)

from server.intake.sources import BrokerKind, SourceConfig
from tests.api.live_server import free_ports
from tests.intake.brokers_support import Received

MACHINE_URL = "amqp://guest:guest@127.0.0.1:5672/"
RABBITMQ_URL = os.environ.get("TEST_RABBITMQ_URL", MACHINE_URL)
# Where Debian's package keeps the server script that runs as the calling user (the one on
# PATH switches to the rabbitmq user when run as root).
SERVER_SCRIPT = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
OWN_STARTUP_SECONDS = 90
OWN_STOP_SECONDS = 30
WORK_ROUTING_KEY = "work"
# Generous for what takes milliseconds: it turns a lost message into a failure.
DEADLINE_SECONDS = 30
POLL_SECONDS = 0.02


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def server_binary() -> str | None:
    if SERVER_SCRIPT.exists():
        return str(SERVER_SCRIPT)
    return shutil.which("rabbitmq-server")


@contextlib.contextmanager
def own_rabbitmq(directory: Path) -> Iterator[str]:
    """A RabbitMQ node of this test session's own (no plugins, its data in `directory`) on
    free ports, stopped at the end: for a machine whose broker is installed but not running."""
    binary = server_binary()
    assert binary is not None
    amqp_port, dist_port = free_ports(2)
    (directory / "enabled_plugins").write_text("[].\n")
    env = {
        **os.environ,
        "HOME": str(directory),
        "RABBITMQ_NODENAME": f"casework-test-{os.getpid()}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(amqp_port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
        "RABBITMQ_LOG_BASE": str(directory / "log"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
        "RABBITMQ_CONFIG_FILE": str(directory / "none"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(directory / "none-advanced.config"),
        "RABBITMQ_CONF_ENV_FILE": str(directory / "none-env"),
    }
    log = (directory / "server.log").open("wb")
    process = subprocess.Popen(
        [binary],
        env=env,
        cwd=directory,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + OWN_STARTUP_SECONDS
        while not _answers(amqp_port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    "rabbitmq-server did not start:\n" + (directory / "server.log").read_text()
                )
            time.sleep(0.2)
        yield f"amqp://guest:guest@127.0.0.1:{amqp_port}/"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(OWN_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def rabbitmq_answers(url: str = RABBITMQ_URL) -> str | None:
    """None when something listens at the URL's host and port, else why not (for a skip)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5672
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as error:
        return (
            f"no RabbitMQ at {host}:{port} ({error}); start rabbitmq-server, install it, or "
            "set TEST_RABBITMQ_URL"
        )
    return None


@dataclass
class Declared:
    work_exchange: str
    work_queue: str
    dead_letter_exchange: str
    dead_letter: str
    parking: str
    # How many this harness dead-lettered, to know when the last one arrived.
    dead_lettered: int = 0


@dataclass
class RabbitMQHarness:
    connection: AbstractConnection
    channel: AbstractChannel
    prefix: str = field(default_factory=lambda: f"cw-test-{uuid.uuid4().hex[:10]}")
    kind: BrokerKind = BrokerKind.RABBITMQ
    url: str = RABBITMQ_URL
    declared: dict[str, Declared] = field(default_factory=dict)

    @classmethod
    async def connect(cls, url: str = RABBITMQ_URL) -> RabbitMQHarness:
        connection = await aio_pika.connect(url, timeout=10)
        channel = await connection.channel(publisher_confirms=True)
        return cls(connection, channel, url=url)

    async def declare(self, name: str) -> SourceConfig:
        base = f"{self.prefix}.{name}"
        names = Declared(
            work_exchange=f"{base}.work-x",
            work_queue=f"{base}.work",
            dead_letter_exchange=f"{base}.dlx",
            dead_letter=f"{base}.dead",
            parking=f"{base}.parked",
        )
        channel = self.channel
        dlx = await channel.declare_exchange(
            names.dead_letter_exchange, aio_pika.ExchangeType.FANOUT, durable=True
        )
        dead = await channel.declare_queue(names.dead_letter, durable=True)
        await dead.bind(dlx)
        work_x = await channel.declare_exchange(
            names.work_exchange, aio_pika.ExchangeType.DIRECT, durable=True
        )
        work = await channel.declare_queue(
            names.work_queue,
            durable=True,
            arguments={"x-dead-letter-exchange": names.dead_letter_exchange},
        )
        await work.bind(work_x, routing_key=WORK_ROUTING_KEY)
        await channel.declare_queue(names.parking, durable=True)
        self.declared[name] = names
        return SourceConfig(
            name=name,
            broker=BrokerKind.RABBITMQ,
            url=self.url,
            dead_letter=names.dead_letter,
            parking=names.parking,
        )

    async def publish_to_work(
        self, name: str, body: bytes, headers: Mapping[str, str], message_id: str | None
    ) -> None:
        names = self.declared[name]
        exchange = await self.channel.get_exchange(names.work_exchange)
        await exchange.publish(
            aio_pika.Message(
                body,
                headers=dict(headers),
                message_id=message_id,
                content_type="application/json",
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            ),
            routing_key=WORK_ROUTING_KEY,
        )

    async def reject_from_work(self, name: str, count: int) -> None:
        """The work queue's consumer fails `count` messages: rejected without requeue, so
        the broker dead-letters each with an x-death header."""
        names = self.declared[name]
        queue = await self.channel.get_queue(names.work_queue)
        for _ in range(count):
            message = await _get(queue, f"a message on {names.work_queue}")
            await message.reject(requeue=False)
        names.dead_lettered += count

    async def wait_dead_lettered(self, name: str) -> None:
        """Until every message this harness failed is on the dead-letter queue (call it
        while nothing consumes that queue)."""
        names = self.declared[name]
        await until_count(self.channel, names.dead_letter, names.dead_lettered)

    async def fail_to_dead_letter(
        self, name: str, body: bytes, headers: Mapping[str, str], message_id: str | None = None
    ) -> str:
        message_id = message_id or f"msg-{uuid.uuid4().hex}"
        await self.publish_to_work(name, body, headers, message_id)
        await self.reject_from_work(name, 1)
        await self.wait_dead_lettered(name)
        return message_id

    async def take_from_work_queue(self, name: str, count: int) -> list[Received]:
        return await self._take(self.declared[name].work_queue, count)

    async def take_parked(self, name: str, count: int) -> list[Received]:
        return await self._take(self.declared[name].parking, count)

    async def ready(self, name: str, which: str = "dead_letter") -> int:
        """Messages ready on one of `name`'s queues (not counting ones a consumer holds)."""
        queue_name = getattr(self.declared[name], which)
        return await ready_count(self.channel, queue_name)

    async def consumers(self, name: str) -> int:
        """Consumers of `name`'s dead-letter queue (0 once a killed intake's connection is
        gone, and with it what it held unacknowledged is back)."""
        declared = await self.channel.declare_queue(self.declared[name].dead_letter, passive=True)
        count = declared.declaration_result.consumer_count
        assert count is not None
        return count

    async def _take(self, queue_name: str, count: int) -> list[Received]:
        queue = await self.channel.get_queue(queue_name)
        taken = []
        for _ in range(count):
            message = await _get(queue, f"a message on {queue_name}")
            await message.ack()
            headers = {k: _text(v) for k, v in (message.headers or {}).items()}
            taken.append(Received(message.message_id or "", message.body, headers))
        return taken

    async def close(self) -> None:
        channel = self.channel
        for names in self.declared.values():
            for queue in (names.work_queue, names.dead_letter, names.parking):
                await channel.queue_delete(queue)
            for exchange in (names.work_exchange, names.dead_letter_exchange):
                await channel.exchange_delete(exchange)
        await self.connection.close()


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else repr(value)


async def ready_count(channel: AbstractChannel, queue_name: str) -> int:
    declared = await channel.declare_queue(queue_name, passive=True)
    count = declared.declaration_result.message_count
    assert count is not None
    return count


async def until_count(channel: AbstractChannel, queue_name: str, expected: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while (count := await ready_count(channel, queue_name)) < expected:
        if loop.time() > deadline:
            raise AssertionError(f"{queue_name}: {count} ready, expected {expected}")
        await asyncio.sleep(POLL_SECONDS)


async def _get(queue: AbstractQueue, what: str) -> AbstractIncomingMessage:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while (message := await queue.get(fail=False)) is None:
        if loop.time() > deadline:
            raise AssertionError(f"not within {DEADLINE_SECONDS} s: {what}")
        await asyncio.sleep(POLL_SECONDS)
    return message
