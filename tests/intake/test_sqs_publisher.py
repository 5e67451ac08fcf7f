"""The SQS adapter's redrive publisher (server/intake/sqs.py) against moto's server mode, the
only SQS that runs here (tests/intake/sqs_support.py): a corrected message goes back to the
queue it failed on with its redrive key, once on a FIFO queue however often it is sent."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator

import pytest

from server.intake.sources import BrokerKind, Origin
from server.intake.sqs import (
    FOLDED_ATTRIBUTE,
    REDRIVE_KEY_ATTRIBUTE,
    message_attributes,
    open_publisher,
    open_source,
)
from tests.intake.sqs_support import SqsHarness, depth, source_config, sqs_harness, take


@pytest.fixture
async def harness() -> AsyncIterator[SqsHarness]:
    async with sqs_harness() as started:
        yield started


async def test_a_redrive_lands_on_the_queue_the_message_failed_on(harness: SqsHarness) -> None:
    config = await harness.declare("redrive")
    await harness.fail_to_dead_letter("redrive", b'{"amount": 1}', {"record-id": "R-1"})
    source = await open_source(config)
    try:
        async for batch in source.batches(10):
            [letter] = batch
            await source.acknowledge(letter)
            break
    finally:
        await source.close()

    publisher = await open_publisher(config)
    try:
        await publisher.publish(
            letter.origin,
            b'{"amount": 2}',
            message_id="wf:R-1:v2",
            headers={"record-id": "R-1", REDRIVE_KEY_ATTRIBUTE: "not this one"},
        )
    finally:
        await publisher.close()

    [redriven] = await harness.take_from_work_queue("redrive", 1)
    assert redriven.message_id == "wf:R-1:v2"
    assert redriven.body == b'{"amount": 2}'
    assert redriven.headers == {REDRIVE_KEY_ATTRIBUTE: "wf:R-1:v2", "record-id": "R-1"}
    assert await depth(harness.client, harness.queues["redrive"].dead_letter) == 0


@pytest.mark.parametrize(
    ("key", "deduplication_id"),
    [
        ("wf:R-1:v2", "wf:R-1:v2"),
        # A space is no character of a MessageDeduplicationId: its SHA-256 stands in.
        ("wf:R 1:v2", hashlib.sha256(b"wf:R 1:v2").hexdigest()),
    ],
)
async def test_a_fifo_queue_takes_one_redrive_however_often_it_is_sent(
    harness: SqsHarness, key: str, deduplication_id: str
) -> None:
    client = harness.client
    queue = (
        await client.create_queue(
            QueueName=f"redrive-{len(key)}-{key.count(' ')}.fifo",
            Attributes={"FifoQueue": "true"},
        )
    )["QueueUrl"]
    config = source_config("fifo", harness.endpoint, "unused", "unused")
    publisher = await open_publisher(config)
    try:
        for _ in range(3):
            await publisher.publish(
                Origin(BrokerKind.SQS, queue=queue), b"once", message_id=key, headers={}
            )
    finally:
        await publisher.close()

    [message] = await take(client, queue, 1)
    assert message["Body"] == "once"
    assert message["Attributes"]["MessageDeduplicationId"] == deduplication_id
    assert message["Attributes"]["MessageGroupId"] == deduplication_id
    assert await depth(client, queue) == 0


async def test_a_publisher_refuses_what_sqs_cannot_carry(harness: SqsHarness) -> None:
    config = await harness.declare("refused")
    publisher = await open_publisher(config)
    try:
        with pytest.raises(ValueError, match="origin names no SQS queue"):
            await publisher.publish(Origin(BrokerKind.SQS), b"x", message_id="k", headers={})
        with pytest.raises(ValueError, match="cannot send to a nats origin"):
            await publisher.publish(
                Origin(BrokerKind.NATS, subject="s"), b"x", message_id="k", headers={}
            )
        with pytest.raises(ValueError, match="not UTF-8"):
            await publisher.publish(
                Origin(BrokerKind.SQS, queue=harness.queues["refused"].work),
                b"\xff",
                message_id="k",
                headers={},
            )
    finally:
        await publisher.close()
    assert await depth(harness.client, harness.queues["refused"].work) == 0


def test_attributes_sqs_would_refuse_travel_folded() -> None:
    attributes = message_attributes(
        {"Casework-Redrive-Key": "k", "bad name": "1", "empty": "", "AWS.reserved": "2"},
        {"typed": {"DataType": "Number", "StringValue": "3"}},
    )
    assert attributes == {
        "Casework-Redrive-Key": {"DataType": "String", "StringValue": "k"},
        "typed": {"DataType": "Number", "StringValue": "3"},
        FOLDED_ATTRIBUTE: {
            "DataType": "String",
            "StringValue": json.dumps({"bad name": "1", "empty": "", "AWS.reserved": "2"}),
        },
    }


def test_an_earlier_fold_is_kept_inside_the_new_one() -> None:
    earlier = json.dumps({"h10": "v10"})
    typed = {f"h{n}": {"DataType": "String", "StringValue": f"v{n}"} for n in range(9)}
    typed[FOLDED_ATTRIBUTE] = {"DataType": "String", "StringValue": earlier}
    attributes = message_attributes({"Casework-Park-Reason": "again"}, typed)
    assert len(attributes) == 10
    folded = json.loads(attributes[FOLDED_ATTRIBUTE]["StringValue"])
    assert folded == {"h8": "v8", FOLDED_ATTRIBUTE: earlier}


def test_ten_attributes_fit_as_they_are() -> None:
    plain = {f"h{n}": str(n) for n in range(10)}
    assert message_attributes(plain) == {
        name: {"DataType": "String", "StringValue": value} for name, value in plain.items()
    }
