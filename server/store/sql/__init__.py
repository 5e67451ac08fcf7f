"""The statements of db/queries/*.sql, one module per file.

Generated from db/queries/*.sql by `python -m server.store.sqlgen`: do not edit.
"""

from server.store.sql import (
    applications,
    decisions,
    decisions_read,
    exception_reasons,
    exceptions,
    exceptions_read,
    health,
    items,
    leases,
    metrics,
    queues,
    reason_codes,
    redrive_delivery,
    tokens,
    workflows,
)

__all__ = [
    "applications",
    "decisions",
    "decisions_read",
    "exception_reasons",
    "exceptions",
    "exceptions_read",
    "health",
    "items",
    "leases",
    "metrics",
    "queues",
    "reason_codes",
    "redrive_delivery",
    "tokens",
    "workflows",
]
