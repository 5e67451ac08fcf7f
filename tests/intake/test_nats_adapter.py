"""The NATS JetStream adapter against a real server: a consumer with max_deliver=2 naks a
message twice, the server publishes the max-deliveries advisory, and the adapter yields the
original message with the advisory as its failure; acknowledge, park and redrive behave."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import AsyncIterator

import nats.js.errors
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from server.config import REPO_ROOT
from server.intake.nats import (
    OPTIONS,
    PARK_REASON_HEADER,
    NatsConfigError,
    NatsDeadLetterSource,
    NatsSourceOptions,
    max_deliveries_subject,
    open_publisher,
    open_source,
)
from server.intake.sources import BrokerKind, DeadLetter, Origin, SourceConfig
from tests.intake.nats_support import (
    WITHIN,
    NatsHarness,
    nats_harness,
    nats_url,
    own_nats_server,
)

__all__ = ["nats_harness", "nats_url"]  # fixtures


async def next_batch(batches: AsyncIterator[list[DeadLetter]]) -> list[DeadLetter]:
    async with asyncio.timeout(WITHIN):
        return await anext(batches)


async def letters(source: NatsDeadLetterSource, count: int, size: int = 10) -> list[DeadLetter]:
    """Exactly `count` letters from `source`'s batches (fails after WITHIN seconds)."""
    taken: list[DeadLetter] = []
    batches = source.batches(size)
    try:
        while len(taken) < count:
            taken += await next_batch(batches)
    finally:
        await batches.aclose()  # type: ignore[attr-defined]
    assert len(taken) == count, [letter.message_id for letter in taken]
    return taken


async def original_exists(harness: NatsHarness, name: str, sequence: int) -> bool:
    try:
        await harness.js.get_msg(harness.stream_of(name), sequence)
    except nats.js.errors.NotFoundError:
        return False
    return True


async def intake_backlog(harness: NatsHarness, config: SourceConfig) -> tuple[int, int]:
    """(advisories not yet delivered, delivered and not acknowledged) of the intake consumer."""
    options = NatsSourceOptions.of(config)
    info = await harness.js.consumer_info(options.advisory_stream, options.intake_consumer)
    return info.num_pending, info.num_ack_pending


async def test_a_max_delivered_message_becomes_a_dead_letter(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("orders")
    body = json.dumps({"order": "o-1", "amount": 12}).encode()
    message_id = await nats_harness.fail_to_dead_letter("orders", body, {"Record-Id": "o-1"})
    stream = nats_harness.stream_of("orders")
    sequence = int(message_id.rsplit(":", 1)[1])
    assert message_id == f"{stream}:{sequence}"

    source = await open_source(config)
    try:
        [letter] = await letters(source, 1)
    finally:
        await source.close()

    assert letter.message_id == message_id
    assert letter.body == body
    assert letter.headers == {"Record-Id": "o-1"}
    assert letter.origin == Origin(
        BrokerKind.NATS, subject=nats_harness.work_subject("orders"), stream=stream
    )
    assert letter.failure["type"] == "io.nats.jetstream.advisory.v1.max_deliver"
    assert letter.failure["stream"] == stream
    assert letter.failure["consumer"] == "worker"
    assert letter.failure["stream_seq"] == sequence
    assert letter.failure["deliveries"] == 2
    # Taken but not acknowledged: the original stays, the advisory waits for the intake.
    assert await original_exists(nats_harness, "orders", sequence)
    assert await intake_backlog(nats_harness, config) == (0, 1)


async def test_the_message_id_is_the_originals_nats_msg_id(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("ids")
    message_id = await nats_harness.fail_to_dead_letter("ids", b"{}", {"Nats-Msg-Id": "m-77"})
    assert message_id == "m-77"
    source = await open_source(config)
    try:
        [letter] = await letters(source, 1)
    finally:
        await source.close()
    assert letter.message_id == "m-77"
    assert letter.headers["Nats-Msg-Id"] == "m-77"


async def test_acknowledging_removes_the_letter_and_the_original(
    nats_harness: NatsHarness,
) -> None:
    config = await nats_harness.declare("acked")
    first = await nats_harness.fail_to_dead_letter("acked", b'{"n": 1}', {})
    source = await open_source(config)
    try:
        [letter] = await letters(source, 1)
        await source.acknowledge(letter)
        sequence = int(first.rsplit(":", 1)[1])
        assert not await original_exists(nats_harness, "acked", sequence)
        assert await intake_backlog(nats_harness, config) == (0, 0)

        # The next batch holds the next letter only: the acknowledged one never returns.
        second = await nats_harness.fail_to_dead_letter("acked", b'{"n": 2}', {})
        [after] = await letters(source, 1)
        assert after.message_id == second
    finally:
        await source.close()


async def test_keeping_the_original_when_configured(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("kept", delete_original=False)
    message_id = await nats_harness.fail_to_dead_letter("kept", b"{}", {})
    source = await open_source(config)
    try:
        [letter] = await letters(source, 1)
        await source.acknowledge(letter)
    finally:
        await source.close()
    assert await original_exists(nats_harness, "kept", int(message_id.rsplit(":", 1)[1]))
    assert await intake_backlog(nats_harness, config) == (0, 0)


async def test_an_unacknowledged_letter_comes_back_after_a_crash(
    nats_harness: NatsHarness,
) -> None:
    # The intake died after taking the letter, before acknowledging it: once the advisory's
    # ack wait passes, the next intake is handed the same letter.
    config = await nats_harness.declare("crash", ack_wait_seconds=1)
    message_id = await nats_harness.fail_to_dead_letter("crash", b"{}", {})
    crashed = await open_source(config)
    [taken] = await letters(crashed, 1)
    await crashed.close()

    restarted = await open_source(config)
    try:
        [again] = await letters(restarted, 1)
        assert again.message_id == taken.message_id == message_id
        assert again.failure == taken.failure
        await restarted.acknowledge(again)
    finally:
        await restarted.close()
    assert await intake_backlog(nats_harness, config) == (0, 0)


async def test_a_batch_held_beyond_the_ack_wait_stays_with_its_intake(
    nats_harness: NatsHarness,
) -> None:
    # The ack wait is 1 s; the intake works on its batch for over three times that. Its
    # source tells the server the advisory is in progress, so another intake gets nothing.
    config = await nats_harness.declare("held", ack_wait_seconds=1)
    await nats_harness.fail_to_dead_letter("held", b"{}", {})
    working, other = await open_source(config), await open_source(config)
    try:
        working_batches = working.batches(10)
        [letter] = await next_batch(working_batches)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(3.5):
                await anext(other.batches(10))
        assert await intake_backlog(nats_harness, config) == (0, 1)
        await working.acknowledge(letter)
        assert await intake_backlog(nats_harness, config) == (0, 0)
    finally:
        await working.close()
        await other.close()


async def test_what_a_batch_left_unsettled_is_let_go(nats_harness: NatsHarness) -> None:
    # The intake asked for its next batch without settling a letter of the last one: the
    # source stops holding it, and after the ack wait the server offers it again.
    config = await nats_harness.declare("let-go", ack_wait_seconds=1)
    message_id = await nats_harness.fail_to_dead_letter("let-go", b"{}", {})
    source = await open_source(config)
    try:
        batches = source.batches(10)
        [unsettled] = await next_batch(batches)
        [again] = await next_batch(batches)
        assert again.message_id == unsettled.message_id == message_id
        await source.acknowledge(again)
    finally:
        await source.close()
    assert await intake_backlog(nats_harness, config) == (0, 0)


async def test_advisories_wait_while_the_intake_is_down(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("down")
    source = await open_source(config)
    await source.close()
    # Failed while no intake runs: the capture stream keeps the advisories.
    failed = [
        await nats_harness.fail_to_dead_letter("down", f'{{"n": {n}}}'.encode(), {})
        for n in range(3)
    ]
    source = await open_source(config)
    try:
        taken = await letters(source, 3)
        assert await nats_harness.dead_letters_waiting("down") == 3
        for letter in taken:
            await source.acknowledge(letter)
    finally:
        await source.close()
    assert [letter.message_id for letter in taken] == failed
    assert await nats_harness.dead_letters_waiting("down") == 0
    assert await intake_backlog(nats_harness, config) == (0, 0)


async def test_two_intakes_share_the_letters_without_overlap(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("shared")
    failed = {
        await nats_harness.fail_to_dead_letter("shared", f'{{"n": {n}}}'.encode(), {})
        for n in range(6)
    }
    sources = [await open_source(config), await open_source(config)]
    taken: list[DeadLetter] = []
    all_taken = asyncio.Event()

    async def drain(source: NatsDeadLetterSource) -> None:
        async for batch in source.batches(2):
            taken.extend(batch)
            if len(taken) >= len(failed):
                all_taken.set()

    drains = [asyncio.create_task(drain(source)) for source in sources]
    try:
        async with asyncio.timeout(WITHIN):
            await all_taken.wait()
    finally:
        for source in sources:
            await source.close()
        await asyncio.gather(*drains)
    ids = [letter.message_id for letter in taken]
    assert sorted(ids) == sorted(failed)


async def test_parking_moves_the_message_with_its_reason(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("parked")
    message_id = await nats_harness.fail_to_dead_letter(
        "parked", b"not json", {"Record-Id": "r-9", "Nats-Msg-Id": "p-1"}
    )
    source = await open_source(config)
    try:
        [letter] = await letters(source, 1)
        await source.park(letter, "the body is not JSON\nline two")
    finally:
        await source.close()
    [parked] = await nats_harness.take_parked("parked", 1)
    assert parked.body == b"not json"
    assert parked.message_id == message_id == "p-1"
    assert parked.headers[PARK_REASON_HEADER] == "the body is not JSON line two"
    assert parked.headers["Record-Id"] == "r-9"
    assert parked.headers["Casework-Origin-Stream"] == nats_harness.stream_of("parked")
    assert parked.headers["Casework-Origin-Subject"] == nats_harness.work_subject("parked")
    assert await intake_backlog(nats_harness, config) == (0, 0)
    sequence = int(parked.headers["Casework-Origin-Sequence"])
    assert not await original_exists(nats_harness, "parked", sequence)


async def test_an_advisory_whose_original_is_gone_is_parked(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("gone")
    lost = await nats_harness.fail_to_dead_letter("gone", b"{}", {})
    sequence = int(lost.rsplit(":", 1)[1])
    await nats_harness.js.delete_msg(nats_harness.stream_of("gone"), sequence)
    kept = await nats_harness.fail_to_dead_letter("gone", b'{"kept": true}', {})
    source = await open_source(config)
    try:
        [letter] = await letters(source, 1)
    finally:
        await source.close()
    assert letter.message_id == kept
    [parked] = await nats_harness.take_parked("gone", 1)
    assert parked.headers[PARK_REASON_HEADER] == (
        f"the original message {lost} is no longer in its stream"
    )
    assert json.loads(parked.body)["stream_seq"] == sequence
    assert parked.message_id.startswith(f"{NatsSourceOptions.of(config).advisory_stream}:")


async def test_a_redrive_published_twice_is_one_message(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("redrive")
    await nats_harness.fail_to_dead_letter("redrive", b'{"v": 1}', {})
    source = await open_source(config)
    try:
        [letter] = await letters(source, 1)
        await source.acknowledge(letter)
    finally:
        await source.close()

    publisher = await open_publisher(config)
    try:
        for _ in range(2):
            await publisher.publish(
                letter.origin,
                b'{"v": 2}',
                message_id="redrive-1",
                headers={"Casework-Redrive-Key": "redrive-1", "Nats-Expected-Last-Sequence": "1"},
            )
        await publisher.publish(letter.origin, b'{"v": 3}', message_id="redrive-2", headers={})
    finally:
        await publisher.close()

    received = await nats_harness.take_from_work_queue("redrive", 2)
    assert [(r.message_id, r.body) for r in received] == [
        ("redrive-1", b'{"v": 2}'),
        ("redrive-2", b'{"v": 3}'),
    ]
    assert received[0].headers["Casework-Redrive-Key"] == "redrive-1"
    assert "Nats-Expected-Last-Sequence" not in received[0].headers
    assert await nats_harness.pending_on_work_queue("redrive") == 0


async def test_a_redrive_to_an_origin_no_stream_holds_fails(nats_harness: NatsHarness) -> None:
    config = await nats_harness.declare("nowhere")
    publisher = await open_publisher(config)
    try:
        with pytest.raises(nats.js.errors.Error):
            await publisher.publish(
                Origin(BrokerKind.NATS, subject="cw.nobody.listens", stream="NOSUCH"),
                b"{}",
                message_id="k",
                headers={},
            )
        with pytest.raises(nats.js.errors.BadRequestError, match="expected stream"):
            await publisher.publish(
                Origin(BrokerKind.NATS, subject=nats_harness.work_subject("nowhere"), stream="X"),
                b"{}",
                message_id="k",
                headers={},
            )
        assert await nats_harness.pending_on_work_queue("nowhere") == 0
        with pytest.raises(ValueError, match="not a NATS origin"):
            await publisher.publish(
                Origin(BrokerKind.SQS, queue="q"), b"{}", message_id="k", headers={}
            )
    finally:
        await publisher.close()


async def test_one_consumer_feeds_one_source(nats_harness: NatsHarness) -> None:
    # Two sources on one consumer would each raise an exception for the same message: the
    # capture stream's work-queue retention makes the server refuse the second.
    config = await nats_harness.declare("single")
    source = await open_source(config)
    try:
        with pytest.raises(nats.js.errors.BadRequestError, match="not unique"):
            await open_source(dataclasses.replace(config, name="another"))
    finally:
        await source.close()


def nats_config(named: str = "s", **options: object) -> SourceConfig:
    return SourceConfig(
        named, BrokerKind.NATS, "nats://127.0.0.1:1", "ORDERS", "orders.parked", options
    )


def test_a_source_names_its_consumer_and_defaults_the_rest() -> None:
    with pytest.raises(NatsConfigError, match=r"needs options\.consumer"):
        NatsSourceOptions.of(nats_config())
    options = NatsSourceOptions.of(nats_config("my source", consumer="billing"))
    assert options.advisory_subject == max_deliveries_subject("ORDERS", "billing")
    assert options.advisory_subject == "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.billing"
    assert options == NatsSourceOptions(
        stream="ORDERS",
        consumer="billing",
        advisory_stream="CASEWORK_MAXDELIVER_ORDERS",
        intake_consumer="casework-intake-my_source",
        ack_wait_seconds=300,
        delete_original=True,
        poll_seconds=1,
        credentials=None,
    )


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"consumer": "c", "consumer_name": "x"}, "unknown NATS options consumer_name"),
        ({"consumer": "a.b"}, "consumer must be a JetStream name"),
        ({"consumer": "c", "advisory_stream": "ADV*"}, "advisory_stream must be a JetStream"),
        ({"consumer": "c", "intake_consumer": ""}, "intake_consumer must be a JetStream"),
        ({"consumer": "c", "ack_wait_seconds": 0}, "ack_wait_seconds and poll_seconds"),
        ({"consumer": "c", "poll_seconds": "1"}, "ack_wait_seconds and poll_seconds"),
        ({"consumer": "c", "ack_wait_seconds": True}, "ack_wait_seconds and poll_seconds"),
        ({"consumer": "c", "delete_original": "no"}, "delete_original must be true or false"),
        ({"consumer": "c", "credentials": 1}, "credentials must be the path"),
    ],
)
def test_bad_options_are_refused_with_what_is_wrong(
    options: dict[str, object], problem: str
) -> None:
    with pytest.raises(NatsConfigError, match=f"^source s: {problem}"):
        NatsSourceOptions.of(nats_config("s", **options))


def test_the_stream_and_the_parking_subject_are_checked() -> None:
    bad_stream = dataclasses.replace(nats_config(consumer="c"), dead_letter="ORDERS.v1")
    with pytest.raises(NatsConfigError, match="dead_letter must be a JetStream name"):
        NatsSourceOptions.of(bad_stream)
    for parking in ("parked.>", "parked.*.x", "", "a..b"):
        with pytest.raises(NatsConfigError, match="parking must be a subject"):
            NatsSourceOptions.of(dataclasses.replace(nats_config(consumer="c"), parking=parking))


async def test_a_source_is_refused_when_its_letters_could_not_arrive_or_be_parked(
    nats_harness: NatsHarness,
) -> None:
    config = await nats_harness.declare("checked")
    stream = nats_harness.stream_of("checked")
    missing = dataclasses.replace(config, options={**config.options, "consumer": "nobody"})
    with pytest.raises(NatsConfigError, match=f"stream {stream} has no consumer nobody"):
        await open_source(missing)

    await nats_harness.js.add_consumer(
        stream, ConsumerConfig(durable_name="forever", ack_policy=AckPolicy.EXPLICIT)
    )
    forever = dataclasses.replace(config, options={**config.options, "consumer": "forever"})
    with pytest.raises(NatsConfigError, match="sets no max_deliver"):
        await open_source(forever)

    unkept = dataclasses.replace(config, parking="cw.nobody.keeps.this")
    with pytest.raises(NatsConfigError, match="no stream keeps the parking subject"):
        await open_source(unkept)


async def test_a_stream_that_does_not_keep_the_advisories_is_refused(
    nats_harness: NatsHarness,
) -> None:
    config = await nats_harness.declare("kept-elsewhere")
    default = NatsSourceOptions.of(config).advisory_stream
    # A stream of the name given that keeps something else.
    elsewhere = f"{default}_OTHER"
    await nats_harness.js.add_stream(StreamConfig(name=elsewhere, subjects=[f"{elsewhere}.x"]))
    try:
        named = dataclasses.replace(
            config, options={**config.options, "advisory_stream": elsewhere}
        )
        with pytest.raises(
            NatsConfigError,
            match=rf"stream {elsewhere} does not keep .* \(stream {default} does: name it",
        ):
            await open_source(named)
    finally:
        await nats_harness.js.delete_stream(elsewhere)


def test_the_docs_describe_every_option() -> None:
    doc = (REPO_ROOT / "docs" / "integrations.md").read_text()
    section = doc.partition("<!-- section: intake-nats -->")[2]
    section = section.partition("<!-- /section: intake-nats -->")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    described = {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}
    assert described == set(OPTIONS)
    assert "nats-server -js" in section


async def test_a_server_started_here_carries_the_whole_round_trip() -> None:
    # Where the machine runs no NATS, the fixture starts `nats-server -js`: the same path,
    # taken on purpose, on a server of this test's own.
    async with own_nats_server() as url:
        harness = await NatsHarness.connect(url)
        try:
            config = await harness.declare("own")
            message_id = await harness.fail_to_dead_letter(
                "own", b'{"x": 1}', {"Nats-Msg-Id": "own-1"}
            )
            source = await open_source(config)
            try:
                [letter] = await letters(source, 1)
                await source.acknowledge(letter)
            finally:
                await source.close()
            assert letter.message_id == message_id == "own-1"
            publisher = await open_publisher(config)
            try:
                await publisher.publish(letter.origin, b'{"x": 2}', message_id="k-1", headers={})
            finally:
                await publisher.close()
            [redriven] = await harness.take_from_work_queue("own", 1)
            assert (redriven.message_id, redriven.body) == ("k-1", b'{"x": 2}')
        finally:
            await harness.close()
