"""NATS JetStream: dead letters from the max-deliveries advisory, redrives by publishing back.

JetStream has no dead-letter queue. When a consumer has delivered a message `max_deliver`
times without an acknowledgement, the server publishes an advisory on
`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>` naming the stream sequence
of the message, and leaves the message in its stream. An advisory is a plain NATS message:
nobody listening, it is gone. So the intake keeps them in a stream of their own (the
capture stream, created here when absent, with work-queue retention), and reads that
stream with a durable pull consumer: advisories published while the intake is down wait
there, and each is removed once the intake acknowledges it.

For each advisory the adapter fetches the original by its stream sequence and yields a
DeadLetter: the message id is the original's `Nats-Msg-Id` header, else
`<stream>:<sequence>`; the failure is the advisory's JSON; the origin is the original's
subject and stream. Acknowledging acknowledges the advisory, then deletes the original from
its stream (unless the source's options say to keep it). Parking publishes the original to
the parking subject (which a stream must capture) with a `Casework-Park-Reason` header,
then acknowledges.

The source's options are described by NatsSourceOptions; at start the adapter checks that
the stream, its consumer (with a max_deliver) and a stream for the parking subject exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, RetentionPolicy, StreamConfig

from server.intake.sources import BrokerKind, DeadLetter, Origin, SourceConfig

log = logging.getLogger(__name__)

MSG_ID_HEADER = "Nats-Msg-Id"
PARK_REASON_HEADER = "Casework-Park-Reason"
ORIGIN_STREAM_HEADER = "Casework-Origin-Stream"
ORIGIN_SEQUENCE_HEADER = "Casework-Origin-Sequence"
ORIGIN_SUBJECT_HEADER = "Casework-Origin-Subject"

# Headers the server reads on a publish (Nats-Expected-Stream, Nats-Rollup, ...): a copy of
# the original's headers keeps none of them, so a park or a redrive is never refused or
# rolled up because of what the original carried.
_SERVER_HEADER_PREFIX = "Nats-"
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}")
_SUBJECT = re.compile(r"[^\s*>.]+(\.[^\s*>.]+)*")


def max_deliveries_subject(stream: str, consumer: str) -> str:
    return f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{stream}.{consumer}"


# The keys of a source's `options` table (NatsSourceOptions says what each means).
OPTIONS = (
    "consumer",
    "advisory_stream",
    "intake_consumer",
    "ack_wait_seconds",
    "delete_original",
    "poll_seconds",
    "credentials",
)
DEFAULT_ACK_WAIT_SECONDS = 300
DEFAULT_POLL_SECONDS = 1


class NatsConfigError(ValueError):
    """The source's NATS settings cannot be used (a bad value, a stream or consumer that does
    not exist, a parking subject no stream keeps)."""


@dataclass(frozen=True)
class NatsSourceOptions:
    """A source's `dead_letter` (the stream) and `options` table, for NATS JetStream.

    consumer (required): the consumer of that stream whose max deliveries make a dead letter;
    advisory_stream: the stream keeping the consumer's max-deliveries advisories (default
        `CASEWORK_MAXDELIVER_<stream>`, created at start when absent; an existing one is used
        as it is);
    intake_consumer: the durable consumer the intake reads it with (default
        `casework-intake-<source name>`);
    ack_wait_seconds: how long an advisory an intake took, then died holding (or let go),
        waits before the server offers it again (default 300); set when the intake consumer
        is created; while a batch is worked on, its advisories are kept in progress;
    delete_original: false leaves the original in its stream once taken (default true);
    poll_seconds: how long one wait for advisories lasts before the source checks whether it
        was closed (default 1);
    credentials: a NATS credentials file (user JWT and seed); a user and password go in
        the url."""

    stream: str
    consumer: str
    advisory_stream: str
    intake_consumer: str
    ack_wait_seconds: float = DEFAULT_ACK_WAIT_SECONDS
    delete_original: bool = True
    poll_seconds: float = DEFAULT_POLL_SECONDS
    credentials: str | None = None

    @property
    def advisory_subject(self) -> str:
        return max_deliveries_subject(self.stream, self.consumer)

    @classmethod
    def of(cls, config: SourceConfig) -> NatsSourceOptions:
        options = dict(config.options)

        def refuse(problem: str) -> NatsConfigError:
            return NatsConfigError(f"source {config.name}: {problem}")

        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise refuse(f"unknown NATS options {', '.join(unknown)}")
        stream = config.dead_letter
        consumer = options.get("consumer")
        if not isinstance(consumer, str) or not consumer:
            raise refuse(
                "a NATS source needs options.consumer, the consumer whose max deliveries make"
                " a dead letter"
            )
        advisory_stream = options.get("advisory_stream", f"CASEWORK_MAXDELIVER_{stream}")
        intake_consumer = options.get(
            "intake_consumer", f"casework-intake-{_NAME_UNSAFE.sub('_', config.name)}"
        )
        for key, name in (
            ("dead_letter", stream),
            ("consumer", consumer),
            ("advisory_stream", advisory_stream),
            ("intake_consumer", intake_consumer),
        ):
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise refuse(
                    f"{key} must be a JetStream name (letters, digits, - and _), not {name!r}"
                )
        if not _SUBJECT.fullmatch(config.parking):
            raise refuse(f"parking must be a subject without wildcards, not {config.parking!r}")
        ack_wait = _seconds(options, "ack_wait_seconds", DEFAULT_ACK_WAIT_SECONDS)
        poll = _seconds(options, "poll_seconds", DEFAULT_POLL_SECONDS)
        if ack_wait is None or poll is None:
            raise refuse("ack_wait_seconds and poll_seconds must be numbers of seconds above 0")
        delete_original = options.get("delete_original", True)
        if not isinstance(delete_original, bool):
            raise refuse("delete_original must be true or false")
        credentials = options.get("credentials")
        if credentials is not None and not isinstance(credentials, str):
            raise refuse("credentials must be the path of a credentials file")
        return cls(
            stream=stream,
            consumer=consumer,
            advisory_stream=advisory_stream,
            intake_consumer=intake_consumer,
            ack_wait_seconds=ack_wait,
            delete_original=delete_original,
            poll_seconds=poll,
            credentials=credentials,
        )


def _seconds(options: Mapping[str, Any], key: str, default: float) -> float | None:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def _header_value(text: str) -> str:
    """One header line: NATS headers end at a line break."""
    return " ".join(text.splitlines())


async def connect(config: SourceConfig, options: NatsSourceOptions) -> Client:
    return await nats.connect(
        config.url,
        name=f"casework-intake {config.name}",
        user_credentials=options.credentials,
    )


async def check_source(
    js: JetStreamContext, config: SourceConfig, options: NatsSourceOptions
) -> None:
    """Refuses, saying why, a source whose letters could never arrive or never be parked."""

    def refuse(problem: str) -> NatsConfigError:
        return NatsConfigError(f"source {config.name}: {problem}")

    try:
        consumer = await js.consumer_info(options.stream, options.consumer)
    except nats.js.errors.NotFoundError:
        raise refuse(
            f"stream {options.stream} has no consumer {options.consumer}"
            " (or there is no such stream)"
        ) from None
    if not consumer.config.max_deliver or consumer.config.max_deliver < 1:
        raise refuse(
            f"consumer {options.consumer} of stream {options.stream} sets no max_deliver:"
            " it redelivers a failing message for ever and never gives one up"
        )
    try:
        await js.find_stream_name_by_subject(config.parking)
    except nats.js.errors.NotFoundError:
        raise refuse(
            f"no stream keeps the parking subject {config.parking}: parked messages would be lost"
        ) from None


async def ensure_advisory_stream(
    js: JetStreamContext, options: NatsSourceOptions, source_name: str
) -> None:
    """Creates the stream that keeps the consumer's max-deliveries advisories, unless a
    stream of that name exists; then checks that this stream is the one keeping them.
    Advisories published before it exists are not kept."""
    try:
        await js.stream_info(options.advisory_stream)
    except nats.js.errors.NotFoundError:
        # Refused when another intake created it meanwhile, or when another stream holds
        # these subjects: the check below tells the two apart.
        with contextlib.suppress(nats.js.errors.BadRequestError):
            await js.add_stream(
                StreamConfig(
                    name=options.advisory_stream,
                    description=f"max-deliveries advisories of {options.stream}, for casework",
                    subjects=[max_deliveries_subject(options.stream, "*")],
                    # An advisory stays until the intake acknowledges it, and no longer.
                    retention=RetentionPolicy.WORK_QUEUE,
                )
            )
    try:
        keeper: str | None = await js.find_stream_name_by_subject(options.advisory_subject)
    except nats.js.errors.NotFoundError:
        keeper = None
    if keeper != options.advisory_stream:
        raise NatsConfigError(
            f"source {source_name}: stream {options.advisory_stream} does not keep"
            f" {options.advisory_subject}"
            + (f" (stream {keeper} does: name it in advisory_stream)" if keeper else "")
        )


@dataclass(frozen=True)
class _Handle:
    advisory: Msg
    # The advisory's sequence in the capture stream.
    position: int
    stream: str
    sequence: int


class NatsDeadLetterSource:
    """One JetStream consumer's dead letters (see the module's description)."""

    def __init__(self, config: SourceConfig, nc: Client, options: NatsSourceOptions) -> None:
        self._config = config
        self._nc = nc
        self._js = nc.jetstream()
        self._options = options
        self._subscription: JetStreamContext.PullSubscription | None = None
        self._closed = False
        # Advisories handed out in the current batch and not yet settled, by their sequence
        # in the capture stream: kept from the server's redelivery while the intake works.
        self._held: dict[int, Msg] = {}
        self._keeper: asyncio.Task[None] | None = None
        self._ack_wait = options.ack_wait_seconds

    async def _open(self) -> None:
        options = self._options
        await ensure_advisory_stream(self._js, options, self._config.name)
        self._subscription = await self._js.pull_subscribe(
            options.advisory_subject,
            durable=options.intake_consumer,
            stream=options.advisory_stream,
            config=ConsumerConfig(
                durable_name=options.intake_consumer,
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=options.ack_wait_seconds,
                max_deliver=-1,
                filter_subject=options.advisory_subject,
            ),
        )
        # The consumer's own ack wait: it may have been created with another value.
        info = await self._subscription.consumer_info()
        self._ack_wait = float(info.config.ack_wait or self._ack_wait)

    async def batches(self, size: int) -> AsyncIterator[list[DeadLetter]]:
        assert self._subscription is not None
        if self._keeper is None:
            self._keeper = asyncio.create_task(self._keep_held())
        while not self._closed:
            try:
                advisories = await self._subscription.fetch(
                    size, timeout=self._options.poll_seconds
                )
            except TimeoutError:  # nats.errors.TimeoutError, or asyncio's when a fetch expires
                continue
            except (nats.errors.ConnectionClosedError, nats.errors.BadSubscriptionError):
                if self._closed:
                    return
                raise
            letters = [
                letter for msg in advisories if (letter := await self._letter_of(msg)) is not None
            ]
            if letters:
                self._held.update(
                    (letter.handle.position, letter.handle.advisory) for letter in letters
                )
                yield letters
                # Asked for the next batch: what the intake left unsettled of this one is let
                # go, and the server offers it again once its ack wait has passed.
                for letter in letters:
                    self._held.pop(letter.handle.position, None)

    async def _keep_held(self) -> None:
        """Tells the server, every third of the ack wait, that the held advisories are still
        being worked on, so a batch that takes longer than the ack wait is not handed to
        another intake meanwhile."""
        while not self._closed:
            await asyncio.sleep(self._ack_wait / 3)
            for advisory in list(self._held.values()):
                with contextlib.suppress(nats.errors.Error):
                    await advisory.in_progress()

    async def _letter_of(self, advisory: Msg) -> DeadLetter | None:
        """The dead letter an advisory names; None when there is none to hand over (the
        advisory is then parked here, with its reason, and acknowledged)."""
        stream = self._options.stream
        try:
            failure = json.loads(advisory.data)
            sequence = int(failure["stream_seq"])
        except (ValueError, TypeError, KeyError):
            await self._park_advisory(advisory, "the max-deliveries advisory is not readable")
            return None
        try:
            original = await self._js.get_msg(stream, sequence)
        except nats.js.errors.NotFoundError:
            await self._park_advisory(
                advisory,
                f"the original message {stream}:{sequence} is no longer in its stream",
            )
            return None
        headers = {str(k): str(v) for k, v in (original.headers or {}).items()}
        return DeadLetter(
            message_id=headers.get(MSG_ID_HEADER) or f"{stream}:{sequence}",
            body=original.data or b"",
            headers=headers,
            failure=failure,
            origin=Origin(BrokerKind.NATS, subject=original.subject, stream=stream),
            handle=_Handle(advisory, advisory.metadata.sequence.stream, stream, sequence),
        )

    async def _park_advisory(self, advisory: Msg, reason: str) -> None:
        log.warning(
            "intake source %s: parked a max-deliveries advisory: %s", self._config.name, reason
        )
        where = f"{self._options.advisory_stream}:{advisory.metadata.sequence.stream}"
        await self._js.publish(
            self._config.parking,
            advisory.data,
            headers={PARK_REASON_HEADER: _header_value(reason), MSG_ID_HEADER: where},
        )
        await advisory.ack_sync()

    async def acknowledge(self, letter: DeadLetter) -> None:
        handle: _Handle = letter.handle
        self._held.pop(handle.position, None)
        # The advisory first: once it is acknowledged nothing brings the letter back, and a
        # failure before the delete below leaves only an original no consumer delivers again.
        await handle.advisory.ack_sync()
        if self._options.delete_original:
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await self._js.delete_msg(handle.stream, handle.sequence)

    async def park(self, letter: DeadLetter, reason: str) -> None:
        handle: _Handle = letter.handle
        headers = {
            k: v for k, v in letter.headers.items() if not k.startswith(_SERVER_HEADER_PREFIX)
        } | {
            PARK_REASON_HEADER: _header_value(reason),
            ORIGIN_STREAM_HEADER: handle.stream,
            ORIGIN_SEQUENCE_HEADER: str(handle.sequence),
            ORIGIN_SUBJECT_HEADER: letter.origin.subject or "",
            # A park repeated after a crash (before the acknowledgement) is one message on
            # a parking stream, which keeps one per id within its window.
            MSG_ID_HEADER: letter.message_id,
        }
        await self._js.publish(self._config.parking, letter.body, headers=headers)
        await self.acknowledge(letter)

    async def close(self) -> None:
        self._closed = True
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        await self._nc.close()


class NatsRedrivePublisher:
    """Publishes a corrected message to its origin subject, with `Nats-Msg-Id` = the redrive
    key: the origin stream keeps one copy of a key within its duplicate window."""

    def __init__(self, config: SourceConfig, nc: Client) -> None:
        self._config = config
        self._nc = nc
        self._js = nc.jetstream()

    async def publish(
        self, origin: Origin, body: bytes, *, message_id: str, headers: Mapping[str, str]
    ) -> None:
        if origin.broker is not BrokerKind.NATS or not origin.subject:
            raise ValueError(f"not a NATS origin with a subject: {origin.as_json()}")
        sent: dict[str, Any] = {
            k: v for k, v in headers.items() if not k.startswith(_SERVER_HEADER_PREFIX)
        } | {MSG_ID_HEADER: message_id}
        ack = await self._js.publish(origin.subject, body, stream=origin.stream, headers=sent)
        if ack.duplicate:
            log.info(
                "intake source %s: redrive %s was already in stream %s",
                self._config.name,
                message_id,
                ack.stream,
            )

    async def close(self) -> None:
        await self._nc.close()


async def open_source(config: SourceConfig) -> NatsDeadLetterSource:
    options = NatsSourceOptions.of(config)
    nc = await connect(config, options)
    source = NatsDeadLetterSource(config, nc, options)
    try:
        await check_source(source._js, config, options)
        await source._open()
    except BaseException:
        await nc.close()
        raise
    return source


async def open_publisher(config: SourceConfig) -> NatsRedrivePublisher:
    return NatsRedrivePublisher(config, await connect(config, NatsSourceOptions.of(config)))
