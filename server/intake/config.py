"""The intake's configuration file (`casework intake --config intake.toml`).

    [[source]]
    name = "orders"                       # the key of its messages, with their ids
    broker = "rabbitmq"                   # rabbitmq | nats | sqs
    url = "amqp://guest:guest@127.0.0.1:5672/"
    dead_letter = "orders.dead"           # what to drain
    parking = "orders.parked"             # where unmappable messages go, with the reason
    batch_size = 50                       # optional, 1 to 1000 (default 50)
    workflow = "order_sync"               # raise exceptions of this workflow ...
    reason_code = "order_failed"          # ... with this reason
    reason_code_header = "x-reason"       # optional: the reason from this header when present
    consequence = "medium"                # optional: low | medium | high | critical
    # queue = "order-review"              # or enqueue review items to this queue instead
    record_id = { header = "x-order-id" } # or { path = "order.id" } in the JSON body
    subject_ref = { path = "customer.id" }  # optional; a queue with a privacy policy needs it
    options = { prefetch = 100 }          # optional, the broker adapter's own

Every problem is reported, one line each, before anything starts (`load_config`)."""

from __future__ import annotations

import enum
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.domain.exceptions.records import Consequence
from server.domain.review.queues import QUEUE_NAME
from server.intake.paths import PATH_SYNTAX, parse_path
from server.intake.sources import BrokerKind, SourceConfig

DEFAULT_BATCH_SIZE = 50
MAX_BATCH_SIZE = 1000
SOURCE_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,99}")
# What a header name may be (AMQP, NATS and SQS attribute names all fit in this).
HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}")

_KEYS = frozenset(
    {
        "name",
        "broker",
        "url",
        "dead_letter",
        "parking",
        "batch_size",
        "workflow",
        "reason_code",
        "reason_code_header",
        "consequence",
        "queue",
        "record_id",
        "subject_ref",
        "options",
    }
)


class ValueFrom(enum.Enum):
    HEADER = "header"
    PATH = "path"


@dataclass(frozen=True)
class Locator:
    """Where a value is in a dead letter: a header's name, or a path into its JSON body."""

    kind: ValueFrom
    where: str
    steps: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"header {self.where!r}" if self.kind is ValueFrom.HEADER else f"path {self.where!r}"


@dataclass(frozen=True)
class RaiseTarget:
    workflow: str
    reason_code: str
    consequence: Consequence = Consequence.MEDIUM
    # The reason from this header when the message has it, else reason_code.
    reason_code_header: str | None = None


@dataclass(frozen=True)
class EnqueueTarget:
    queue: str


@dataclass(frozen=True)
class IntakeSource:
    """One [[source]]: how to reach its dead-letter queue, and what its messages become."""

    broker: SourceConfig
    target: RaiseTarget | EnqueueTarget
    record_id: Locator
    subject_ref: Locator | None = None
    batch_size: int = DEFAULT_BATCH_SIZE

    @property
    def name(self) -> str:
        return self.broker.name


@dataclass(frozen=True)
class IntakeConfig:
    sources: tuple[IntakeSource, ...] = field(default_factory=tuple)


class IntakeConfigError(Exception):
    """The file's problems, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def load_config(path: Path) -> IntakeConfig:
    try:
        text = path.read_text()
    except OSError as error:
        raise IntakeConfigError([f"{path}: cannot read it: {error.strerror or error}"]) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise IntakeConfigError([f"{path}: not TOML: {error}"]) from None
    return parse_config(document, str(path))


def parse_config(document: Mapping[str, Any], where: str = "the configuration") -> IntakeConfig:
    problems: list[str] = []
    unknown = sorted(set(document) - {"source"})
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(unknown)}: only [[source]] tables")
    raw_sources = document.get("source", [])
    if not isinstance(raw_sources, list) or not raw_sources:
        problems.append(f"{where}: no [[source]] table: name at least one dead-letter queue")
        raise IntakeConfigError(problems)
    sources: list[IntakeSource] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_sources):
        label = f"{where}: source {index + 1}"
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            label = f"{where}: source {raw['name']!r}"
        if not isinstance(raw, dict):
            problems.append(f"{label}: must be a table")
            continue
        found = _parse_source(raw, label, problems)
        if found is None:
            continue
        if found.name in seen:
            problems.append(f"{label}: the name is used by another source; names are keys")
            continue
        seen.add(found.name)
        sources.append(found)
    if problems:
        raise IntakeConfigError(problems)
    return IntakeConfig(tuple(sources))


def _text(raw: Mapping[str, Any], key: str, label: str, problems: list[str]) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{label}: {key} must be a non-empty string")
        return None
    return value.strip()


def _required(raw: Mapping[str, Any], key: str, label: str, problems: list[str]) -> str | None:
    if key not in raw:
        problems.append(f"{label}: {key} is required")
        return None
    return _text(raw, key, label, problems)


def _parse_source(raw: dict[str, Any], label: str, problems: list[str]) -> IntakeSource | None:
    before = len(problems)
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        problems.append(f"{label}: unknown key(s) {', '.join(unknown)}")
    name = _required(raw, "name", label, problems)
    if name is not None and not SOURCE_NAME.fullmatch(name):
        problems.append(
            f"{label}: name must be 1 to 100 characters of a-z, 0-9, '_', '.', '-' (it keys "
            "the messages taken)"
        )
    broker_name = _required(raw, "broker", label, problems)
    broker: BrokerKind | None = None
    if broker_name is not None:
        try:
            broker = BrokerKind(broker_name)
        except ValueError:
            known = ", ".join(kind.value for kind in BrokerKind)
            problems.append(f"{label}: broker {broker_name!r} is not one of {known}")
    url = _required(raw, "url", label, problems)
    dead_letter = _required(raw, "dead_letter", label, problems)
    parking = _required(raw, "parking", label, problems)
    if dead_letter is not None and dead_letter == parking:
        problems.append(f"{label}: parking must differ from dead_letter")
    batch_size = raw.get("batch_size", DEFAULT_BATCH_SIZE)
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, int)
        or not 1 <= batch_size <= MAX_BATCH_SIZE
    ):
        problems.append(f"{label}: batch_size must be a whole number from 1 to {MAX_BATCH_SIZE}")
    options = raw.get("options", {})
    if not isinstance(options, dict):
        problems.append(f"{label}: options must be a table")
    target = _parse_target(raw, label, problems)
    record_id = _parse_locator(raw.get("record_id"), "record_id", label, problems)
    if "record_id" not in raw:
        problems.append(
            f'{label}: record_id is required: {{ header = "NAME" }} or {{ path = "a.b" }}'
        )
    subject_ref = _parse_locator(raw.get("subject_ref"), "subject_ref", label, problems)
    if len(problems) > before:
        return None
    assert name is not None
    assert broker is not None
    assert url is not None
    assert dead_letter is not None
    assert parking is not None
    assert target is not None
    assert record_id is not None
    return IntakeSource(
        broker=SourceConfig(
            name=name,
            broker=broker,
            url=url,
            dead_letter=dead_letter,
            parking=parking,
            options=dict(options),
        ),
        target=target,
        record_id=record_id,
        subject_ref=subject_ref,
        batch_size=batch_size,
    )


def _parse_target(
    raw: Mapping[str, Any], label: str, problems: list[str]
) -> RaiseTarget | EnqueueTarget | None:
    workflow = _text(raw, "workflow", label, problems)
    queue = _text(raw, "queue", label, problems)
    reason_code = _text(raw, "reason_code", label, problems)
    reason_header = _text(raw, "reason_code_header", label, problems)
    consequence_name = _text(raw, "consequence", label, problems)
    if (workflow is None) == (queue is None):
        problems.append(
            f"{label}: give either workflow (with reason_code: raise exceptions) or queue "
            "(enqueue review items)"
        )
        return None
    if queue is not None:
        if not QUEUE_NAME.fullmatch(queue):
            problems.append(f"{label}: queue {queue!r} is not a queue name")
        for key in ("reason_code", "reason_code_header", "consequence"):
            if key in raw:
                problems.append(f"{label}: {key} belongs to a workflow target, not a queue")
        return EnqueueTarget(queue)
    assert workflow is not None
    if reason_code is None:
        problems.append(f"{label}: reason_code is required with workflow")
        return None
    consequence = Consequence.MEDIUM
    if consequence_name is not None:
        try:
            consequence = Consequence(consequence_name)
        except ValueError:
            known = ", ".join(level.value for level in Consequence)
            problems.append(f"{label}: consequence {consequence_name!r} is not one of {known}")
    if reason_header is not None and not HEADER_NAME.fullmatch(reason_header):
        problems.append(f"{label}: reason_code_header {reason_header!r} is not a header name")
    return RaiseTarget(workflow, reason_code, consequence, reason_header)


def _parse_locator(value: Any, key: str, label: str, problems: list[str]) -> Locator | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) != 1 or not set(value) <= {"header", "path"}:
        problems.append(f'{label}: {key} must be {{ header = "NAME" }} or {{ path = "a.b" }}')
        return None
    [(kind_name, where)] = value.items()
    if not isinstance(where, str) or not where:
        problems.append(f"{label}: {key}.{kind_name} must be a non-empty string")
        return None
    kind = ValueFrom(kind_name)
    if kind is ValueFrom.HEADER:
        if not HEADER_NAME.fullmatch(where):
            problems.append(f"{label}: {key}.header {where!r} is not a header name")
            return None
        return Locator(kind, where)
    steps = parse_path(where)
    if steps is None:
        problems.append(f"{label}: {key}.path {where!r} is not a path ({PATH_SYNTAX})")
        return None
    return Locator(kind, where, steps)
