"""The event catalogue of docs/integrations.md, read for the tests that hold what the server
sends against it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.integrations.events_support import ALL_TYPES

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"

# Values made fresh by each run: generated ids, digests of a generated payload, and times.
# Their type is held, and a time's form.
FRESH = frozenset(
    {
        "decisionId",
        "itemId",
        "exceptionId",
        "evidenceHash",
        "timestamp",
        "decidedAt",
        "escalatedAt",
        "dueAt",
        "leaseStartedAt",
        "lapsedAt",
        "requestedAt",
        "failedAt",
        "at",
    }
)
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?\+00:00$")
TIMES = frozenset(k for k in FRESH if k.endswith("At") or k in ("timestamp", "at"))


def catalogue_examples() -> dict[str, dict[str, Any]]:
    """The catalogue section's JSON examples, by their `type`."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Event catalogue")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    examples: dict[str, dict[str, Any]] = {}
    for block in re.findall(r"```json\n(.*?)```", section, flags=re.DOTALL):
        body = json.loads(block)
        if isinstance(body, dict) and body.get("type") in ALL_TYPES:
            assert body["type"] not in examples, f"two examples of {body['type']}"
            examples[body["type"]] = body
    return examples


def held_against(example: Any, sent: Any, path: str = "") -> list[str]:
    """Where `sent` departs from the example: keys, JSON types, deterministic values."""
    if isinstance(example, dict):
        if not isinstance(sent, dict):
            return [f"{path or 'body'}: an object in the example, {sent!r} sent"]
        problems = []
        if set(example) != set(sent):
            problems.append(
                f"{path or 'body'}: keys {sorted(example)} in the example, {sorted(sent)} sent"
            )
        for key in set(example) & set(sent):
            where = f"{path}.{key}" if path else key
            if key in FRESH:
                problems += fresh(example[key], sent[key], key, where)
            else:
                problems += held_against(example[key], sent[key], where)
        return problems
    if isinstance(example, list):
        if not isinstance(sent, list) or len(sent) != len(example):
            return [f"{path}: {example!r} in the example, {sent!r} sent"]
        return [p for n, e in enumerate(example) for p in held_against(e, sent[n], f"{path}[{n}]")]
    if type(example) is not type(sent) or example != sent:
        return [f"{path}: {example!r} in the example, {sent!r} sent"]
    return []


def fresh(example: Any, sent: Any, key: str, where: str) -> list[str]:
    if type(example) is not type(sent):
        return [f"{where}: {type(example).__name__} in the example, {sent!r} sent"]
    if key in TIMES and isinstance(sent, str):
        bad = [v for v in (example, sent) if not TIME.match(v)]
        return [f"{where}: {v!r} is not an ISO 8601 time in UTC" for v in bad]
    return []
