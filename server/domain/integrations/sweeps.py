"""The time-based events: item.overdue and lease.lapsed.

Every other event is written by a trigger in the transaction of the change that makes it
(migration 0033). These two have no such change: a due time or the end of a lease simply
passes. The apply worker sweeps for them every few seconds (db/queries/integration_sweeps.sql):

- cheap when nobody listens: one probe of webhook_endpoints a round, nothing written;
- bounded: at most `batch_size` occurrences per subscribed queue and type a round, walking
  the partial indexes the claim path keeps, from a mark per (type, queue), never further
  back than `lookback_seconds`, never back past the moment an endpoint first subscribed;
- once: each occurrence has a dedupe key (`item.overdue:<item>:<due time>`,
  `lease.lapsed:<lease token>`), the same the triggers use when a claim or the overdue move
  notices it first, so two sweepers, or a sweeper and a claim, write it once;
- one sweeper at a time: a transaction-scoped advisory lock; the others skip the round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from server.store import sql
from server.store.database import Database

log = logging.getLogger("casework.worker")


@dataclass(frozen=True)
class SweepSettings:
    # Occurrences per subscribed queue and type in one round.
    batch_size: int = 200
    # Never further back than this (an endpoint re-enabled after a week gets no week of them).
    lookback_seconds: float = 86_400.0
    # How long a round looks back again for an item another transaction had locked.
    settle_seconds: float = 30.0
    # Between rounds.
    interval_seconds: float = 5.0


@dataclass(frozen=True)
class SweepResult:
    overdue_found: int = 0
    overdue_written: int = 0
    lapsed_found: int = 0
    lapsed_written: int = 0
    # False: nobody subscribes, or another sweeper held the round.
    swept: bool = False


async def sweep_time_events(db: Database, settings: SweepSettings) -> SweepResult:
    """One round. Raises what the database raised."""
    start = await db.fetchrow(sql.integration_sweeps.OUTBOX_SWEEP_MARKS_START)
    if start is None or not start["subscribed"]:
        return SweepResult()
    bounds = {
        "batch_size": settings.batch_size,
        "lookback_seconds": settings.lookback_seconds,
        "settle_seconds": settings.settle_seconds,
    }
    async with db.transaction() as tx:
        locked = await tx.fetchrow(sql.integration_sweeps.OUTBOX_SWEEP_LOCK)
        if locked is None or not locked["locked"]:
            return SweepResult()
        overdue = await tx.fetchrow(sql.integration_sweeps.ITEMS_SWEEP_OVERDUE, **bounds)
        lapsed = await tx.fetchrow(sql.integration_sweeps.LEASES_SWEEP_LAPSED, **bounds)
    assert overdue is not None
    assert lapsed is not None
    return SweepResult(
        overdue_found=int(overdue["found"]),
        overdue_written=int(overdue["written"]),
        lapsed_found=int(lapsed["found"]),
        lapsed_written=int(lapsed["written"]),
        swept=True,
    )


async def sweep_until_stopped(
    db: Database, settings: SweepSettings, stopping: asyncio.Event
) -> None:
    """The apply worker's sweeper: a round every interval until `stopping` is set. A failed
    round (the database away) is one log line until a round succeeds again."""
    failing = False
    while not stopping.is_set():
        try:
            await sweep_time_events(db, settings)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not failing:
                log.warning("time-event sweep failed, will retry: %s", error)
            failing = True
        else:
            if failing:
                log.info("time-event sweep works again")
            failing = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), settings.interval_seconds)
