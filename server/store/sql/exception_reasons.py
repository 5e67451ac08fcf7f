"""The statements of db/queries/exception_reasons.sql, as symbols.

Generated from db/queries/exception_reasons.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _exception_reason_upsert(
    *,
    workflow: Any,
    code: Any,
    label: Any,
    owner_role: Any,
    escalation_role: Any,
    allowed_actions: Any,
    due_low_seconds: Any,
    due_medium_seconds: Any,
    due_high_seconds: Any,
    due_critical_seconds: Any,
) -> None: ...


EXCEPTION_REASON_UPSERT = Query("exception_reason_upsert", _exception_reason_upsert)
"""db/queries/exception_reasons.sql:1"""


def _exception_reasons_get_by_workflows(
    *,
    workflows: Any,
) -> None: ...


EXCEPTION_REASONS_GET_BY_WORKFLOWS = Query(
    "exception_reasons_get_by_workflows", _exception_reasons_get_by_workflows
)
"""db/queries/exception_reasons.sql:19"""
