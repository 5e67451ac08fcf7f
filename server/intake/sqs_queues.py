"""What the SQS adapter (sqs.py) shares between its source and its publisher: the source's
options, the client, queue URLs, and message attributes as SQS limits them."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiobotocore.session import get_session  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]

from server.intake.sources import SourceConfig

# The attribute a parked message carries its reason in, and the one a redrive carries its
# key in (the same name as the webhook redrive's header).
PARK_REASON_ATTRIBUTE = "Casework-Park-Reason"
# A parked message is a new message (SQS gives it a MessageId of its own): it carries the
# dead letter's MessageId in this attribute.
ORIGINAL_ID_ATTRIBUTE = "Casework-Original-Message-Id"
REDRIVE_KEY_ATTRIBUTE = "Casework-Redrive-Key"
# SQS allows 10 message attributes: what does not fit (or is no valid attribute: a bad name,
# an empty value) travels as one JSON object in this attribute instead.
FOLDED_ATTRIBUTE = "Casework-Attributes"
MAX_ATTRIBUTES = 10
# A ReceiveMessage call returns at most 10 messages; a long poll waits at most 20 seconds.
MAX_RECEIVE = 10
MAX_WAIT_SECONDS = 20
DEFAULT_WAIT_SECONDS = 20
DEFAULT_VISIBILITY_TIMEOUT = 60
# The longest reason a parked message carries.
MAX_REASON = 1000

_ATTRIBUTE_NAME = re.compile(r"^(?!(?i:aws\.|amazon\.))[A-Za-z0-9_\-](?:[A-Za-z0-9_\-.]{0,254})$")
# MessageDeduplicationId: at most 128 of letters, digits and ASCII punctuation.
_DEDUPLICATION_ID = re.compile(r"^[!-~]{1,128}$")
_REGION_IN_ENDPOINT = re.compile(r"^https?://sqs[.-]([a-z0-9-]+)\.amazonaws\.com")


# The keys of a source's `options` table (SqsOptions says what each means).
OPTIONS = (
    "region",
    "source_queue",
    "visibility_timeout",
    "wait_seconds",
    "message_group_id",
    "access_key_id",
    "secret_access_key",
)


class SqsConfigError(ValueError):
    """The source's SQS options cannot be used (a bad value, a queue that does not exist)."""


@dataclass(frozen=True)
class SqsOptions:
    """A source's `options` table, for SQS.

    region: the AWS region (default: from an `https://sqs.REGION.amazonaws.com` url, else
        AWS_REGION / AWS_DEFAULT_REGION, else us-east-1);
    source_queue: the queue a message failed on (URL, name or ARN), when it cannot be read
        from the message or the dead-letter queue (see the module's docstring);
    visibility_timeout: seconds a received message stays hidden from other consumers; the
        adapter extends it every third of it while the intake works on the batch;
    wait_seconds: the long poll (1 to 20);
    message_group_id: for a FIFO origin queue, the group a redrive is sent in (default: its
        redrive key, so redrives are not ordered against each other);
    access_key_id, secret_access_key: for a local stand-in such as moto only; without them
        the AWS credential chain (environment, profile, role) is used."""

    region: str
    source_queue: str | None = None
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT
    wait_seconds: int = DEFAULT_WAIT_SECONDS
    message_group_id: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None

    @classmethod
    def of(cls, config: SourceConfig) -> SqsOptions:
        options = dict(config.options)
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise SqsConfigError(f"source {config.name}: unknown SQS options {', '.join(unknown)}")
        region = options.get("region") or _region_of(config.url)
        visibility = _integer(config, options, "visibility_timeout", DEFAULT_VISIBILITY_TIMEOUT)
        if not 1 <= visibility <= 43200:
            raise SqsConfigError(
                f"source {config.name}: visibility_timeout must be 1 to 43200 seconds"
            )
        wait = _integer(config, options, "wait_seconds", DEFAULT_WAIT_SECONDS)
        if not 1 <= wait <= MAX_WAIT_SECONDS:
            # Always a long poll: an empty queue is asked at most once per wait.
            raise SqsConfigError(f"source {config.name}: wait_seconds must be 1 to 20")
        access, secret = options.get("access_key_id"), options.get("secret_access_key")
        if (access is None) != (secret is None):
            raise SqsConfigError(
                f"source {config.name}: give both access_key_id and secret_access_key, or neither"
            )
        return cls(
            region=str(region),
            source_queue=_text_or_none(options.get("source_queue")),
            visibility_timeout=visibility,
            wait_seconds=wait,
            message_group_id=_text_or_none(options.get("message_group_id")),
            access_key_id=_text_or_none(access),
            secret_access_key=_text_or_none(secret),
        )


def _integer(config: SourceConfig, options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SqsConfigError(f"source {config.name}: {key} must be a whole number of seconds")
    return value


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _region_of(url: str) -> str:
    found = _REGION_IN_ENDPOINT.match(url)
    if found:
        return found.group(1)
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


async def open_client(stack: AsyncExitStack, config: SourceConfig, options: SqsOptions) -> Any:
    credentials: dict[str, str] = {}
    if options.access_key_id is not None and options.secret_access_key is not None:
        credentials = {
            "aws_access_key_id": options.access_key_id,
            "aws_secret_access_key": options.secret_access_key,
        }
    # The read timeout outlasts the longest long poll.
    botocore_config = Config(
        connect_timeout=10,
        read_timeout=MAX_WAIT_SECONDS + 10,
        retries={"max_attempts": 3, "mode": "standard"},
    )
    return await stack.enter_async_context(
        get_session().create_client(
            "sqs",
            region_name=options.region,
            endpoint_url=config.url,
            config=botocore_config,
            **credentials,
        )
    )


async def queue_url(client: Any, ref: str) -> str:
    """A queue's URL from its URL, its name or its ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)."""
    if ref.startswith(("http://", "https://")):
        return ref
    if ref.startswith("arn:"):
        parts = ref.split(":")
        if len(parts) != 6 or parts[2] != "sqs":
            raise SqsConfigError(f"not an SQS queue ARN: {ref}")
        answer = await client.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])
    else:
        answer = await client.get_queue_url(QueueName=ref)
    return str(answer["QueueUrl"])


def is_fifo(url: str) -> bool:
    return url.endswith(".fifo")


def deduplication_id(key: str) -> str:
    """The redrive key as a FIFO MessageDeduplicationId, or its SHA-256 when it has
    characters SQS refuses there or is longer than 128."""
    if _DEDUPLICATION_ID.match(key):
        return key
    return hashlib.sha256(key.encode()).hexdigest()


def instant(milliseconds: str | None) -> str | None:
    if milliseconds is None:
        return None
    return datetime.fromtimestamp(int(milliseconds) / 1000, UTC).isoformat()


def header_value(attribute: Mapping[str, Any]) -> str:
    """A message attribute as a header: String and Number as they are, Binary in base64."""
    if "StringValue" in attribute:
        return str(attribute["StringValue"])
    if "BinaryValue" in attribute:
        return base64.b64encode(attribute["BinaryValue"]).decode()
    return ""


def message_attributes(
    plain: Mapping[str, str], typed: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """SQS message attributes for `plain` (strings) and `typed` (attributes as SQS gave
    them, kept with their types), ten at most: what does not fit, or is no valid attribute,
    goes into one `Casework-Attributes` attribute as a JSON object of strings. `plain`
    comes first: the adapter's own attributes (the park reason, the redrive key) always fit."""
    kept: dict[str, dict[str, Any]] = {}
    folded: dict[str, str] = {}
    candidates: list[tuple[str, dict[str, Any], str]] = [
        (name, {"DataType": "String", "StringValue": value}, value) for name, value in plain.items()
    ]
    for name, attribute in (typed or {}).items():
        if name in plain:
            continue
        shaped = {
            k: v for k, v in attribute.items() if k in ("DataType", "StringValue", "BinaryValue")
        }
        candidates.append((name, shaped, header_value(attribute)))
    overflow = len(candidates) > MAX_ATTRIBUTES
    room = MAX_ATTRIBUTES - 1 if overflow else MAX_ATTRIBUTES
    for name, attribute, text in candidates:
        valid = bool(_ATTRIBUTE_NAME.match(name)) and (
            attribute.get("StringValue") not in ("", None) or bool(attribute.get("BinaryValue"))
        )
        # An earlier fold (a parked message parked again) is folded again, whole.
        if valid and len(kept) < room and name != FOLDED_ATTRIBUTE:
            kept[name] = attribute
        else:
            folded[name] = text
    if folded:
        # Fewer than ten were kept: one was folded, or room was left for this one.
        kept[FOLDED_ATTRIBUTE] = {"DataType": "String", "StringValue": json.dumps(folded)}
    return kept
