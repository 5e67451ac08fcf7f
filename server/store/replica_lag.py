"""How far behind the read replica is, measured in the background, and its circuit.

Lag is measured against the primary's WAL position, not against a clock: every check reads
the primary's `pg_current_wal_lsn()`, then the replica's `pg_last_wal_replay_lsn()`. The
replica holds everything the primary had written at the moment of the latest sample whose
position it has replayed, so its data is at most `now - that moment` old. An idle primary
writes nothing, each sample is already replayed, and the lag reads as (about) 0, where
`now() - pg_last_xact_replay_timestamp()` would grow for as long as nobody writes. Positions
are compared by the database (`pg_lsn`), and moments are this process's monotonic clock:
no two servers' clocks are compared.

The replica is read only while the last check succeeded and the bound `now - fresh_as_of`
is within CASEWORK_READ_MAX_LAG_SECONDS. A read that finds the replica unreachable opens the
circuit at once (`trip`); only the next successful check closes it again. A check that
hangs cannot keep the circuit closed either: the bound grows with the clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import asyncpg

from server.observability.metrics import READ_REPLICA_LAG_SECONDS, READ_REPLICA_UP
from server.store.errors import is_unavailable

log = logging.getLogger("casework.replica")

CHECK_INTERVAL_SECONDS = 1.0
CHECK_TIMEOUT_SECONDS = 2.0
# Samples older than the newest replayed one are dropped; this caps the rest (a replica
# paused for an hour keeps an hour of one-a-second samples at most).
MAX_SAMPLES = 3600

_PRIMARY_POSITION = "SELECT pg_current_wal_lsn()::text"
# NULL on a server that is not a standby (pg_is_in_recovery() false).
_REPLICA_POSITION = (
    "SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replayed"
)
# The 1-based index of the newest sample at or before the replayed position, or NULL.
_NEWEST_REPLAYED = (
    "SELECT max(n) FROM unnest($1::text[]) WITH ORDINALITY AS sample(position, n) "
    "WHERE sample.position::pg_lsn <= $2::text::pg_lsn"
)


@dataclass(frozen=True)
class ReplicaStatus:
    """What /healthz shows."""

    up: bool
    # Seconds behind the primary at the last check; None before a successful one.
    lag_seconds: float | None
    # The bound a read served now would carry; None while the replica is not read.
    max_lag_seconds: float | None
    serving_reads: bool
    last_error: str | None
    checks: int
    trips: int

    def as_json(self) -> dict[str, Any]:
        return {
            "up": self.up,
            "lag_seconds": _rounded(self.lag_seconds),
            "max_lag_seconds": _rounded(self.max_lag_seconds),
            "serving_reads": self.serving_reads,
            "last_error": self.last_error,
            "checks": self.checks,
            "trips": self.trips,
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class ReplicaMonitor:
    """The background check of one replica against its primary, and the circuit."""

    def __init__(
        self,
        primary: asyncpg.Pool,
        replica: asyncpg.Pool,
        *,
        label: str,
        max_lag_seconds: float,
        timeout_seconds: float,
        interval_seconds: float = CHECK_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._primary = primary
        self._replica = replica
        self._max_lag = max_lag_seconds
        self.timeout_seconds = timeout_seconds
        # A check gives up after CHECK_TIMEOUT_SECONDS at most: it runs once a second.
        self._timeout = min(CHECK_TIMEOUT_SECONDS, timeout_seconds)
        self._interval = interval_seconds
        self._clock = clock
        self._label = label
        self._lag_gauge = READ_REPLICA_LAG_SECONDS.labels(label)
        self._up_gauge = READ_REPLICA_UP.labels(label)
        self._samples: deque[tuple[float, str]] = deque(maxlen=MAX_SAMPLES)
        self._fresh_as_of: float | None = None
        self._lag: float | None = None
        self._up = False
        self._last_error: str | None = None
        self._checks = 0
        self._trips = 0
        self._stopping = asyncio.Event()
        self._up_gauge.set(0)

    # --- the circuit, as the reads see it ---

    def max_lag_now(self) -> float | None:
        """How old the replica's data may be now, if it may be read; else None."""
        if not self._up or self._fresh_as_of is None:
            return None
        bound = self._clock() - self._fresh_as_of
        return bound if bound <= self._max_lag else None

    def trip(self, error: BaseException) -> None:
        """A read found the replica unreachable: no read goes there until a check succeeds."""
        self._trips += 1
        self._lost(error, expected=True)

    # --- the check ---

    async def run(self) -> None:
        while not self._stopping.is_set():
            await self.check()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self._interval)

    def stop(self) -> None:
        self._stopping.set()

    def forget(self) -> None:
        """Removes this replica's series: a stopped monitor measures nothing."""
        for gauge in (READ_REPLICA_LAG_SECONDS, READ_REPLICA_UP):
            with contextlib.suppress(KeyError):
                gauge.remove(self._label)

    async def check(self) -> None:
        try:
            try:
                async with asyncio.timeout(self._timeout):
                    sampled_at = self._clock()
                    position = await self._primary.fetchval(_PRIMARY_POSITION)
            except Exception:
                # The primary's own trouble (an outage, a busy pool, a failover under way)
                # is not the replica's, and is reported where it is felt; without a new
                # sample the bound can only grow, never shrink.
                return
            self._samples.append((sampled_at, position))
            try:
                async with asyncio.timeout(self._timeout), self._replica.acquire() as conn:
                    row = await conn.fetchrow(_REPLICA_POSITION)
                    if not row["standby"] or row["replayed"] is None:
                        raise NotAStandby("the read database is not a streaming standby")
                    await self._advance(conn, row["replayed"])
            except Exception as error:
                self._lost(error, expected=is_unavailable(error) or isinstance(error, NotAStandby))
            else:
                self._found()
        finally:
            self._checks += 1
            self._publish()

    async def _advance(self, conn: asyncpg.Connection, replayed: str) -> None:
        """fresh_as_of := the moment of the newest sample the replica has replayed."""
        newest = await conn.fetchval(
            _NEWEST_REPLAYED, [position for _, position in self._samples], replayed
        )
        if newest is None:
            # Behind every retained sample: what it holds is at least as old as before.
            return
        moment = self._samples[newest - 1][0]
        for _ in range(newest - 1):
            self._samples.popleft()
        if self._fresh_as_of is None or moment > self._fresh_as_of:
            self._fresh_as_of = moment

    def _found(self) -> None:
        if not self._up:
            if self._last_error is not None:
                log.warning("read replica: reachable again; reads may go to it")
            self._up = True
        self._last_error = None

    def _lost(self, error: BaseException, *, expected: bool) -> None:
        """One line when it is lost (with the traceback if the failure is not an outage),
        none while it stays lost."""
        if self._up or self._last_error is None:
            log.warning(
                "read replica: unavailable (%s); reads go to the primary until a check "
                "finds it again",
                _describe(error),
                exc_info=None if expected else error,
            )
        self._up = False
        self._last_error = _describe(error)
        self._publish()

    def _publish(self) -> None:
        # Down, the figure goes on growing: an alert on the lag also sees a dead replica.
        if self._fresh_as_of is not None:
            self._lag = max(0.0, self._clock() - self._fresh_as_of)
            self._lag_gauge.set(self._lag)
        self._up_gauge.set(1 if self._up else 0)

    def status(self) -> ReplicaStatus:
        bound = self.max_lag_now()
        return ReplicaStatus(
            up=self._up,
            lag_seconds=self._lag,
            max_lag_seconds=bound,
            serving_reads=bound is not None,
            last_error=self._last_error,
            checks=self._checks,
            trips=self._trips,
        )


class NotAStandby(Exception):
    pass


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0] if text else type(error).__name__


async def wait_replayed(
    primary: asyncpg.Connection, replica: asyncpg.Connection, within_seconds: float
) -> float | None:
    """Waits until the replica has replayed what the primary had written when this was
    called: from then on, it holds everything committed before. Returns the seconds that
    took, or None when it is not a standby or was still behind after `within_seconds`."""
    started = time.monotonic()
    position = await primary.fetchval(_PRIMARY_POSITION)
    while True:
        row = await replica.fetchrow(_REPLICA_POSITION)
        if not row["standby"] or row["replayed"] is None:
            return None
        if await replica.fetchval(_NEWEST_REPLAYED, [position], row["replayed"]) is not None:
            return time.monotonic() - started
        if time.monotonic() - started > within_seconds:
            return None
        await asyncio.sleep(0.05)
