"""The statements of db/queries/reason_codes.sql, as symbols.

Generated from db/queries/reason_codes.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/reason_codes.sql:1
REASON_CODE_UPSERT = Query("reason_code_upsert", lambda *, queue, code, label, verdicts, requires_note: None)
""":requires_note NULL leaves the code's setting as it is (false for a new code)."""

# db/queries/reason_codes.sql:11
REASON_CODES_GET_BY_QUEUES = Query("reason_codes_get_by_queues", lambda *, queues: None)
