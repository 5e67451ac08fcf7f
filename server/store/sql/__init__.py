"""The statements of db/queries/*.sql, one module per file.

Generated from db/queries/*.sql by `python -m server.store.sqlgen`: do not edit.
"""

from server.store.sql import (
    applications,
    bulk,
    controls,
    decisions,
    decisions_read,
    due,
    exception_reasons,
    exceptions,
    exceptions_read,
    health,
    items,
    leases,
    metrics,
    qa,
    queue_measures,
    queues,
    reason_codes,
    redrive_delivery,
    timeline,
    tokens,
    workflow_measures,
    workflows,
)

__all__ = [
    "applications",
    "bulk",
    "controls",
    "decisions",
    "decisions_read",
    "due",
    "exception_reasons",
    "exceptions",
    "exceptions_read",
    "health",
    "items",
    "leases",
    "metrics",
    "qa",
    "queue_measures",
    "queues",
    "reason_codes",
    "redrive_delivery",
    "timeline",
    "tokens",
    "workflow_measures",
    "workflows",
]
