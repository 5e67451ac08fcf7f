"""SQS for the intake's tests: moto's server mode, and a BrokerHarness over it.

moto (its ThreadedMotoServer, in this process, on a port of 127.0.0.1 the kernel picks) is
the only SQS that runs here: Amazon's service is not reachable and there is no other local
SQS. It speaks the SQS API over HTTP, so the adapter (server/intake/sqs.py) and a
`casework intake` process talk to it as they would to Amazon. What moto 5.2 does differently
(tests/intake/test_sqs_moto.py holds it): a RedrivePolicy moves a message to the dead-letter
queue during the receive that finds it past maxReceiveCount, keeping its MessageId, but it
sets no DeadLetterQueueSourceArn, and StartMessageMoveTask is not served."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiobotocore.session import get_session  # type: ignore[import-untyped]
from moto.server import ThreadedMotoServer

from server.intake.sources import BrokerKind, DeadLetterSource, RedrivePublisher, SourceConfig
from server.intake.sqs import (
    ORIGINAL_ID_ATTRIBUTE,
    REDRIVE_KEY_ATTRIBUTE,
    SqsDeadLetterSource,
    SqsRedrivePublisher,
    message_attributes,
)
from tests.intake.brokers_support import BrokerHarness, Received

REGION = "us-east-1"
# moto takes any credentials; the adapter gets them from the source's options, so that no
# lookup of the AWS credential chain (environment, profile, instance metadata) happens.
CREDENTIALS = {"access_key_id": "moto", "secret_access_key": "moto"}
WITHIN_SECONDS = 30


@asynccontextmanager
async def moto_sqs() -> AsyncIterator[str]:
    """moto's server in a thread of this process; yields its endpoint URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    await asyncio.to_thread(server.start)
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        await asyncio.to_thread(server.stop)


@asynccontextmanager
async def sqs_client(endpoint: str) -> AsyncIterator[Any]:
    """A plain aiobotocore SQS client of moto's server, for what a test does around the
    adapter (create queues, fail messages, look at queues)."""
    async with get_session().create_client(
        "sqs",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id=CREDENTIALS["access_key_id"],
        aws_secret_access_key=CREDENTIALS["secret_access_key"],
    ) as client:
        yield client


def source_config(
    name: str, endpoint: str, dead_letter: str, parking: str, **options: Any
) -> SourceConfig:
    return SourceConfig(
        name=name,
        broker=BrokerKind.SQS,
        url=endpoint,
        dead_letter=dead_letter,
        parking=parking,
        # A short visibility timeout: what a killed intake held comes back within seconds
        # (the adapter extends it while a batch is in progress).
        options={
            "region": REGION,
            "wait_seconds": 1,
            "visibility_timeout": 5,
            **CREDENTIALS,
            **options,
        },
    )


async def queue_arn(client: Any, url: str) -> str:
    answer = await client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(answer["Attributes"]["QueueArn"])


async def depth(client: Any, url: str) -> int:
    """Messages on a queue, visible or not (moto counts them exactly)."""
    answer = await client.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )
    counts = answer["Attributes"]
    return int(counts["ApproximateNumberOfMessages"]) + int(
        counts["ApproximateNumberOfMessagesNotVisible"]
    )


def headers_of(message: Mapping[str, Any]) -> dict[str, str]:
    return {
        name: str(value.get("StringValue", ""))
        for name, value in message.get("MessageAttributes", {}).items()
    }


async def fail_until_dead_lettered(client: Any, work_url: str, message_id: str) -> None:
    """Receives from the work queue without deleting (a consumer failing every message,
    with a visibility timeout of 0 so each is visible again at once) until the queue's
    RedrivePolicy has moved `message_id` to the dead-letter queue. moto moves a message
    during the receive that finds it visible and past maxReceiveCount, so once a receive
    that was not cut short by MaxNumberOfMessages leaves it out after it was received,
    it is on the dead-letter queue."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_SECONDS
    seen = False
    while loop.time() < deadline:
        answer = await client.receive_message(
            QueueUrl=work_url,
            MaxNumberOfMessages=10,
            # Long-poll until it arrives; once received, the next receive moves it.
            WaitTimeSeconds=0 if seen else 1,
            VisibilityTimeout=0,
        )
        messages = answer.get("Messages", [])
        ids = {message["MessageId"] for message in messages}
        if message_id in ids:
            seen = True
        elif seen and len(messages) < 10:
            return
    raise AssertionError(f"{message_id} not dead-lettered within {WITHIN_SECONDS} s")


async def take(client: Any, url: str, count: int) -> list[dict[str, Any]]:
    """Waits (long polls, within WITHIN_SECONDS) for `count` messages on a queue and deletes
    them; fails when fewer come."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN_SECONDS
    taken: list[dict[str, Any]] = []
    while len(taken) < count:
        if loop.time() > deadline:
            raise AssertionError(f"{len(taken)} of {count} messages on {url}")
        answer = await client.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(count - len(taken), 10),
            WaitTimeSeconds=1,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        for message in answer.get("Messages", []):
            await client.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            taken.append(message)
    return taken


@dataclass(frozen=True)
class Declared:
    work: str
    dead_letter: str
    parking: str


class SqsHarness:
    """BrokerHarness (tests/intake/brokers_support.py) for SQS, on a moto server of its own.

    Per name: a work queue whose RedrivePolicy (maxReceiveCount 1) moves a failed message to
    a dead-letter queue, and a parking queue. A redrive's Received.message_id is its
    Casework-Redrive-Key attribute (SQS gives every message an id of its own); a parked
    message's is the dead letter's MessageId (its Casework-Original-Message-Id attribute)."""

    kind = BrokerKind.SQS

    def __init__(self, stack: AsyncExitStack, endpoint: str, client: Any) -> None:
        self._stack = stack
        self.endpoint = endpoint
        self.client = client
        self.queues: dict[str, Declared] = {}

    @classmethod
    async def start(cls) -> SqsHarness:
        stack = AsyncExitStack()
        try:
            endpoint = await stack.enter_async_context(moto_sqs())
            client = await stack.enter_async_context(sqs_client(endpoint))
        except BaseException:
            await stack.aclose()
            raise
        return cls(stack, endpoint, client)

    async def declare(self, name: str) -> SourceConfig:
        # Queue names: letters, digits, - and _, 80 at most; unique, as moto's state is
        # shared by every server of one process.
        base = re.sub(r"[^A-Za-z0-9_-]", "-", name)[:50] + "-" + uuid.uuid4().hex[:8]
        dead_letter = (await self.client.create_queue(QueueName=f"{base}-dlq"))["QueueUrl"]
        parking = (await self.client.create_queue(QueueName=f"{base}-parking"))["QueueUrl"]
        policy = {"deadLetterTargetArn": await queue_arn(self.client, dead_letter)}
        work = (
            await self.client.create_queue(
                QueueName=base,
                Attributes={"RedrivePolicy": json.dumps(policy | {"maxReceiveCount": 1})},
            )
        )["QueueUrl"]
        self.queues[name] = Declared(work, dead_letter, parking)
        return source_config(name, self.endpoint, dead_letter, parking)

    async def fail_to_dead_letter(self, name: str, body: bytes, headers: Mapping[str, str]) -> str:
        queues = self.queues[name]
        sent = await self.client.send_message(
            QueueUrl=queues.work,
            MessageBody=body.decode(),
            MessageAttributes=message_attributes(headers),
        )
        message_id = str(sent["MessageId"])
        await fail_until_dead_lettered(self.client, queues.work, message_id)
        return message_id

    async def take_from_work_queue(self, name: str, count: int) -> list[Received]:
        taken = await take(self.client, self.queues[name].work, count)
        return [self._received(message, REDRIVE_KEY_ATTRIBUTE) for message in taken]

    async def take_parked(self, name: str, count: int) -> list[Received]:
        taken = await take(self.client, self.queues[name].parking, count)
        return [self._received(message, ORIGINAL_ID_ATTRIBUTE) for message in taken]

    @staticmethod
    def _received(message: Mapping[str, Any], id_attribute: str) -> Received:
        headers = headers_of(message)
        return Received(
            message_id=headers.get(id_attribute, str(message["MessageId"])),
            body=str(message["Body"]).encode(),
            headers=headers,
        )

    async def close(self) -> None:
        await self._stack.aclose()


@asynccontextmanager
async def sqs_harness() -> AsyncIterator[SqsHarness]:
    harness = await SqsHarness.start()
    try:
        yield harness
    finally:
        await harness.close()


def conforming(
    harness: SqsHarness, source: SqsDeadLetterSource, publisher: SqsRedrivePublisher
) -> tuple[BrokerHarness, DeadLetterSource, RedrivePublisher]:
    """Never called: mypy holds the harness and the adapter to their protocols here."""
    return harness, source, publisher
