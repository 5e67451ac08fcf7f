"""NATS JetStream for the intake's tests: the server (this machine's on 127.0.0.1:4222 when it
answers with JetStream, else one started here with `nats-server -js` on a free port), and a
BrokerHarness that makes dead letters the way production does: a consumer with
max_deliver=2 naks a message until the server publishes the max-deliveries advisory."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from server.intake.nats import NatsSourceOptions, ensure_advisory_stream
from server.intake.sources import BrokerKind, SourceConfig
from tests.api.live_server import free_port
from tests.apply.helpers import wait_until
from tests.intake.brokers_support import BrokerHarness, Received

MACHINE_NATS_URL = os.environ.get("TEST_NATS_URL", "nats://127.0.0.1:4222")
WORK_CONSUMER = "worker"
MAX_DELIVER = 2
WITHIN = 20.0
# How long a letter an intake took stays with it: an intake killed before acknowledging
# (the end-to-end test kills one mid-batch) leaves its letters to the next after this long.
# Production's default is 300 s; a test batch commits well within 5.
ACK_WAIT_SECONDS = 5


async def answers_with_jetstream(url: str) -> bool:
    try:
        nc = await nats.connect(
            url, connect_timeout=1, allow_reconnect=False, max_reconnect_attempts=0
        )
    except (TimeoutError, OSError, nats.errors.Error):
        return False
    try:
        await nc.jetstream().account_info()
        return True
    except (TimeoutError, nats.errors.Error):
        return False
    finally:
        await nc.close()


@asynccontextmanager
async def own_nats_server() -> AsyncIterator[str]:
    """A `nats-server -js` of this test run, on a free port with a temporary store; skips
    when the binary is not installed."""
    binary = shutil.which("nats-server")
    if binary is None:
        pytest.skip(
            f"no NATS JetStream answers at {MACHINE_NATS_URL} and nats-server is not installed"
            " (apt-get install nats-server, or set TEST_NATS_URL)"
        )
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="casework-nats-") as store:
        server = await asyncio.create_subprocess_exec(
            binary,
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-sd",
            store,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await wait_until(
                lambda: answers_with_jetstream(url), within=WITHIN, what=f"nats-server on {port}"
            )
            yield url
        finally:
            server.terminate()
            await server.wait()


def jetstream_answers(url: str) -> bool:
    """Whether a NATS server with JetStream answers at `url`: the INFO line every server sends
    on connect says so. Synchronous, so a session fixture can ask before any loop runs."""
    host, _, port = url.removeprefix("nats://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1) as sock:
            line = sock.makefile("rb").readline()
    except OSError:
        return False
    if not line.startswith(b"INFO "):
        return False
    return json.loads(line[5:]).get("jetstream") is True


@pytest.fixture(scope="session")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This machine's NATS when it answers with JetStream, else one started here (a test may
    ask for it from inside a running loop, so it is synchronous)."""
    if jetstream_answers(MACHINE_NATS_URL):
        yield MACHINE_NATS_URL
        return
    binary = shutil.which("nats-server")
    if binary is None:
        pytest.skip(
            f"no NATS JetStream answers at {MACHINE_NATS_URL} and nats-server is not installed"
            " (apt-get install nats-server, or set TEST_NATS_URL)"
        )
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    store = tmp_path_factory.mktemp("nats")
    command = [binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + WITHIN
        while not jetstream_answers(url):
            assert server.poll() is None, f"nats-server exited with {server.returncode}"
            assert time.monotonic() < deadline, f"nats-server on {port} did not answer"
            time.sleep(0.05)
        yield url
    finally:
        server.terminate()
        server.wait()


@dataclass
class _Declared:
    stream: str
    work_subject: str
    parking_stream: str
    parking_subject: str
    options: NatsSourceOptions
    worker: JetStreamContext.PullSubscription
    parked: JetStreamContext.PullSubscription
    # Stream sequences the server published a max-deliveries advisory for (heard on a
    # subscription of the harness's own: the capture stream's copy is the intake's).
    dead_lettered: set[int] = field(default_factory=set)


class NatsHarness:
    """BrokerHarness for NATS JetStream. Each `declare(name)` makes a stream of its own (names
    carry this harness's token, so runs sharing the machine's server never meet) with the
    work subject, a consumer `worker` with max_deliver=2, a parking stream, and the stream
    capturing the max-deliveries advisories, so letters failed before the intake starts wait
    for it. `close()` deletes them."""

    kind = BrokerKind.NATS

    def __init__(self, url: str, nc: Client) -> None:
        self.url = url
        self.nc = nc
        self.js = nc.jetstream()
        self.token = uuid.uuid4().hex[:10]
        self.declared: dict[str, _Declared] = {}

    @classmethod
    async def connect(cls, url: str) -> NatsHarness:
        return cls(url, await nats.connect(url))

    def stream_of(self, name: str) -> str:
        return self.declared[name].stream

    def work_subject(self, name: str) -> str:
        return self.declared[name].work_subject

    async def declare(self, name: str, **options: object) -> SourceConfig:
        """The source's config; `options` are added to the NATS source's options."""
        part = "".join(c if c.isalnum() else "_" for c in name)
        stream = f"CW_{self.token}_{part}"
        work_subject = f"cw.{self.token}.{part}.work"
        parking_stream = f"{stream}_PARKED"
        parking_subject = f"cw.{self.token}.{part}.parked"
        await self.js.add_stream(StreamConfig(name=stream, subjects=[work_subject]))
        await self.js.add_stream(StreamConfig(name=parking_stream, subjects=[parking_subject]))
        worker = await self.js.pull_subscribe(
            work_subject,
            durable=WORK_CONSUMER,
            stream=stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT, max_deliver=MAX_DELIVER, ack_wait=WITHIN
            ),
        )
        parked = await self.js.pull_subscribe(
            parking_subject, durable="harness", stream=parking_stream
        )
        config = SourceConfig(
            name=name,
            broker=BrokerKind.NATS,
            url=self.url,
            dead_letter=stream,
            parking=parking_subject,
            options={"consumer": WORK_CONSUMER, "ack_wait_seconds": ACK_WAIT_SECONDS, **options},
        )
        source_options = NatsSourceOptions.of(config)
        await ensure_advisory_stream(self.js, source_options, name)
        declared = _Declared(
            stream, work_subject, parking_stream, parking_subject, source_options, worker, parked
        )

        async def heard(advisory: Msg) -> None:
            declared.dead_lettered.add(int(json.loads(advisory.data)["stream_seq"]))

        await self.nc.subscribe(source_options.advisory_subject, cb=heard)
        await self.nc.flush()
        self.declared[name] = declared
        return config

    async def publish(self, name: str, body: bytes, headers: Mapping[str, str]) -> int:
        """Publishes to the work subject; returns the stream sequence."""
        ack = await self.js.publish(self.work_subject(name), body, headers=dict(headers) or None)
        return ack.seq

    async def fail_to_dead_letter(self, name: str, body: bytes, headers: Mapping[str, str]) -> str:
        declared = self.declared[name]
        sequence = await self.publish(name, body, headers)

        async def dead_lettered() -> bool:
            try:
                taken = await declared.worker.fetch(10, timeout=0.2)
            except TimeoutError:  # nats.errors.TimeoutError, or asyncio's when a fetch expires
                taken = []
            for msg in taken:
                await msg.nak()
            return sequence in declared.dead_lettered

        await wait_until(
            dead_lettered, within=WITHIN, what=f"the max-deliveries advisory of {sequence}"
        )
        return headers.get("Nats-Msg-Id") or f"{declared.stream}:{sequence}"

    async def _take(
        self, subscription: JetStreamContext.PullSubscription, count: int, what: str
    ) -> list[Received]:
        received: list[Received] = []

        async def all_taken() -> bool:
            try:
                taken = await subscription.fetch(count - len(received), timeout=0.2)
            except TimeoutError:  # nats.errors.TimeoutError, or asyncio's when a fetch expires
                taken = []
            for msg in taken:
                await msg.ack_sync()
                headers = dict(msg.headers or {})
                received.append(Received(headers.get("Nats-Msg-Id", ""), msg.data, headers))
            return len(received) == count

        await wait_until(all_taken, within=WITHIN, what=f"{count} messages on {what}")
        return received

    async def take_from_work_queue(self, name: str, count: int) -> list[Received]:
        declared = self.declared[name]
        return await self._take(declared.worker, count, declared.work_subject)

    async def take_parked(self, name: str, count: int) -> list[Received]:
        declared = self.declared[name]
        return await self._take(declared.parked, count, declared.parking_subject)

    async def pending_on_work_queue(self, name: str) -> int:
        declared = self.declared[name]
        info = await self.js.consumer_info(declared.stream, WORK_CONSUMER)
        return int(info.num_pending) + int(info.num_ack_pending)

    async def dead_letters_waiting(self, name: str) -> int:
        """Advisories the intake has not acknowledged yet (taken or not)."""
        advisory_stream = self.declared[name].options.advisory_stream
        return int((await self.js.stream_info(advisory_stream)).state.messages)

    async def close(self) -> None:
        try:
            for declared in self.declared.values():
                for stream in (
                    declared.stream,
                    declared.parking_stream,
                    declared.options.advisory_stream,
                ):
                    with contextlib.suppress(nats.js.errors.NotFoundError):
                        await self.js.delete_stream(stream)
        finally:
            await self.nc.close()


@pytest.fixture
async def nats_harness(nats_url: str) -> AsyncIterator[NatsHarness]:
    harness = await NatsHarness.connect(nats_url)
    try:
        yield harness
    finally:
        await harness.close()


def as_broker_harness(harness: NatsHarness) -> BrokerHarness:
    """The harness, typed as the protocol the end-to-end tests take (mypy checks it)."""
    return harness
