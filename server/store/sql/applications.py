"""The statements of db/queries/applications.sql, as symbols.

Generated from db/queries/applications.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _applications_claim(
    *,
    batch_size: Any,
) -> None: ...


APPLICATIONS_CLAIM = Query("applications_claim", _applications_claim)
"""db/queries/applications.sql:1

Takes up to :batch_size due applications for one attempt each, under a lock that lapses
if the worker dies, long enough for the queue's effect timeout. Returns what the effect needs,
including the outcome an overturn reverses. Only effective decisions are ever on this
list: decision_submit enlists a provisional one only once decision_confirm confirms it.
"""


def _application_record_applied(
    *,
    decision_id: Any,
    note: Any,
    attempt: Any,
    worker: Any,
    started_at: Any,
) -> None: ...


APPLICATION_RECORD_APPLIED = Query("application_record_applied", _application_record_applied)
"""db/queries/applications.sql:40

The proof of application, once per decision: a second recording of the same decision
(a lapsed lock, a concurrent worker) changes nothing and returns applied = false.
"""


def _application_record_failure(
    *,
    permanent: Any,
    next_attempt_at: Any,
    error: Any,
    decision_id: Any,
    attempt: Any,
    worker: Any,
    started_at: Any,
) -> None: ...


APPLICATION_RECORD_FAILURE = Query("application_record_failure", _application_record_failure)
"""db/queries/applications.sql:64

A failed attempt: retried at :next_attempt_at unless it was permanent or the last one
allowed (counted from the latest redrive), in which case the application is `failed` and
a person gets an exception to own.
Fence: the work list changes only if this is still the latest attempt (:attempt) of a
pending application (an attempt that outlived its lock must not undo the one that took
over); the history row is written either way.
The error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
"""


def _applications_get_by_decision_ids(
    *,
    decision_ids: Any,
) -> None: ...


APPLICATIONS_GET_BY_DECISION_IDS = Query(
    "applications_get_by_decision_ids", _applications_get_by_decision_ids
)
"""db/queries/applications.sql:98"""


def _application_attempts_get_by_decision_ids(
    *,
    decision_ids: Any,
) -> None: ...


APPLICATION_ATTEMPTS_GET_BY_DECISION_IDS = Query(
    "application_attempts_get_by_decision_ids", _application_attempts_get_by_decision_ids
)
"""db/queries/applications.sql:104"""


def _applications_get_queue_lag(
    *,
    queues: Any,
    threshold_seconds: Any,
) -> None: ...


APPLICATIONS_GET_QUEUE_LAG = Query("applications_get_queue_lag", _applications_get_queue_lag)
"""db/queries/applications.sql:110

"A human decided and the system did not carry it out", for each queue of :queues:
unapplied decisions older than the threshold, the age of the oldest, and the failed ones.
"""
