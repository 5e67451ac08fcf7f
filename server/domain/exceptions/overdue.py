"""Overdue exceptions change owner when someone next claims work, so no cron job is needed.

The review loop's claim calls `escalate_overdue_exceptions` when its claim statement says
overdue exceptions are waiting for the queue. This is the one place the review-loop core
reaches into the exceptions package, and the import-linter contract that keeps the two
apart names this import as its only exception.
"""

from __future__ import annotations

from server.store import sql
from server.store.database import Database


async def escalate_overdue_exceptions(db: Database, queue: str) -> int:
    """Move exceptions waiting past their due time in or out of `queue` to their escalation
    owner, at most a bounded batch per call; returns how many moved."""
    row = await db.fetchrow(sql.exceptions.EXCEPTIONS_ESCALATE_OVERDUE, queue=queue)
    assert row is not None, "an aggregate always returns a row"
    return int(row["escalated"])
