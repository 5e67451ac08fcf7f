"""The SQS adapter's dead-letter source (server/intake/sqs.py) against moto's server mode,
the only SQS that runs here (tests/intake/sqs_support.py): what it yields of a dead letter,
acknowledging, parking, keeping a batch in progress hidden, and handing back what the
intake did not settle."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from datetime import datetime

import pytest

from server.config import REPO_ROOT
from server.intake.sources import BrokerKind, DeadLetter, Origin
from server.intake.sqs import (
    FOLDED_ATTRIBUTE,
    OPTIONS,
    ORIGINAL_ID_ATTRIBUTE,
    PARK_REASON_ATTRIBUTE,
    SqsConfigError,
    SqsDeadLetterSource,
    open_source,
)
from tests.apply.helpers import wait_until
from tests.intake.sqs_support import SqsHarness, depth, queue_arn, source_config, sqs_harness

WITHIN = 30


@pytest.fixture
async def harness() -> AsyncIterator[SqsHarness]:
    async with sqs_harness() as started:
        yield started


async def first_batch(source: SqsDeadLetterSource, size: int = 10) -> list[DeadLetter]:
    async with aclosing(source.batches(size)) as batches:
        return await asyncio.wait_for(anext(batches), WITHIN)


async def test_a_dead_letter_comes_with_its_failure_and_origin(harness: SqsHarness) -> None:
    config = await harness.declare("orders")
    queues = harness.queues["orders"]
    body = json.dumps({"order": {"id": "A-1"}}).encode()
    message_id = await harness.fail_to_dead_letter("orders", body, {"record-id": "A-1"})

    source = await open_source(config)
    try:
        [letter] = await first_batch(source)
        assert letter.message_id == message_id
        assert letter.body == body
        assert letter.headers == {"record-id": "A-1"}
        assert letter.origin == Origin(BrokerKind.SQS, queue=queues.work)
        failure = dict(letter.failure)
        # moto sets no DeadLetterQueueSourceArn: the source is the dead-letter queue's one
        # source queue.
        assert failure["source_queue"] == queues.work
        assert failure["source_queue_from"] == "dead_letter_source_queues"
        assert failure["max_receive_count"] == 1
        assert failure["dead_letter_queue"] == queues.dead_letter
        assert failure["receive_count"] == 2
        assert datetime.fromisoformat(failure["sent_at"]).tzinfo is not None
        assert failure["attributes"]["ApproximateReceiveCount"] == "2"
        json.dumps(failure)

        await source.acknowledge(letter)
        assert await depth(harness.client, queues.dead_letter) == 0
    finally:
        await source.close()


async def test_batches_hold_at_most_their_size_and_take_more_than_ten(
    harness: SqsHarness,
) -> None:
    config = await harness.declare("many")
    sent = [await harness.fail_to_dead_letter("many", f"m{n}".encode(), {}) for n in range(13)]

    source = await open_source(config)
    try:
        seen: list[str] = []
        async with aclosing(source.batches(12)) as batches:
            while len(seen) < len(sent):
                batch = await asyncio.wait_for(anext(batches), WITHIN)
                assert 1 <= len(batch) <= 12
                for letter in batch:
                    seen.append(letter.message_id)
                    await source.acknowledge(letter)
        assert sorted(seen) == sorted(sent)
        assert await depth(harness.client, harness.queues["many"].dead_letter) == 0
    finally:
        await source.close()


async def test_a_batch_in_progress_stays_hidden_past_its_visibility_timeout(
    harness: SqsHarness,
) -> None:
    config = await harness.declare("slow")
    dead_letter = harness.queues["slow"].dead_letter
    await harness.fail_to_dead_letter("slow", b"slow", {})
    # Two seconds of visibility, extended every third of it while the batch is held.
    source = await open_source(
        source_config("slow", config.url, dead_letter, config.parking, visibility_timeout=2)
    )
    try:
        async with aclosing(source.batches(10)) as batches:
            [letter] = await asyncio.wait_for(anext(batches), WITHIN)

            # Three extensions: more than the two seconds the message was first hidden for.
            async def extended() -> bool:
                return source.extensions >= 3

            await wait_until(extended, within=WITHIN, what="three extensions")
            other = await harness.client.receive_message(
                QueueUrl=dead_letter, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            assert other.get("Messages", []) == []
            await source.acknowledge(letter)
        assert await depth(harness.client, dead_letter) == 0
    finally:
        await source.close()


async def test_what_the_intake_did_not_settle_comes_back_with_the_same_id(
    harness: SqsHarness,
) -> None:
    config = await harness.declare("crash")
    message_id = await harness.fail_to_dead_letter("crash", b"again", {})
    # Hidden for ten minutes once received: it can only come back at once because closing
    # the source hands it back.
    options = {"visibility_timeout": 600}
    first = await open_source(
        source_config("crash", config.url, config.dead_letter, config.parking, **options)
    )
    try:
        [letter] = await first_batch(first)
        assert letter.message_id == message_id
    finally:
        await first.close()

    second = await open_source(
        source_config("crash", config.url, config.dead_letter, config.parking, **options)
    )
    try:
        [again] = await first_batch(second)
        assert again.message_id == message_id
        assert again.failure["receive_count"] == letter.failure["receive_count"] + 1
        await second.acknowledge(again)
    finally:
        await second.close()


async def test_asking_for_the_next_batch_lets_go_of_what_was_not_settled(
    harness: SqsHarness,
) -> None:
    config = await harness.declare("unsettled")
    message_id = await harness.fail_to_dead_letter("unsettled", b"retry me", {})
    source = await open_source(
        source_config(
            "unsettled", config.url, config.dead_letter, config.parking, visibility_timeout=2
        )
    )
    try:
        async with aclosing(source.batches(10)) as batches:
            [letter] = await asyncio.wait_for(anext(batches), WITHIN)
            # Neither acknowledged nor parked: no longer kept hidden, it comes back once its
            # two seconds are over, to this source's next batch.
            [again] = await asyncio.wait_for(anext(batches), WITHIN)
            assert again.message_id == message_id
            assert again.failure["receive_count"] == letter.failure["receive_count"] + 1
            await source.acknowledge(again)
        assert await depth(harness.client, harness.queues["unsettled"].dead_letter) == 0
    finally:
        await source.close()


async def test_a_parked_message_keeps_its_body_attributes_and_id_with_the_reason(
    harness: SqsHarness,
) -> None:
    config = await harness.declare("parked")
    message_id = await harness.fail_to_dead_letter("parked", b"not json", {"tenant": "t1"})

    source = await open_source(config)
    try:
        [letter] = await first_batch(source)
        await source.park(letter, "body is not JSON")
    finally:
        await source.close()

    [parked] = await harness.take_parked("parked", 1)
    assert parked.message_id == message_id
    assert parked.body == b"not json"
    assert parked.headers == {
        PARK_REASON_ATTRIBUTE: "body is not JSON",
        ORIGINAL_ID_ATTRIBUTE: message_id,
        "tenant": "t1",
    }
    assert await depth(harness.client, harness.queues["parked"].dead_letter) == 0


async def test_parking_a_message_with_ten_attributes_folds_what_does_not_fit(
    harness: SqsHarness,
) -> None:
    config = await harness.declare("full")
    headers = {f"h{n}": f"v{n}" for n in range(10)}
    await harness.fail_to_dead_letter("full", b"{}", headers)

    source = await open_source(config)
    try:
        [letter] = await first_batch(source)
        assert letter.headers == headers
        await source.park(letter, "no record id")
    finally:
        await source.close()

    [parked] = await harness.take_parked("full", 1)
    assert len(parked.headers) == 10
    assert parked.headers[PARK_REASON_ATTRIBUTE] == "no record id"
    folded = json.loads(parked.headers[FOLDED_ATTRIBUTE])
    kept = {
        k: v
        for k, v in parked.headers.items()
        if k not in (PARK_REASON_ATTRIBUTE, ORIGINAL_ID_ATTRIBUTE, FOLDED_ATTRIBUTE)
    }
    assert kept | folded == headers
    assert len(kept) == 7


async def test_the_source_queue_comes_from_the_config_or_the_one_source_queue(
    harness: SqsHarness,
) -> None:
    client = harness.client
    config = await harness.declare("named")
    queues = harness.queues["named"]
    await harness.fail_to_dead_letter("named", b"x", {})
    # A second queue sends its failures to the same dead-letter queue: which of the two a
    # message failed on, moto cannot tell (Amazon's SQS sets DeadLetterQueueSourceArn).
    policy = {"deadLetterTargetArn": await queue_arn(client, queues.dead_letter)}
    second = (
        await client.create_queue(
            QueueName=f"{queues.work.rsplit('/')[-1]}-second",
            Attributes={"RedrivePolicy": json.dumps(policy | {"maxReceiveCount": 3})},
        )
    )["QueueUrl"]
    sources = await client.list_dead_letter_source_queues(QueueUrl=queues.dead_letter)
    assert sorted(sources["queueUrls"]) == sorted([queues.work, second])

    source = await open_source(config)
    try:
        [letter] = await first_batch(source)
        assert letter.origin == Origin(BrokerKind.SQS)
        assert letter.failure["source_queue"] is None
        assert letter.failure["source_queue_from"] is None
    finally:
        await source.close()

    # Named in the options (here by its name): the origin of every message.
    named = source_config(
        "named",
        config.url,
        config.dead_letter,
        config.parking,
        source_queue=second.rsplit("/")[-1],
    )
    source = await open_source(named)
    try:
        [letter] = await first_batch(source)
        assert letter.origin == Origin(BrokerKind.SQS, queue=second)
        assert letter.failure["source_queue_from"] == "config"
        assert letter.failure["max_receive_count"] == 3
        await source.acknowledge(letter)
    finally:
        await source.close()


async def test_closing_ends_a_long_poll_at_once(harness: SqsHarness) -> None:
    config = await harness.declare("idle")
    source = await open_source(
        source_config("idle", config.url, config.dead_letter, config.parking, wait_seconds=20)
    )
    batches = source.batches(10)
    waiting = asyncio.ensure_future(anext(batches))

    # The first receive is under way (moto holds it for up to 20 s).
    async def polling() -> bool:
        return source.polls > 0

    await wait_until(polling, within=WITHIN, what="a receive under way")
    await source.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, 5)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"visibility_timeout": 0}, "visibility_timeout must be 1 to 43200 seconds"),
        ({"wait_seconds": 21}, "wait_seconds must be 1 to 20"),
        ({"wait_seconds": "5"}, "wait_seconds must be a whole number of seconds"),
        ({"acces_key_id": "x"}, "unknown SQS options acces_key_id"),
    ],
)
async def test_bad_options_are_refused_with_what_is_wrong(
    options: dict[str, object], problem: str
) -> None:
    with pytest.raises(SqsConfigError, match=problem):
        await open_source(source_config("bad", "http://127.0.0.1:1", "d", "p", **options))


async def test_a_dead_letter_queue_that_does_not_exist_is_refused(harness: SqsHarness) -> None:
    config = await harness.declare("real")
    with pytest.raises(SqsConfigError, match=r"source missing: .*NonExistentQueue"):
        await open_source(source_config("missing", config.url, "no-such-queue", config.parking))


def test_the_docs_describe_every_option() -> None:
    doc = (REPO_ROOT / "docs" / "integrations.md").read_text()
    section = doc.split("<!-- section: intake-sqs -->")[1].split("<!-- /section: intake-sqs -->")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    described = {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}
    assert described == set(OPTIONS)
    assert "moto" in section
