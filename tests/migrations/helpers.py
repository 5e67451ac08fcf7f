"""Shared by the migration tests: the outline of a query plan, read from EXPLAIN (FORMAT JSON)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

# Two exception workflows and their queues, each with one reason: what the exception plan
# tests build their histories on.
WORKFLOW_CATALOGUE = """
INSERT INTO queues (name, holder_role) VALUES
    ('supplier-ops', 'reviewer'), ('procurement-leads', 'reviewer'),
    ('supplier-approvals', 'approver'),
    ('payout-ops', 'reviewer'), ('payout-leads', 'reviewer'), ('payout-approvals', 'approver');
INSERT INTO workflows (name, approval_queue) VALUES
    ('supplier_onboarding', 'supplier-approvals'), ('payouts', 'payout-approvals');
INSERT INTO exception_reasons (workflow, code, label, owner_role, escalation_role,
                               allowed_actions, due_low_seconds, due_medium_seconds,
                               due_high_seconds, due_critical_seconds)
VALUES ('supplier_onboarding', 'entity_mismatch', 'Entity mismatch', 'supplier-ops',
        'procurement-leads', ARRAY['close_exception'], 259200, 86400, 14400, 3600),
       ('payouts', 'entity_mismatch', 'Entity mismatch', 'payout-ops', 'payout-leads',
        ARRAY['close_exception'], 259200, 86400, 14400, 3600);
"""


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


def literal(value: Any, array_of: str = "text") -> str:
    """A statement's argument written as SQL, to EXECUTE a prepared statement under EXPLAIN;
    a list becomes an array of `array_of`."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'::timestamptz"
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(literal(v, array_of) for v in value) + f"]::{array_of}[]"
    return "'" + str(value).replace("'", "''") + "'"
