"""The statements of db/queries/integration_sweeps.sql, as symbols.

Generated from db/queries/integration_sweeps.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/integration_sweeps.sql:15
OUTBOX_SWEEP_MARKS_START = Query("outbox_sweep_marks_start", lambda: None)
"""The (event type, queue) pairs an enabled endpoint subscribes to now, or an enabled
OVERDUE rule (notification_rules) watches (migration 0036); a pair seen for the first time gets
its mark at now(). `subscribed` 0: nothing to sweep (one probe of webhook_endpoints and
of notification_rules, what an idle deployment pays a round).
"""

# db/queries/integration_sweeps.sql:42
OUTBOX_SWEEP_LOCK = Query("outbox_sweep_lock", lambda: None)
"""One sweeper at a time across workers (the others skip the round): the transaction's own
advisory lock, released at its end.
"""

# db/queries/integration_sweeps.sql:47
ITEMS_SWEEP_OVERDUE = Query("items_sweep_overdue", lambda *, lookback_seconds, batch_size, settle_seconds: None)
"""item.overdue for waiting items whose due time passed since the queue's mark. `found`:
occurrences looked at; `written`: events written (0 for one a move already wrote).
"""

# db/queries/integration_sweeps.sql:106
LEASES_SWEEP_LAPSED = Query("leases_sweep_lapsed", lambda *, lookback_seconds, batch_size, settle_seconds: None)
"""lease.lapsed for leases that ran out, unnoticed, since the queue's mark (a claim, a move
or a revocation that notices one first writes it from the item's timeline, with the
same key). `found` and `written` as items_sweep_overdue's.
"""
