"""The statements of db/queries/exceptions_read.sql, as symbols.

Generated from db/queries/exceptions_read.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/exceptions_read.sql:6
EXCEPTIONS_GET_BY_IDS = Query("exceptions_get_by_ids", lambda *, ids: None)

# db/queries/exceptions_read.sql:22
EXCEPTION_IDS_GET_BY_ITEM_IDS = Query("exception_ids_get_by_item_ids", lambda *, item_ids: None)

# db/queries/exceptions_read.sql:25
EXCEPTIONS_GET_ABOUT_ITEMS = Query("exceptions_get_about_items", lambda *, item_ids, apply_workflow: None)
"""Every exception about each item of :item_ids, for its audit pack (server/domain/quality/audit.py),
oldest first: the item's own (an exception's item) and those raised because one of its
decisions could not be carried out (workflow :apply_workflow, whose source record is the
decision id: exceptions_source). `about_item_id` names the item; `item_queue`,
`approval_queue` and `reason_owner_role` are, with the owner and escalation roles, the
queues that see the exception (ExceptionRecord.queues).
"""

# db/queries/exceptions_read.sql:52
EXCEPTIONS_GET_PAGE = Query("exceptions_get_page", lambda *, workflow, state, owner_role, overdue, source_record_id, after_id, queue_scope, page_size: None)
"""One page of exceptions, oldest first (ids sort by time), filtered; every filter is
optional (NULL). The caller's queue scope limits what it sees.
:owner_role is the effective owner (overdue evaluated as the claim would).
"""

# db/queries/exceptions_read.sql:80
EXCEPTION_EVENTS_GET_BY_EXCEPTION_IDS = Query("exception_events_get_by_exception_ids", lambda *, exception_ids: None)

# db/queries/exceptions_read.sql:85
EXCEPTION_CORRECTIONS_GET_BY_EXCEPTION_IDS = Query("exception_corrections_get_by_exception_ids", lambda *, exception_ids: None)
"""Every correction version of each exception, oldest first."""

# db/queries/exceptions_read.sql:91
EXCEPTION_REDRIVES_GET_BY_EXCEPTION_IDS = Query("exception_redrives_get_by_exception_ids", lambda *, exception_ids: None)

# db/queries/exceptions_read.sql:96
EXCEPTION_REDRIVE_GET = Query("exception_redrive_get", lambda *, redrive_key: None)

# db/queries/exceptions_read.sql:99
EXCEPTION_EVENT_GET_POSITION = Query("exception_event_get_position", lambda *, event_id: None)
"""Where an event sits in its workflow's commit-ordered stream."""

# db/queries/exceptions_read.sql:103
EXCEPTION_EVENTS_GET_AFTER_POSITION = Query("exception_events_get_after_position", lambda *, workflow, after_txid, after_id, page_size: None)
"""The next events of a workflow in commit-safe order (see decisions_get_after_position)."""

# db/queries/exceptions_read.sql:113
EXCEPTIONS_GET_BY_SOURCE_RECORD_ID = Query("exceptions_get_by_source_record_id", lambda *, source_record_id, workflow: None)
"""Every exception raised for :source_record_id, in :workflow when given, else in any
workflow. Served by exceptions_source_record (source_record_id); within a workflow a
record can have several (one open per reason code, exceptions_open_once, and any number
closed), so they come open first, then newest first, per workflow.
"""

# db/queries/exceptions_read.sql:124
EXCEPTIONS_GET_PAGE_BY_ACTIVITY = Query("exceptions_get_page_by_activity", lambda *, newest_first, after_at, after_id, workflow, state, owner_role, overdue, source_record_id, queue_scope, page_size: None)
"""One page of exceptions by latest activity (`updated_at`, which every change of an
exception sets), newest or oldest first as :newest_first says, ties by id, after the
keyset (:after_at, :after_id); the filters and the scope are exceptions_get_page's.
Served by exceptions_activity (updated_at, id), walked in either direction from the
keyset (an index condition); both orders are here, the one not asked for behind a
one-time filter, so a generic plan holds both. As in exceptions_get_page, the filters are
checked on the rows the walk reads.
"""
