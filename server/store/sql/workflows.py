"""The statements of db/queries/workflows.sql, as symbols.

Generated from db/queries/workflows.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/workflows.sql:1
WORKFLOW_UPSERT = Query("workflow_upsert", lambda *, name, approval_queue, redrive_via, redrive_target, redrive_secret, redrive_max_attempts, redrive_timeout_seconds, reviewer_minutes_per_day, approver_minutes_per_day, require_auth_within_seconds, require_acr, clear_reviewer_minutes, clear_approver_minutes: None)
"""Creates a workflow or changes its settings (NULL leaves one as it is; the redrive route,
target and secret change together). :clear_reviewer_minutes and :clear_approver_minutes
unset those minutes (NULL: capacity unknown). Its approval queue becomes a queue
approvers work. Step-up (migration 0023): :require_auth_within_seconds 0 and
:require_acr '' clear them, NULL leaves them.
"""

# db/queries/workflows.sql:57
WORKFLOWS_GET_BY_NAMES = Query("workflows_get_by_names", lambda *, names: None)

# db/queries/workflows.sql:60
WORKFLOWS_LIST = Query("workflows_list", lambda: None)
