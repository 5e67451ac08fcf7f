"""The statements of db/queries/queues.sql, as symbols.

Generated from db/queries/queues.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/queues.sql:1
QUEUE_UPSERT = Query("queue_upsert", lambda *, second_review_queue, qa_queue, name, effect_kind, lease_ttl_seconds, max_abandons, escalation_queue, escalation_priority_boost, effect_target, effect_secret, effect_max_attempts, effect_timeout_seconds, reviewer_minutes_per_day, max_leases_per_reviewer, due_seconds, due_seconds_by_priority, hold_pauses_due, overdue_queue, overdue_priority_boost, second_review_verdicts, second_review_min_priority, qa_sample_rate, require_auth_within_seconds, require_acr, effect_legacy_headers: None)
"""Creates a queue, or changes the settings given (a NULL leaves a setting as it is). The
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
Step-up (migration 0023): :require_auth_within_seconds 0 and :require_acr '' clear them.
Standard Webhooks (migration 0032): :effect_legacy_headers also sends Casework-Signature and
Idempotency-Key (NULL leaves it; a new webhook starts without; an effect that is not a
webhook never has it). A new effect (:effect_kind given) replaces the secret at once: any
rotated-out secret still in its overlap stops signing (a rotation is the way to change
the secret of the same receiver without a gap).
"""

# db/queries/queues.sql:108
QUEUES_GET_BY_NAMES = Query("queues_get_by_names", lambda *, names: None)

# db/queries/queues.sql:111
QUEUES_LIST = Query("queues_list", lambda: None)

# db/queries/queues.sql:114
QUEUES_GET_HOLDER_ROLES = Query("queues_get_holder_roles", lambda *, names: None)

# db/queries/queues.sql:117
QUEUES_GET_BACKLOG = Query("queues_get_backlog", lambda *, queues: None)
"""The figures a backlog subscriber sees, for each queue of :queues: pending (claimable now:
under no live lease and not held), leased, and the age of the oldest pending item; and,
for Queue.stats, held (parked until a time), assigned (reserved for a named reviewer,
leased or not) and overdue (past its due time, leased or held or not). Pending, leased
and held add up to every waiting item. Walks the claim index only.
"""

# db/queries/queues.sql:144
QUEUE_EFFECT_SECRET_ROTATE = Query("queue_effect_secret_rotate", lambda *, queue, overlap_seconds, secret: None)
"""Rotates the signing secret of a queue whose effect is a webhook: :secret becomes the
current one, and the one it replaces keeps signing beside it for :overlap_seconds (0: it
stops at once). Rotated-out secrets already past their overlap are deleted on the way.
No row: the queue does not exist or its effect is not a webhook.
"""

# db/queries/queues.sql:180
QUEUE_EFFECT_SECRET_OVERLAPS = Query("queue_effect_secret_overlaps", lambda *, queues: None)
"""When the overlap of each queue's rotated-out effect secrets ends (the queues of :queues
that have one still signing).
"""
