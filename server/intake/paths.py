"""A tiny dotted-path reader for the intake's `record_id` / `subject_ref` paths.

`order.id` is the value at key `id` of the object at key `order`; a step of digits in a
list takes that element (`lines.0.sku`). Nothing else: no wildcards, no filters, no keys
holding a dot."""

from __future__ import annotations

from typing import Any

PATH_SYNTAX = "object keys joined with dots, digits index a list: order.lines.0.sku"
MAX_STEPS = 32


def parse_path(path: str) -> tuple[str, ...] | None:
    steps = tuple(path.split("."))
    if len(steps) > MAX_STEPS or any(not step or step != step.strip() for step in steps):
        return None
    return steps


class Missing:
    """Nothing at the path (a key absent, an index past the end, a step into a scalar)."""


MISSING = Missing()


def read_path(document: Any, steps: tuple[str, ...]) -> Any:
    node = document
    for step in steps:
        if isinstance(node, dict):
            if step not in node:
                return MISSING
            node = node[step]
        elif isinstance(node, list) and step.isdigit():
            index = int(step)
            if index >= len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node
