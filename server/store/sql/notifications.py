"""The statements of db/queries/notifications.sql, as symbols.

Generated from db/queries/notifications.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/notifications.sql:7
NOTIFICATION_CHANNEL_INSERT = Query("notification_channel_insert", lambda *, id, name, kind, target, rate_per_minute, digest_minutes, enabled, created_by: None)

# db/queries/notifications.sql:14
NOTIFICATION_CHANNELS_GET = Query("notification_channels_get", lambda *, ids: None)
"""Channels by id (NULL: every channel), by name, each with its rules and its pending and
failed notifications.
"""

# db/queries/notifications.sql:28
NOTIFICATION_CHANNEL_UPDATE = Query("notification_channel_update", lambda *, name, target, rate_per_minute, digest_minutes, enabled, id: None)
"""Every setting at once (the caller merged what it was given with what was there)."""

# db/queries/notifications.sql:37
NOTIFICATION_CHANNEL_DELETE = Query("notification_channel_delete", lambda *, id: None)
"""Refused (no row) while a rule sends to it; its notifications go with it."""

# db/queries/notifications.sql:44
NOTIFICATION_RULE_INSERT = Query("notification_rule_insert", lambda *, id, name, event, queues, workflows, unclaimed_after_seconds, channel_id, enabled, created_by: None)

# db/queries/notifications.sql:52
NOTIFICATION_RULES_GET = Query("notification_rules_get", lambda *, ids: None)
"""Rules by id (NULL: every rule), by name, with their channel's name."""

# db/queries/notifications.sql:60
NOTIFICATION_RULE_UPDATE = Query("notification_rule_update", lambda *, name, event, queues, workflows, unclaimed_after_seconds, channel_id, enabled, id: None)

# db/queries/notifications.sql:69
NOTIFICATION_RULE_DELETE = Query("notification_rule_delete", lambda *, id: None)
"""Its notifications, sent or not, go with it."""

# db/queries/notifications.sql:73
NOTIFICATION_UNCLAIMED_SWEEP = Query("notification_unclaimed_sweep", lambda *, batch_size: None)
"""item.unclaimed, for rules only: per enabled UNCLAIMED rule of an enabled channel, at most
:batch_size pending items of its queues nobody holds (no live lease, no hold) that have
waited longer than its bound since casework_unclaimed_since (0036). The event and the rule's delivery row are
written together; the key (rule, item, since) makes a second sweep, or a second worker,
write nothing. Items a claim or a decision is changing are skipped (SKIP LOCKED) for
the next round. `written`: notifications written.
"""

# db/queries/notifications.sql:132
NOTIFICATION_SWEEP_LOCK = Query("notification_sweep_lock", lambda: None)
"""One unclaimed sweeper at a time across workers (the others skip the round)."""

# db/queries/notifications.sql:136
NOTIFICATION_CHANNELS_DUE = Query("notification_channels_due", lambda *, channel_limit: None)
"""Channels with a delivery row due now (pending, its time come, not in flight), each
locked by one claimer at a time (SKIP LOCKED: another worker takes other channels), with
what its rate limit and its digest need: messages sent in the last minute (a digest's
rows share their sent_at: one message), messages in flight, and the last digest's time.
"""

# db/queries/notifications.sql:164
NOTIFICATION_DELIVERIES_CLAIM = Query("notification_deliveries_claim", lambda *, channel_id, batch_size, lock_seconds: None)
"""Up to :batch_size due notifications of one channel, oldest first, locked for
:lock_seconds (one lock time for all: a digest's rows are one message). Each with what
its notice is built from: the event's data and the rule, never the item's payload.
"""

# db/queries/notifications.sql:193
NOTIFICATION_DELIVERIES_RECORD_SENT = Query("notification_deliveries_record_sent", lambda *, ids, attempts: None)
"""Sent, for the attempts made by this claim only (the fence: (id, attempts) pairs); one
statement, so a digest's rows share their sent_at.
"""

# db/queries/notifications.sql:202
NOTIFICATION_DELIVERIES_RECORD_FAILURE = Query("notification_deliveries_record_failure", lambda *, permanent, max_attempts, next_attempt_at, error, ids, attempts: None)
"""A failed attempt: tried again at :next_attempt_at, or failed for good when :permanent or
when :max_attempts are spent.
"""
