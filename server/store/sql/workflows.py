"""The statements of db/queries/workflows.sql, as symbols.

Generated from db/queries/workflows.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _workflow_upsert(
    *,
    name: Any,
    approval_queue: Any,
    redrive_via: Any,
    redrive_target: Any,
    redrive_secret: Any,
    redrive_max_attempts: Any,
    redrive_timeout_seconds: Any,
    reviewer_minutes_per_day: Any,
    approver_minutes_per_day: Any,
    clear_reviewer_minutes: Any,
    clear_approver_minutes: Any,
) -> None: ...


WORKFLOW_UPSERT = Query("workflow_upsert", _workflow_upsert)
"""db/queries/workflows.sql:1

Creates a workflow or changes its settings (NULL leaves one as it is; the redrive route,
target and secret change together). :clear_reviewer_minutes and :clear_approver_minutes
unset those minutes (NULL: capacity unknown). Its approval queue becomes a queue
approvers work.
"""


def _workflows_get_by_names(
    *,
    names: Any,
) -> None: ...


WORKFLOWS_GET_BY_NAMES = Query("workflows_get_by_names", _workflows_get_by_names)
"""db/queries/workflows.sql:48"""


def _workflows_list() -> None: ...


WORKFLOWS_LIST = Query("workflows_list", _workflows_list)
"""db/queries/workflows.sql:51"""
