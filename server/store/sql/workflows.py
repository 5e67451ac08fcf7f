"""The statements of db/queries/workflows.sql, as symbols.

Generated from db/queries/workflows.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/workflows.sql:1
WORKFLOW_UPSERT = Query("workflow_upsert", lambda *, name, redrive_via, approval_queue, redrive_target, redrive_secret, redrive_max_attempts, redrive_timeout_seconds, reviewer_minutes_per_day, approver_minutes_per_day, require_auth_within_seconds, require_acr, redrive_legacy_headers, clear_reviewer_minutes, clear_approver_minutes: None)
"""Creates a workflow or changes its settings (NULL leaves one as it is; the redrive route,
target and secret change together). :clear_reviewer_minutes and :clear_approver_minutes
unset those minutes (NULL: capacity unknown). Its approval queue becomes a queue
approvers work. Step-up (migration 0023): :require_auth_within_seconds 0 and
:require_acr '' clear them, NULL leaves them.
Standard Webhooks (migration 0032): :redrive_legacy_headers also sends Casework-Signature
and Idempotency-Key (NULL leaves it; a new webhook starts without; a route that is not a
webhook never has it). A new route (:redrive_via given) replaces the secret at once: any
rotated-out secret still in its overlap stops signing.
"""

# db/queries/workflows.sql:73
WORKFLOWS_GET_BY_NAMES = Query("workflows_get_by_names", lambda *, names: None)

# db/queries/workflows.sql:76
WORKFLOWS_LIST = Query("workflows_list", lambda: None)

# db/queries/workflows.sql:79
WORKFLOW_REDRIVE_SECRET_ROTATE = Query("workflow_redrive_secret_rotate", lambda *, workflow, overlap_seconds, secret: None)
"""Rotates the signing secret of a workflow whose redrives go by webhook, as
queue_effect_secret_rotate does for a queue's effect. No row: no such workflow, or its
redrives do not go by webhook.
"""

# db/queries/workflows.sql:114
WORKFLOW_REDRIVE_SECRET_OVERLAPS = Query("workflow_redrive_secret_overlaps", lambda *, workflows: None)
