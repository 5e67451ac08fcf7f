"""The statements of db/queries/queues.sql, as symbols.

Generated from db/queries/queues.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from typing import Any

from server.store.queries import Query


def _queue_upsert(
    *,
    second_review_queue: Any,
    qa_queue: Any,
    name: Any,
    lease_ttl_seconds: Any,
    max_abandons: Any,
    escalation_queue: Any,
    escalation_priority_boost: Any,
    effect_kind: Any,
    effect_target: Any,
    effect_secret: Any,
    effect_max_attempts: Any,
    effect_timeout_seconds: Any,
    reviewer_minutes_per_day: Any,
    max_leases_per_reviewer: Any,
    due_seconds: Any,
    due_seconds_by_priority: Any,
    hold_pauses_due: Any,
    overdue_queue: Any,
    overdue_priority_boost: Any,
    second_review_verdicts: Any,
    second_review_min_priority: Any,
    qa_sample_rate: Any,
) -> None: ...


QUEUE_UPSERT = Query("queue_upsert", _queue_upsert)
"""db/queries/queues.sql:1

Creates a queue, or changes the settings given (a NULL leaves a setting as it is). The
effect's kind and target change together (:effect_kind NULL leaves both).
:effect_timeout_seconds is cast: from `coalesce(:effect_timeout_seconds, 10)` alone
PostgreSQL infers an integer, and asyncpg then truncates a timeout of 0.5 s to 0.
The claim controls can also be cleared: a lease limit or due time of 0 and an
overdue queue of '' mean "none" (:due_seconds_by_priority '[]' clears that list).
Second review (migration 0020): :second_review_verdicts NULL leaves the three settings
as they are; a list sets all three (an empty one turns second review off, and the queue
and minimum priority go with it). The second-review queue is created here, with the
defaults (worked by reviewers), when it does not exist yet: its foreign key is checked
at the end of the statement, after that insert.
QA sampling (migration 0021): :qa_queue names the queue the sampled decisions are copied
to; it is created here (holder role reviewer, every other setting its default) when it
does not exist yet. The foreign key is checked at the end of the statement, so the new
row satisfies it.
"""


def _queues_get_by_names(
    *,
    names: Any,
) -> None: ...


QUEUES_GET_BY_NAMES = Query("queues_get_by_names", _queues_get_by_names)
"""db/queries/queues.sql:85"""


def _queues_list() -> None: ...


QUEUES_LIST = Query("queues_list", _queues_list)
"""db/queries/queues.sql:88"""


def _queues_get_holder_roles(
    *,
    names: Any,
) -> None: ...


QUEUES_GET_HOLDER_ROLES = Query("queues_get_holder_roles", _queues_get_holder_roles)
"""db/queries/queues.sql:91"""


def _queues_get_backlog(
    *,
    queues: Any,
) -> None: ...


QUEUES_GET_BACKLOG = Query("queues_get_backlog", _queues_get_backlog)
"""db/queries/queues.sql:94

The figures a backlog subscriber sees, for each queue of :queues: pending (claimable now:
under no live lease and not held), leased, and the age of the oldest pending item; and,
for Queue.stats, held (parked until a time), assigned (reserved for a named reviewer,
leased or not) and overdue (past its due time, leased or held or not). Pending, leased
and held add up to every waiting item. Walks the claim index only.
"""
