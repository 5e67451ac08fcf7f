"""Amazon SQS dead-letter queues, through aiobotocore.

A source queue with a `RedrivePolicy` (`deadLetterTargetArn`, `maxReceiveCount`) moves a
message its consumers failed to delete `maxReceiveCount` times to the dead-letter queue.
This adapter long-polls that queue, hands each message to the intake as a `DeadLetter`
(the SQS MessageId as its id), keeps the messages of a batch invisible while the intake
works on them, and deletes one only when the intake acknowledges it.

Where a message failed (its origin, the queue a redrive publishes back to) is, in order:
the source's `options["source_queue"]` when set; else the message's
`DeadLetterQueueSourceArn` attribute, which SQS sets when it moves a message; else the one
queue whose RedrivePolicy targets this dead-letter queue (ListDeadLetterSourceQueues). moto,
the stand-in the tests use, does not set `DeadLetterQueueSourceArn` (nor keep a
RedriveAllowPolicy), so there the source comes from the configuration or the one source
queue. docs/integrations.md ("Amazon SQS") describes the options."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from server.intake.sources import BrokerKind, DeadLetter, Origin, SourceConfig
from server.intake.sqs_queues import (
    FOLDED_ATTRIBUTE,
    MAX_REASON,
    MAX_RECEIVE,
    OPTIONS,
    ORIGINAL_ID_ATTRIBUTE,
    PARK_REASON_ATTRIBUTE,
    REDRIVE_KEY_ATTRIBUTE,
    SqsConfigError,
    SqsOptions,
    deduplication_id,
    header_value,
    instant,
    is_fifo,
    message_attributes,
    open_client,
    queue_url,
)

# The names the source's users (and its tests) know it by, wherever they live.
__all__ = [
    "FOLDED_ATTRIBUTE",
    "OPTIONS",
    "ORIGINAL_ID_ATTRIBUTE",
    "PARK_REASON_ATTRIBUTE",
    "REDRIVE_KEY_ATTRIBUTE",
    "SqsConfigError",
    "SqsDeadLetterSource",
    "SqsOptions",
    "SqsRedrivePublisher",
    "message_attributes",
    "open_publisher",
    "open_source",
]

log = logging.getLogger(__name__)


@dataclass
class _Held:
    """A received message the intake has not yet acknowledged or parked."""

    receipt_handle: str
    attributes: dict[str, Any]
    system: dict[str, Any]


@dataclass(frozen=True)
class _Source:
    url: str
    found_by: str
    max_receive_count: int | None


class SqsDeadLetterSource:
    """One SQS dead-letter queue, drained in batches (server/intake/sources.py)."""

    def __init__(
        self,
        config: SourceConfig,
        options: SqsOptions,
        stack: AsyncExitStack,
        client: Any,
        dead_letter_url: str,
        parking_url: str,
        fallback: _Source | None,
    ) -> None:
        self.config = config
        self.options = options
        self._stack = stack
        self._client = client
        self.dead_letter_url = dead_letter_url
        self.parking_url = parking_url
        self._fallback = fallback
        self._sources: dict[str, _Source] = {}
        # Received, not yet acknowledged or parked, by receipt handle: kept invisible.
        self._current: dict[str, DeadLetter] = {}
        self._closed = asyncio.Event()
        self._keeper: asyncio.Task[None] | None = None
        # ReceiveMessage calls started, and extensions of the held messages' visibility.
        self.polls = 0
        self.extensions = 0

    @property
    def fallback_source(self) -> str | None:
        return None if self._fallback is None else self._fallback.url

    async def batches(self, size: int) -> AsyncGenerator[list[DeadLetter], None]:
        if size < 1:
            raise ValueError("a batch holds at least one message")
        if self._keeper is None:
            self._keeper = asyncio.create_task(self._keep_invisible())
        while not self._closed.is_set():
            # Asking for the next batch lets go of the last one: what the intake neither
            # acknowledged nor parked is no longer kept hidden, and comes back when its
            # visibility timeout runs out (a failure is retried then, not held for ever).
            self._current.clear()
            batch = await self._receive(size)
            if batch and not self._closed.is_set():
                self._current.update((letter.handle.receipt_handle, letter) for letter in batch)
                yield batch

    async def _receive(self, size: int) -> list[DeadLetter]:
        """Long-polls for the first messages, then takes what else is there at once, up to
        `size`; [] when closed meanwhile."""
        batch: list[DeadLetter] = []
        wait = self.options.wait_seconds
        while len(batch) < size and not self._closed.is_set():
            wanted = min(size - len(batch), MAX_RECEIVE)
            poll = asyncio.ensure_future(self._receive_once(wanted, wait))
            closed = asyncio.ensure_future(self._closed.wait())
            try:
                await asyncio.wait({poll, closed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                # Closed during a long poll (or the consumer cancelled): what SQS hands out
                # meanwhile comes back after its visibility timeout.
                for waiting in (poll, closed):
                    if not waiting.done():
                        waiting.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await waiting
            if poll.cancelled():
                return batch
            received = poll.result()
            batch += [await self._letter(message) for message in received]
            if len(received) < wanted:
                break
            # The rest of the batch is what is there now: no second long poll.
            wait = 0
        return batch

    async def _receive_once(self, count: int, wait: int) -> list[dict[str, Any]]:
        self.polls += 1
        answer = await self._client.receive_message(
            QueueUrl=self.dead_letter_url,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=wait,
            VisibilityTimeout=self.options.visibility_timeout,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        return list(answer.get("Messages", []))

    async def _letter(self, message: Mapping[str, Any]) -> DeadLetter:
        system = dict(message.get("Attributes", {}))
        attributes = dict(message.get("MessageAttributes", {}))
        source = await self._source_of(system.get("DeadLetterQueueSourceArn"))
        failure: dict[str, Any] = {
            "dead_letter_queue": self.dead_letter_url,
            "source_queue": None if source is None else source.url,
            "source_queue_from": None if source is None else source.found_by,
            "max_receive_count": None if source is None else source.max_receive_count,
            "receive_count": int(system.get("ApproximateReceiveCount", "0")),
            "sent_at": instant(system.get("SentTimestamp")),
            "first_received_at": instant(system.get("ApproximateFirstReceiveTimestamp")),
            "attributes": system,
        }
        return DeadLetter(
            message_id=str(message["MessageId"]),
            body=str(message.get("Body", "")).encode(),
            headers={name: header_value(value) for name, value in attributes.items()},
            failure=failure,
            origin=Origin(BrokerKind.SQS, queue=None if source is None else source.url),
            handle=_Held(str(message["ReceiptHandle"]), attributes, system),
        )

    async def _source_of(self, arn: str | None) -> _Source | None:
        if self.options.source_queue is not None or arn is None:
            return self._fallback
        if arn not in self._sources:
            try:
                url = await queue_url(self._client, arn)
            except (ClientError, SqsConfigError):
                # The source queue is gone (or the ARN is not one): the configured one, if any.
                log.warning("sqs source %s: no queue for %s", self.config.name, arn)
                return self._fallback
            self._sources[arn] = _Source(
                url, "message", await _max_receive_count(self._client, url)
            )
        return self._sources[arn]

    async def _keep_invisible(self) -> None:
        """Every third of the visibility timeout, extends it for the messages the intake
        holds, so none reappears while its batch is in progress."""
        interval = self.options.visibility_timeout / 3
        while not self._closed.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), timeout=interval)
            if self._closed.is_set():
                return
            held = list(self._current)
            if not held:
                continue
            try:
                await self._change_visibility(held, self.options.visibility_timeout)
            except Exception:
                log.exception("sqs source %s: extending visibility failed", self.config.name)
            else:
                self.extensions += 1

    async def _change_visibility(self, receipts: list[str], seconds: int) -> None:
        for start in range(0, len(receipts), MAX_RECEIVE):
            chunk = receipts[start : start + MAX_RECEIVE]
            answer = await self._client.change_message_visibility_batch(
                QueueUrl=self.dead_letter_url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": receipt, "VisibilityTimeout": seconds}
                    for n, receipt in enumerate(chunk)
                ],
            )
            for failed in answer.get("Failed", []):
                # Already deleted (acknowledged meanwhile), or its handle expired.
                log.info(
                    "sqs source %s: visibility not changed: %s",
                    self.config.name,
                    failed.get("Code"),
                )

    async def acknowledge(self, letter: DeadLetter) -> None:
        held: _Held = letter.handle
        await self._client.delete_message(
            QueueUrl=self.dead_letter_url, ReceiptHandle=held.receipt_handle
        )
        self._current.pop(held.receipt_handle, None)

    async def park(self, letter: DeadLetter, reason: str) -> None:
        held: _Held = letter.handle
        send: dict[str, Any] = {
            "QueueUrl": self.parking_url,
            "MessageBody": letter.body.decode(),
            "MessageAttributes": message_attributes(
                {
                    PARK_REASON_ATTRIBUTE: reason[:MAX_REASON] or "unmappable",
                    ORIGINAL_ID_ATTRIBUTE: letter.message_id,
                },
                held.attributes,
            ),
        }
        if is_fifo(self.parking_url):
            send["MessageGroupId"] = held.system.get("MessageGroupId") or deduplication_id(
                self.config.name
            )
            send["MessageDeduplicationId"] = deduplication_id(letter.message_id)
        await self._client.send_message(**send)
        await self.acknowledge(letter)

    async def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            if self._keeper is not None:
                await self._keeper
            # What the intake still holds is handed back at once, not after its timeout.
            held = list(self._current)
            self._current.clear()
            if held:
                with contextlib.suppress(ClientError):
                    await self._change_visibility(held, 0)
        finally:
            await self._stack.aclose()


async def _max_receive_count(client: Any, url: str) -> int | None:
    try:
        answer = await client.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
    except ClientError:
        return None
    policy = answer.get("Attributes", {}).get("RedrivePolicy")
    if not policy:
        return None
    count = json.loads(policy).get("maxReceiveCount")
    return None if count is None else int(count)


async def _fallback_source(
    client: Any, options: SqsOptions, dead_letter_url: str
) -> _Source | None:
    """The source queue when the configuration names it, or when the dead-letter queue has
    exactly one (ListDeadLetterSourceQueues: the queues whose RedrivePolicy targets it; a
    RedriveAllowPolicy only permits, so it is not read)."""
    if options.source_queue is not None:
        url = await queue_url(client, options.source_queue)
        return _Source(url, "config", await _max_receive_count(client, url))
    with contextlib.suppress(ClientError):
        answer = await client.list_dead_letter_source_queues(QueueUrl=dead_letter_url)
        urls = answer.get("queueUrls", [])
        if len(urls) == 1:
            return _Source(
                urls[0], "dead_letter_source_queues", await _max_receive_count(client, urls[0])
            )
    return None


async def open_source(config: SourceConfig) -> SqsDeadLetterSource:
    """The dead-letter queue `config.dead_letter` (URL or name) at the SQS endpoint
    `config.url`, parking to `config.parking`; raises SqsConfigError when a queue does not
    exist."""
    options = SqsOptions.of(config)
    stack = AsyncExitStack()
    try:
        client = await open_client(stack, config, options)
        try:
            dead_letter_url = await queue_url(client, config.dead_letter)
            parking_url = await queue_url(client, config.parking)
            fallback = await _fallback_source(client, options, dead_letter_url)
        except ClientError as error:
            raise SqsConfigError(f"source {config.name}: {error}") from error
        if fallback is None:
            log.warning(
                "sqs source %s: no single source queue for %s; messages without "
                "DeadLetterQueueSourceArn get no origin (set options.source_queue)",
                config.name,
                dead_letter_url,
            )
        return SqsDeadLetterSource(
            config, options, stack, client, dead_letter_url, parking_url, fallback
        )
    except BaseException:
        await stack.aclose()
        raise


class SqsRedrivePublisher:
    """Sends a corrected message to the queue it failed on, with the redrive key in the
    Casework-Redrive-Key attribute (SQS assigns its own MessageId), and, on a FIFO queue, as
    the MessageDeduplicationId, so SQS itself drops a second send within five minutes."""

    def __init__(self, options: SqsOptions, stack: AsyncExitStack, client: Any) -> None:
        self.options = options
        self._stack = stack
        self._client = client
        self._urls: dict[str, str] = {}

    async def publish(
        self, origin: Origin, body: bytes, *, message_id: str, headers: Mapping[str, str]
    ) -> None:
        if origin.broker is not BrokerKind.SQS:
            raise ValueError(f"an SQS publisher cannot send to a {origin.broker.value} origin")
        if not origin.queue:
            raise ValueError(
                "the message's origin names no SQS queue (set options.source_queue on the "
                "intake source)"
            )
        try:
            text = body.decode()
        except UnicodeDecodeError as error:
            raise ValueError("an SQS message body is text: this one is not UTF-8") from error
        url = self._urls.get(origin.queue)
        if url is None:
            url = self._urls[origin.queue] = await queue_url(self._client, origin.queue)
        send: dict[str, Any] = {
            "QueueUrl": url,
            "MessageBody": text,
            "MessageAttributes": message_attributes(
                {REDRIVE_KEY_ATTRIBUTE: message_id}
                | {k: v for k, v in headers.items() if k != REDRIVE_KEY_ATTRIBUTE}
            ),
        }
        if is_fifo(url):
            send["MessageGroupId"] = self.options.message_group_id or deduplication_id(message_id)
            send["MessageDeduplicationId"] = deduplication_id(message_id)
        await self._client.send_message(**send)

    async def close(self) -> None:
        await self._stack.aclose()


async def open_publisher(config: SourceConfig) -> SqsRedrivePublisher:
    options = SqsOptions.of(config)
    stack = AsyncExitStack()
    try:
        return SqsRedrivePublisher(options, stack, await open_client(stack, config, options))
    except BaseException:
        await stack.aclose()
        raise
