"""The rule of which read may go to the read replica (server/store/routing.py) and the lag
check's arithmetic (server/store/replica_lag.py), without a database: the real streaming
replica is tests/ha/test_read_replica.py's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import asyncpg
import pytest

from server.observability.metrics import READ_REPLICA_LAG_SECONDS, READ_REPLICA_UP
from server.store import sql
from server.store.database import Database
from server.store.queries import Queries
from server.store.replica_lag import ReplicaMonitor
from server.store.routing import MAY_LAG, ReadKind, ReadRouter, Reads, ReplicaDatabase, may_lag
from tests.pg import QUERIES_DIR


def test_only_what_a_person_looks_at_may_lag() -> None:
    assert (
        {kind for kind in ReadKind if may_lag(kind)}
        == MAY_LAG
        == {
            ReadKind.MEASURES,
            ReadKind.DASHBOARD,
            ReadKind.QUEUE_LIST,
            ReadKind.MANAGER_ITEM,
            ReadKind.AUDIT_PACK,
            ReadKind.EXPORT,
            ReadKind.SEARCH,
        }
    )


@pytest.mark.parametrize(
    "kind",
    [
        ReadKind.FENCE,
        ReadKind.CLAIM,
        ReadKind.DECISION,
        ReadKind.STREAM_POSITION,
        ReadKind.OWN_ITEM,
        ReadKind.CONFIGURATION,
    ],
)
def test_what_a_write_depends_on_reads_the_primary(kind: ReadKind) -> None:
    assert not may_lag(kind)


LABEL = "unit:1/casework"


@pytest.fixture(autouse=True)
def no_series_left() -> Iterator[None]:
    """The monitors here set the process's replica gauges: removed after each test, so that
    no other test of this process sees a replica that it did not configure."""
    yield
    for gauge in (READ_REPLICA_LAG_SECONDS, READ_REPLICA_UP):
        with contextlib.suppress(KeyError):
            gauge.remove(LABEL)


def lsn(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def number(position: str) -> int:
    high, low = position.split("/")
    return (int(high, 16) << 32) | int(low, 16)


class FakePrimary:
    """pg_current_wal_lsn() of a primary whose position the test moves."""

    def __init__(self) -> None:
        self.position = 0x3000000

    async def fetchval(self, statement: str) -> str:
        assert "pg_current_wal_lsn" in statement
        return lsn(self.position)


class FakeReplica:
    """A standby's replayed position, and the sample comparison the database makes."""

    def __init__(self) -> None:
        self.replayed = 0x3000000
        self.standby = True
        self.down: Exception | None = None

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[FakeReplica]:
        if self.down is not None:
            raise self.down
        yield self

    async def fetchrow(self, statement: str) -> dict[str, Any]:
        return {"standby": self.standby, "replayed": lsn(self.replayed) if self.standby else None}

    async def fetchval(self, statement: str, positions: list[str], replayed: str) -> int | None:
        found = [n for n, p in enumerate(positions, 1) if number(p) <= number(replayed)]
        return max(found) if found else None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def monitor(max_lag: float = 5.0) -> tuple[ReplicaMonitor, FakePrimary, FakeReplica, Clock]:
    primary, replica, clock = FakePrimary(), FakeReplica(), Clock()
    found = ReplicaMonitor(
        cast(asyncpg.Pool, primary),
        cast(asyncpg.Pool, replica),
        label=LABEL,
        max_lag_seconds=max_lag,
        timeout_seconds=1.0,
        clock=clock,
    )
    return found, primary, replica, clock


async def test_an_idle_primary_is_no_lag_however_long_nothing_is_written() -> None:
    checked, _, _, clock = monitor()
    assert checked.max_lag_now() is None  # nothing measured yet: the primary
    for _ in range(10):
        await checked.check()
        clock.now += 60
        await checked.check()
        assert checked.status().lag_seconds == 0.0
        assert checked.max_lag_now() == 0.0


async def test_the_bound_grows_while_replay_stands_still_and_closes_the_replica() -> None:
    checked, primary, replica, clock = monitor(max_lag=5.0)
    await checked.check()
    primary.position += 100  # a write at t=100, not replayed
    for second in range(1, 8):
        clock.now = 100 + second
        await checked.check()
        primary.position += 100
    # Fresh as of t=100 (the last sample it had replayed); now is t=107.
    assert checked.status().lag_seconds == 7.0
    assert checked.max_lag_now() is None
    # It replays up to the write of t=103 (position + 300): 4 s behind at t=107.
    replica.replayed += 300
    await checked.check()
    assert checked.status().lag_seconds == 4.0
    assert checked.max_lag_now() == 4.0
    replica.replayed = primary.position
    await checked.check()
    assert checked.max_lag_now() == 0.0


async def test_a_failed_read_opens_the_circuit_until_a_check_succeeds() -> None:
    checked, _, replica, _ = monitor()
    await checked.check()
    assert checked.max_lag_now() == 0.0
    checked.trip(ConnectionRefusedError("refused"))
    assert checked.max_lag_now() is None
    assert checked.status().trips == 1
    replica.down = ConnectionRefusedError("still refused")
    await checked.check()
    assert checked.max_lag_now() is None
    assert checked.status().last_error == "ConnectionRefusedError: still refused"
    replica.down = None
    await checked.check()
    assert checked.max_lag_now() == 0.0


async def test_a_read_database_that_is_not_a_standby_is_not_read() -> None:
    checked, _, replica, _ = monitor()
    replica.standby = False
    await checked.check()
    assert checked.max_lag_now() is None
    assert "not a streaming standby" in (checked.status().last_error or "")


class FakePool:
    """A pool whose every statement fails as a dead replica's would, or answers `rows`."""

    def __init__(self, error: Exception | None, rows: list[dict[str, Any]]) -> None:
        self.error = error
        self.rows = rows
        self.statements = 0

    async def fetch(self, statement: str, *values: Any) -> list[dict[str, Any]]:
        self.statements += 1
        if self.error is not None:
            raise self.error
        return self.rows


def routed(
    error: Exception | None, *, max_lag: float | None = 0.5
) -> tuple[Reads, FakePool, FakePool, ReplicaMonitor]:
    queries = Queries(QUERIES_DIR)
    primary_pool = FakePool(None, [{"source": "primary"}])
    replica_pool = FakePool(error, [{"source": "replica"}])
    checked, _, _, _ = monitor()
    checked.max_lag_now = lambda: max_lag  # type: ignore[method-assign]
    primary = Database(cast(asyncpg.Pool, primary_pool), queries)
    router = ReadRouter(primary, cast(asyncpg.Pool, replica_pool), checked)
    return router.request(), primary_pool, replica_pool, checked


async def test_reads_that_may_lag_go_to_the_replica_and_say_how_old() -> None:
    reads, primary, replica, _ = routed(None)
    db = reads.database(ReadKind.MEASURES)
    assert isinstance(db, ReplicaDatabase)
    assert await db.fetch(sql.health.HEALTH_CHECK) == [{"source": "replica"}]
    assert reads.extension() == {"maxLagSeconds": 0.5}
    claim = reads.database(ReadKind.CLAIM)
    assert await claim.fetch(sql.health.HEALTH_CHECK) == [{"source": "primary"}]
    assert (primary.statements, replica.statements) == (1, 1)


async def test_a_mutation_or_subscription_reads_only_the_primary() -> None:
    reads, _, replica, _ = routed(None)
    reads.primary_only = True
    for kind in ReadKind:
        rows = await reads.database(kind).fetch(sql.health.HEALTH_CHECK)
        assert rows == [{"source": "primary"}]
    assert replica.statements == 0
    assert reads.extension() is None


async def test_an_unreachable_replica_is_left_for_the_rest_of_the_request() -> None:
    reads, primary, replica, checked = routed(ConnectionRefusedError("refused"))
    db = reads.database(ReadKind.DASHBOARD)
    assert await db.fetch(sql.health.HEALTH_CHECK) == [{"source": "primary"}]
    assert await db.fetch(sql.health.HEALTH_CHECK) == [{"source": "primary"}]
    assert (primary.statements, replica.statements) == (2, 1)
    assert checked.status().trips == 1
    assert reads.extension() is None


async def test_a_replica_beyond_the_bound_is_not_tried() -> None:
    reads, primary, replica, _ = routed(None, max_lag=None)
    rows = await reads.database(ReadKind.AUDIT_PACK).fetch(sql.health.HEALTH_CHECK)
    assert rows == [{"source": "primary"}]
    assert (primary.statements, replica.statements) == (1, 0)


async def test_a_query_error_on_the_replica_is_not_an_outage() -> None:
    reads, primary, _, checked = routed(asyncpg.UndefinedColumnError("no such column"))
    with pytest.raises(asyncpg.UndefinedColumnError):
        await reads.database(ReadKind.MEASURES).fetch(sql.health.HEALTH_CHECK)
    assert primary.statements == 0
    assert checked.status().trips == 0
