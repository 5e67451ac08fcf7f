"""Due times: when a waiting item should have been decided, and what happens after.

- A queue's `due_seconds`, optionally by priority (`due_seconds_by_priority`: the entry with
  the highest min_priority at or below an item's priority), gives each new item a due time
  at enqueue; an enqueue may name its own. The SQL function review_due_seconds (migration
  0014) applies the rule, so that the enqueue and the overdue move read it alike.
- An item past its due time is overdue. A queue that names an `overdue_queue` hands none
  of its overdue items out: the claim path moves them there, priority raised (no cron).
- A hold stops the clock only where the queue says so (`hold_pauses_due`): the hold then
  moves the due time on by its whole length, and ending it early gives back the rest.
- Nothing is written when an item falls due: each process's timer announces OVERDUE to its
  own subscribers (server/events/expiry.py), as it does lease expiry.
"""

from __future__ import annotations

from collections.abc import Sequence

from server.domain.failures import InvalidInput
from server.domain.model import PRIORITY_LIMIT, DueByPriority
from server.store import sql
from server.store.database import Database

# The longest due time a queue may set: a year and a day.
MAX_DUE_SECONDS = 366 * 86400
MAX_DUE_RULES = 20


def check_due_seconds(value: int | None, field: str) -> InvalidInput | None:
    """0 clears the setting; None leaves it as it is."""
    if value is not None and not 0 <= value <= MAX_DUE_SECONDS:
        return InvalidInput(f"{field} must be between 1 and {MAX_DUE_SECONDS} (0 clears it)", field)
    return None


def check_due_rules(rules: Sequence[DueByPriority] | None) -> InvalidInput | None:
    if rules is None:
        return None
    field = "dueSecondsByPriority"
    if len(rules) > MAX_DUE_RULES:
        return InvalidInput(f"{field} takes at most {MAX_DUE_RULES} entries", field)
    seen: set[int] = set()
    for index, rule in enumerate(rules):
        where = f"{field}[{index}]"
        if not -PRIORITY_LIMIT <= rule.min_priority <= PRIORITY_LIMIT:
            return InvalidInput(
                f"{where}.minPriority must be between -{PRIORITY_LIMIT} and {PRIORITY_LIMIT}",
                f"{where}.minPriority",
            )
        if rule.min_priority in seen:
            return InvalidInput(
                f"{where}.minPriority {rule.min_priority} appears twice", f"{where}.minPriority"
            )
        seen.add(rule.min_priority)
        if not 1 <= rule.due_seconds <= MAX_DUE_SECONDS:
            return InvalidInput(
                f"{where}.dueSeconds must be between 1 and {MAX_DUE_SECONDS}",
                f"{where}.dueSeconds",
            )
    return None


def stored_rules(rules: Sequence[DueByPriority]) -> list[dict[str, int]]:
    """As queues.due_seconds_by_priority holds them, lowest threshold first."""
    return [
        {"min_priority": rule.min_priority, "due_seconds": rule.due_seconds}
        for rule in sorted(rules, key=lambda rule: rule.min_priority)
    ]


async def escalate_overdue_items(db: Database, queue: str) -> int:
    """Moves a bounded batch of the queue's overdue items to its overdue queue; returns
    how many moved. The claim calls it when its statement says some wait."""
    row = await db.fetchrow(sql.due.ITEMS_ESCALATE_OVERDUE, queue=queue)
    assert row is not None, "an aggregate always returns a row"
    return int(row["escalated"])
