"""The statements of db/queries/reason_codes.sql, as symbols.

Generated from db/queries/reason_codes.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _reason_code_upsert(
    *,
    queue: Any,
    code: Any,
    label: Any,
    verdicts: Any,
    requires_note: Any,
) -> None: ...


REASON_CODE_UPSERT = Query("reason_code_upsert", _reason_code_upsert)
"""db/queries/reason_codes.sql:1

:requires_note NULL leaves the code's setting as it is (false for a new code).
"""


def _reason_codes_get_by_queues(
    *,
    queues: Any,
) -> None: ...


REASON_CODES_GET_BY_QUEUES = Query("reason_codes_get_by_queues", _reason_codes_get_by_queues)
"""db/queries/reason_codes.sql:11"""
