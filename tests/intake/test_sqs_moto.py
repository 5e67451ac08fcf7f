"""What moto 5.2's SQS does, which the adapter (server/intake/sqs.py) and its docs rely on.

moto's server mode is the only SQS that runs here (Amazon's is out of reach): these tests
pin the behaviour the adapter's tests stand on, so a moto upgrade that changes it shows here
first."""

from __future__ import annotations

import json

from tests.intake.sqs_support import (
    depth,
    fail_until_dead_lettered,
    moto_sqs,
    queue_arn,
    sqs_client,
)


async def test_a_redrive_policy_moves_a_message_keeping_its_id_but_no_source_arn() -> None:
    async with moto_sqs() as endpoint, sqs_client(endpoint) as client:
        dead_letter = (await client.create_queue(QueueName="moto-dlq"))["QueueUrl"]
        policy = {"deadLetterTargetArn": await queue_arn(client, dead_letter), "maxReceiveCount": 1}
        work = (
            await client.create_queue(
                QueueName="moto-work", Attributes={"RedrivePolicy": json.dumps(policy)}
            )
        )["QueueUrl"]
        sent = await client.send_message(QueueUrl=work, MessageBody="body")

        await fail_until_dead_lettered(client, work, sent["MessageId"])

        assert await depth(client, work) == 0
        answer = await client.receive_message(
            QueueUrl=dead_letter,
            MaxNumberOfMessages=10,
            MessageSystemAttributeNames=["All"],
        )
        [message] = answer["Messages"]
        assert message["MessageId"] == sent["MessageId"]
        assert message["Body"] == "body"
        # Amazon's SQS sets DeadLetterQueueSourceArn on a moved message; moto does not.
        assert "DeadLetterQueueSourceArn" not in message["Attributes"]
        # The receive count goes on from the work queue's (1) with this receive.
        assert message["Attributes"]["ApproximateReceiveCount"] == "2"
        # The dead-letter queue knows its source queue.
        sources = await client.list_dead_letter_source_queues(QueueUrl=dead_letter)
        assert sources["queueUrls"] == [work]
