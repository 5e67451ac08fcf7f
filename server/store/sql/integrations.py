"""The statements of db/queries/integrations.sql, as symbols.

Generated from db/queries/integrations.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/integrations.sql:6
WEBHOOK_ENDPOINT_INSERT = Query("webhook_endpoint_insert", lambda *, id, url, description, event_types, queues, workflows, format, legacy_headers, max_attempts, timeout_seconds, created_by, secret: None)
"""A new endpoint and its first secret."""

# db/queries/integrations.sql:21
WEBHOOK_ENDPOINTS_GET = Query("webhook_endpoints_get", lambda *, ids: None)
"""Endpoints by id (NULL: every endpoint), oldest first, each with the creation and expiry of
the secrets that sign now (newest first) and its deliveries waiting or failed.
"""

# db/queries/integrations.sql:39
WEBHOOK_ENDPOINT_UPDATE = Query("webhook_endpoint_update", lambda *, url, description, event_types, queues, workflows, format, legacy_headers, max_attempts, timeout_seconds, id: None)
"""Every setting at once (the caller merged what it was given with what was there)."""

# db/queries/integrations.sql:49
WEBHOOK_ENDPOINT_DISABLE = Query("webhook_endpoint_disable", lambda *, reason, id: None)
"""New events are not recorded for a disabled endpoint; its pending deliveries wait."""

# db/queries/integrations.sql:56
WEBHOOK_ENDPOINT_ENABLE = Query("webhook_endpoint_enable", lambda *, id: None)
"""Its pending deliveries fall due now, each with a fresh round of attempts."""

# db/queries/integrations.sql:74
WEBHOOK_ENDPOINT_DELETE = Query("webhook_endpoint_delete", lambda *, id: None)
"""Its secrets and deliveries go with it; the events stay until retention prunes them."""

# db/queries/integrations.sql:78
WEBHOOK_ENDPOINT_ROTATE_SECRET = Query("webhook_endpoint_rotate_secret", lambda *, id, overlap_seconds, secret: None)
""":secret signs from now on; every secret signing now keeps signing beside it for
:overlap_seconds more (at most: one already ending sooner ends as planned), and secrets
whose time is over are forgotten.
"""

# db/queries/integrations.sql:96
WEBHOOK_DELIVERIES_PAGE = Query("webhook_deliveries_page", lambda *, endpoint_id, state, before_event_id, row_limit: None)
"""An endpoint's deliveries, newest event first, in :state (NULL: any), before the event
:before_event_id (NULL: from the newest).
"""

# db/queries/integrations.sql:111
WEBHOOK_DELIVERY_GET = Query("webhook_delivery_get", lambda *, endpoint_id, message_id: None)
"""One delivery, by its endpoint and the event's webhook-id."""

# db/queries/integrations.sql:121
WEBHOOK_DELIVERY_REPLAY = Query("webhook_delivery_replay", lambda *, endpoint_id, message_id: None)
"""A delivered or failed delivery goes out again, same webhook-id, with a fresh round of
attempts: at once, or after the subject's delivery pending now (the caller holds the
subject's lock, outbox_subject_lock). It is then the first of the line (the oldest event).
"""

# db/queries/integrations.sql:136
OUTBOX_SUBJECT_LOCK = Query("outbox_subject_lock", lambda *, ordering_key: None)
"""The lock casework_outbox_emit takes for the subject, held to the end of the transaction:
a subject's turn is handed on, or a replay queued, while no event of it is being added.
"""

# db/queries/integrations.sql:141
OUTBOX_DELIVERY_NEXT_TURN = Query("outbox_delivery_next_turn", lambda *, endpoint_id, ordering_key: None)
"""After a delivery of the subject left the line (delivered or failed): the first pending one
falls due now, if it was waiting. The caller holds outbox_subject_lock.
"""

# db/queries/integrations.sql:153
OUTBOX_DELIVERIES_REPAIR_TURNS = Query("outbox_deliveries_repair_turns", lambda: None)
"""A safety net, run with retention: a waiting delivery with nothing pending before it falls
due (none should be found; the turn is handed on when a delivery leaves the line).
"""

# db/queries/integrations.sql:164
WEBHOOK_ENDPOINTS_ANY_ENABLED = Query("webhook_endpoints_any_enabled", lambda: None)
"""Whether any endpoint takes deliveries: a worker that finds none leaves the claim below
out until it looks again, so a deployment without endpoints pays one probe per poll
interval instead of a claim per decision.
"""

# db/queries/integrations.sql:170
OUTBOX_DELIVERIES_CLAIM = Query("outbox_deliveries_claim", lambda *, batch_size: None)
"""Takes up to :batch_size due deliveries for one attempt each. Only the first pending
delivery of each (endpoint, subject) is due (the others are waiting_turn): a subject's
events go out one at a time, in event id order, and a retry holds back the ones behind
it. The NOT EXISTS re-checks the order on the few heads read. Endpoints disabled are
skipped.
"""

# db/queries/integrations.sql:215
OUTBOX_DELIVERY_RECORD_DELIVERED = Query("outbox_delivery_record_delivered", lambda *, status, endpoint_id, event_id, attempt: None)
"""Fence: only the latest attempt (:attempt) of a pending delivery counts."""

# db/queries/integrations.sql:224
OUTBOX_DELIVERY_RECORD_FAILURE = Query("outbox_delivery_record_failure", lambda *, permanent, next_attempt_at, status, error, endpoint_id, event_id, attempt: None)
"""Retried at :next_attempt_at, unless :permanent or the round's last attempt: then
`failed` (an admin may replay it). Fence: as for outbox_delivery_record_delivered.
:error arrives cut to size (text.RECEIVER_TEXT_LIMIT).
"""

# db/queries/integrations.sql:241
OUTBOX_DELIVERY_RECORD_GONE = Query("outbox_delivery_record_gone", lambda *, error, endpoint_id, event_id, attempt, reason: None)
"""The receiver answered 410: the endpoint is disabled (:reason), whichever attempt this
was, and the delivery stays pending for a re-enable. `disabled` is true when this call
disabled it (false: it was disabled already).
"""

# db/queries/integrations.sql:261
OUTBOX_PRUNE = Query("outbox_prune", lambda *, keep_seconds, batch_size: None)
"""Retention (casework_outbox_prune): events older than :keep_seconds with nothing pending."""
