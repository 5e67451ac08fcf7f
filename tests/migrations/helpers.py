"""Shared by the migration tests: the outline of a query plan, read from EXPLAIN (FORMAT JSON)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def plan_outline(explained: Any) -> list[tuple[str, str | None]]:
    document = json.loads(explained) if isinstance(explained, str) else explained
    return [
        (node["Node Type"], node.get("Index Name") or node.get("Relation Name"))
        for node in plan_nodes(document[0]["Plan"])
    ]
