"""The statements of db/queries/exceptions_read.sql, as symbols.

Generated from db/queries/exceptions_read.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _exceptions_get_by_ids(
    *,
    ids: Any,
) -> None: ...


EXCEPTIONS_GET_BY_IDS = Query("exceptions_get_by_ids", _exceptions_get_by_ids)
"""db/queries/exceptions_read.sql:6"""


def _exception_ids_get_by_item_ids(
    *,
    item_ids: Any,
) -> None: ...


EXCEPTION_IDS_GET_BY_ITEM_IDS = Query(
    "exception_ids_get_by_item_ids", _exception_ids_get_by_item_ids
)
"""db/queries/exceptions_read.sql:22"""


def _exceptions_get_about_items(
    *,
    item_ids: Any,
    apply_workflow: Any,
) -> None: ...


EXCEPTIONS_GET_ABOUT_ITEMS = Query("exceptions_get_about_items", _exceptions_get_about_items)
"""db/queries/exceptions_read.sql:25

Every exception about each item of :item_ids, for its audit pack (server/domain/quality/audit.py),
oldest first: the item's own (an exception's item) and those raised because one of its
decisions could not be carried out (workflow :apply_workflow, whose source record is the
decision id: exceptions_source). `about_item_id` names the item; `item_queue`,
`approval_queue` and `reason_owner_role` are, with the owner and escalation roles, the
queues that see the exception (ExceptionRecord.queues).
"""


def _exceptions_get_page(
    *,
    workflow: Any,
    state: Any,
    owner_role: Any,
    overdue: Any,
    source_record_id: Any,
    after_id: Any,
    queue_scope: Any,
    page_size: Any,
) -> None: ...


EXCEPTIONS_GET_PAGE = Query("exceptions_get_page", _exceptions_get_page)
"""db/queries/exceptions_read.sql:52

One page of exceptions, oldest first (ids sort by time), filtered; every filter is
optional (NULL). The caller's queue scope limits what it sees.
:owner_role is the effective owner (overdue evaluated as the claim would).
"""


def _exception_events_get_by_exception_ids(
    *,
    exception_ids: Any,
) -> None: ...


EXCEPTION_EVENTS_GET_BY_EXCEPTION_IDS = Query(
    "exception_events_get_by_exception_ids", _exception_events_get_by_exception_ids
)
"""db/queries/exceptions_read.sql:80"""


def _exception_corrections_get_by_exception_ids(
    *,
    exception_ids: Any,
) -> None: ...


EXCEPTION_CORRECTIONS_GET_BY_EXCEPTION_IDS = Query(
    "exception_corrections_get_by_exception_ids", _exception_corrections_get_by_exception_ids
)
"""db/queries/exceptions_read.sql:85

Every correction version of each exception, oldest first.
"""


def _exception_redrives_get_by_exception_ids(
    *,
    exception_ids: Any,
) -> None: ...


EXCEPTION_REDRIVES_GET_BY_EXCEPTION_IDS = Query(
    "exception_redrives_get_by_exception_ids", _exception_redrives_get_by_exception_ids
)
"""db/queries/exceptions_read.sql:91"""


def _exception_redrive_get(
    *,
    redrive_key: Any,
) -> None: ...


EXCEPTION_REDRIVE_GET = Query("exception_redrive_get", _exception_redrive_get)
"""db/queries/exceptions_read.sql:96"""


def _exception_event_get_position(
    *,
    event_id: Any,
) -> None: ...


EXCEPTION_EVENT_GET_POSITION = Query("exception_event_get_position", _exception_event_get_position)
"""db/queries/exceptions_read.sql:99

Where an event sits in its workflow's commit-ordered stream.
"""


def _exception_events_get_after_position(
    *,
    workflow: Any,
    after_txid: Any,
    after_id: Any,
    page_size: Any,
) -> None: ...


EXCEPTION_EVENTS_GET_AFTER_POSITION = Query(
    "exception_events_get_after_position", _exception_events_get_after_position
)
"""db/queries/exceptions_read.sql:103

The next events of a workflow in commit-safe order (see decisions_get_after_position).
"""
