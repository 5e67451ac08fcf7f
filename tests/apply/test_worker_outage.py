"""The apply worker while PostgreSQL is away: a PostgreSQL of the test's own is stopped, and
the worker's claim rounds back off (capped, jittered: each wait at least half the doubling
base) instead of polling at its own rhythm; the log says lost and back once each, without a
traceback; once the database is back, the worker claims again within its current backoff and
carries out a decision made after the restart."""

from __future__ import annotations

import asyncio
import itertools
import logging

import pytest

from server.effects.http import Session
from server.events.outage import BACKOFF_FIRST_SECONDS, BACKOFF_MAX_SECONDS
from server.store.database import Database
from server.store.errors import is_unavailable
from server.store.queries import Queries
from server.worker import ApplyWorker, WorkerSettings
from tests import pg
from tests.apply.helpers import effect_receiver, make_decision, running, wait_until
from tests.conftest import pooled, setup_kyc
from tests.live.helpers import RECOVER_WITHIN_SECONDS, migrated_database, private_postgres

# A worker that polled through an outage would claim 20 times a second.
SETTINGS = WorkerSettings(
    concurrency=2, backoff_seconds=0.05, poll_seconds=0.05, grace_seconds=2, lease_seconds=30
)
# Failed claim rounds to see before the database comes back: waits of 0.1-0.2, 0.2-0.4,
# 0.4-0.8 and 0.8-1.6 s between them.
FAILED_ROUNDS = 5
LOST = "apply worker: the database is unavailable"
BACK = "apply worker: the database is back; resuming"


def backoff_floor(failures: int) -> float:
    """The shortest wait Retrying.delay gives after `failures` failures (jitter x0.5)."""
    return 0.5 * min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2.0 ** (failures - 1))


def backoff_ceiling(failures: int) -> float:
    return min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2.0 ** (failures - 1))


class RoundLog(ApplyWorker):
    """The real worker; each claim round noted (when it began, whether the database answered)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, SETTINGS, name="outage")
        self.rounds: list[tuple[float, bool]] = []
        # Rounds that failed otherwise than for an outage, and what they raised.
        self.other_failures: list[str] = []

    async def _start(self, client: Session, free: int) -> int:
        began = asyncio.get_running_loop().time()
        try:
            started = await super()._start(client, free)
        except Exception as error:
            if is_unavailable(error):
                self.rounds.append((began, False))
            else:
                self.other_failures.append(f"{type(error).__name__}: {error}")
            raise
        self.rounds.append((began, True))
        return started

    def failed_since(self, moment: float) -> list[float]:
        return [began for began, answered in self.rounds if not answered and began >= moment]

    def answered_since(self, moment: float) -> list[float]:
        return [began for began, answered in self.rounds if answered and began >= moment]


async def test_the_worker_backs_off_while_the_database_is_away_and_applies_after(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="casework.worker")
    loop = asyncio.get_running_loop()
    queries = Queries(pg.QUERIES_DIR)
    async with private_postgres() as postgres:
        database = await migrated_database(postgres.server_dsn)
        async with pooled(database.app_dsn, queries, max_size=4) as db:
            await setup_kyc(db)
            worker = RoundLog(db)
            async with effect_receiver(db, "kyc") as receiver, running(worker):
                before = await make_decision(db, "kyc", "before")
                assert (await receiver.next_arrival()).key == str(before)

                async def recorded() -> bool:
                    return worker.stats.applied == 1

                await wait_until(recorded, within=10, what="the first decision recorded")

                await postgres.stop()
                stopped = loop.time()

                async def backed_off_enough() -> int:
                    failed = len(worker.failed_since(stopped))
                    return failed if failed >= FAILED_ROUNDS else 0

                await wait_until(backed_off_enough, within=15, what="failed claim rounds")
                await postgres.start()
                restarted = loop.time()
                # The test's own pool lost its connections too: a fresh one writes.
                async with pooled(database.app_dsn, queries, max_size=2) as fresh:
                    after = await make_decision(fresh, "kyc", "after")
                arrived = await receiver.next_arrival(within=RECOVER_WITHIN_SECONDS)

                async def said_back() -> bool:
                    return any(record.getMessage() == BACK for record in caplog.records)

                await wait_until(said_back, within=RECOVER_WITHIN_SECONDS, what="back, in the log")

    assert arrived.key == str(after)
    # The outage's failed rounds, the first of which may have met the shutting-down server.
    failed = worker.failed_since(0.0)
    # Every failure was the outage: none logged in full as a fault of Casework's own (asyncpg's
    # "cannot switch to state 12" on a connection whose backend just died is an outage too).
    assert worker.other_failures == []
    # Each wait is at least the floor of its backoff step: no polling at its own rhythm.
    gaps = [later - earlier for earlier, later in itertools.pairwise(failed)]
    for failures, gap in enumerate(gaps, start=1):
        assert gap >= backoff_floor(failures) - 0.01, (failures, gaps)
    # Back within the wait it was in when the database returned (plus reconnecting).
    first_answer = worker.answered_since(stopped)[0]
    assert first_answer - failed[-1] <= backoff_ceiling(len(failed)) + 2.0, (failed, first_answer)
    assert first_answer - restarted <= BACKOFF_MAX_SECONDS + 2.0

    records = [record for record in caplog.records if record.name == "casework.worker"]
    lines = [record.getMessage() for record in records]
    assert len([line for line in lines if line.startswith(LOST)]) == 1, lines
    assert [line for line in lines if line.startswith(BACK)] == [BACK], lines
    assert len([record for record in records if record.exc_info]) == len(worker.other_failures)
    assert worker.stats.applied == 2
