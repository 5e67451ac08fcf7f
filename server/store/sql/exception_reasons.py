"""The statements of db/queries/exception_reasons.sql, as symbols.

Generated from db/queries/exception_reasons.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/exception_reasons.sql:1
EXCEPTION_REASON_UPSERT = Query("exception_reason_upsert", lambda *, workflow, code, label, owner_role, escalation_role, allowed_actions, due_low_seconds, due_medium_seconds, due_high_seconds, due_critical_seconds: None)

# db/queries/exception_reasons.sql:19
EXCEPTION_REASONS_GET_BY_WORKFLOWS = Query("exception_reasons_get_by_workflows", lambda *, workflows: None)
