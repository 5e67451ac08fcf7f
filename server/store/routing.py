"""Which read goes to the primary and which may go to the read replica: the one place
that decides (docs/architecture.md, docs/operations.md "Read replicas").

A read says what kind of read it is (`ReadKind`); `MAY_LAG` lists the kinds a replica may
answer. Everything a fence, a claim, a decision, the decision stream's position or a
reviewer's own item depends on is not in it, and reads the primary. So does every read of a
mutation or a subscription (`Reads.primary_only`): a mutation's answer shows its own write,
and a subscription's events are woken by hints of writes the replica may not have yet.

Without CASEWORK_READ_DATABASE_URL there is no router and nothing here runs. With one, a
request's `Reads` hands out the replica for the kinds that may lag while the replica is
within CASEWORK_READ_MAX_LAG_SECONDS (server/store/replica_lag.py), and remembers how old
what it served may be: the GraphQL response says so in `extensions.replica`.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import asyncpg

from server.store.database import Database, Row, connect, create_pool
from server.store.errors import is_unavailable
from server.store.queries import P, Query
from server.store.replica_lag import ReplicaMonitor, wait_replayed


class ReadKind(enum.Enum):
    # --- may lag: what a person looks at, where seconds-old figures are as good ---
    MEASURES = "measures"  # queue and workflow measures
    DASHBOARD = "dashboard"  # backlogs, application lag, a manager's queue overview
    QUEUE_LIST = "queue_list"  # the queues, pages of a queue's items and decisions
    MANAGER_ITEM = "manager_item"  # an item's page as a manager reads it
    AUDIT_PACK = "audit_pack"  # auditPack
    EXPORT = "export"  # `casework export`
    SEARCH = "search"  # finding cases: items, decisions, look-ups by key, their CSV
    # --- the primary: what a write or a fence depends on ---
    FENCE = "fence"  # a lease, an evidence hash, a version checked before a write
    CLAIM = "claim"
    DECISION = "decision"
    STREAM_POSITION = "stream_position"  # decisionEvents' cursor and what follows it
    OWN_ITEM = "own_item"  # an item as a reviewer or approver reads it: the one in hand
    CONFIGURATION = "configuration"  # queues, reason codes, policies a write checks


MAY_LAG = frozenset(
    {
        ReadKind.MEASURES,
        ReadKind.DASHBOARD,
        ReadKind.QUEUE_LIST,
        ReadKind.MANAGER_ITEM,
        ReadKind.AUDIT_PACK,
        ReadKind.EXPORT,
        ReadKind.SEARCH,
    }
)


def may_lag(kind: ReadKind) -> bool:
    """True when a replica within the bound may answer this kind of read."""
    return kind in MAY_LAG


# A replica that does not answer a connection within this is taken for down.
CONNECT_TIMEOUT_SECONDS = 2.0


class ReadRouter:
    """The replica's pool and lag check, for the process's lifetime."""

    def __init__(self, primary: Database, replica: asyncpg.Pool, monitor: ReplicaMonitor) -> None:
        self.primary = primary
        self.monitor = monitor
        self._replica_pool = replica
        self._checking: asyncio.Task[None] | None = None
        self.timeout_seconds = monitor.timeout_seconds

    @classmethod
    async def open(
        cls,
        primary: Database,
        primary_pool: asyncpg.Pool,
        dsn: str,
        *,
        label: str,
        max_lag_seconds: float,
        timeout_seconds: float,
        max_size: int,
    ) -> ReadRouter:
        """Connects lazily (min_size 0): a replica that is down at start-up delays nothing;
        reads go to the primary until the first check finds it."""
        pool = await create_pool(
            dsn,
            min_size=0,
            max_size=max_size,
            connect_timeout=min(CONNECT_TIMEOUT_SECONDS, timeout_seconds),
            command_timeout=timeout_seconds,
        )
        monitor = ReplicaMonitor(
            primary_pool,
            pool,
            label=label,
            max_lag_seconds=max_lag_seconds,
            timeout_seconds=timeout_seconds,
        )
        router = cls(primary, pool, monitor)
        router._checking = asyncio.create_task(monitor.run(), name="casework-replica-lag")
        return router

    def request(self) -> Reads:
        return Reads(self)

    def replica_database(self, reads: Reads) -> ReplicaDatabase:
        return ReplicaDatabase(
            self._replica_pool, self.primary, self.monitor, reads, self.timeout_seconds
        )

    async def close(self) -> None:
        self.monitor.stop()
        if self._checking is not None:
            await self._checking
        self.monitor.forget()
        try:
            await asyncio.wait_for(self._replica_pool.close(), CONNECT_TIMEOUT_SECONDS)
        except TimeoutError:
            self._replica_pool.terminate()


class Reads:
    """One request's reads: the rule applied, and how old the replica's answers may be."""

    __slots__ = ("_replica", "_router", "fell_back", "max_lag_seconds", "primary_only")

    def __init__(self, router: ReadRouter) -> None:
        self._router = router
        self._replica: ReplicaDatabase | None = None
        # Set for mutations and subscriptions before any resolver runs.
        self.primary_only = False
        # The largest bound among the statements the replica answered; None: none did.
        self.max_lag_seconds: float | None = None
        # Once a read fell back, the rest of the request reads the primary too, so that
        # one response never mixes a newer primary read with an older replica one after it.
        self.fell_back = False

    def database(self, kind: ReadKind) -> Database:
        """The database this kind of read goes to: the replica (which may still fall back,
        statement by statement) or the primary."""
        if self.primary_only or not may_lag(kind):
            return self._router.primary
        if self._replica is None:
            self._replica = self._router.replica_database(self)
        return self._replica

    def served(self, bound: float) -> None:
        if self.max_lag_seconds is None or bound > self.max_lag_seconds:
            self.max_lag_seconds = bound

    def extension(self) -> dict[str, Any] | None:
        """`extensions.replica` of the response, when any of its data came from it."""
        if self.max_lag_seconds is None:
            return None
        return {"maxLagSeconds": round(self.max_lag_seconds, 3)}


class ReplicaDatabase(Database):
    """The replica's pool behind Database's interface: each statement goes to the replica
    while it is within the bound, else (or when it turns out unreachable) to the primary."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        primary: Database,
        monitor: ReplicaMonitor,
        reads: Reads,
        timeout_seconds: float,
    ) -> None:
        super().__init__(pool, primary.queries)
        self._primary = primary
        self._monitor = monitor
        self._reads = reads
        # Bounds a statement with its connection's acquire and release: on a hung replica,
        # the pool's command_timeout alone lets asyncpg wait as long again for the cancel.
        self._timeout = timeout_seconds

    def _bound(self) -> float | None:
        if self._reads.fell_back:
            return None
        bound = self._monitor.max_lag_now()
        if bound is None:
            self._reads.fell_back = True
        return bound

    def _unreachable(self, error: BaseException) -> bool:
        if not is_unavailable(error):
            return False
        self._monitor.trip(error)
        self._reads.fell_back = True
        return True

    async def fetch(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> list[Row]:
        bound = self._bound()
        if bound is not None:
            try:
                async with asyncio.timeout(self._timeout):
                    rows = await super().fetch(query, *args, **kwargs)
            except Exception as error:
                if not self._unreachable(error):
                    raise
            else:
                self._reads.served(bound)
                return rows
        return await self._primary.fetch(query, *args, **kwargs)

    async def fetchrow(self, query: Query[P], *args: P.args, **kwargs: P.kwargs) -> Row | None:
        bound = self._bound()
        if bound is not None:
            try:
                async with asyncio.timeout(self._timeout):
                    row = await super().fetchrow(query, *args, **kwargs)
            except Exception as error:
                if not self._unreachable(error):
                    raise
            else:
                self._reads.served(bound)
                return row
        return await self._primary.fetchrow(query, *args, **kwargs)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Database]:
        """On the replica when it answers at the start (REPEATABLE READ works on a hot
        standby); a failure inside is the caller's, as on the primary."""
        bound = self._bound()
        async with AsyncExitStack() as stack:
            snapshot: Database | None = None
            if bound is not None:
                try:
                    async with asyncio.timeout(self._timeout):
                        snapshot = await stack.enter_async_context(super().snapshot())
                except Exception as error:
                    if not self._unreachable(error):
                        raise
                else:
                    self._reads.served(bound)
            if snapshot is None:
                snapshot = await stack.enter_async_context(self._primary.snapshot())
            yield snapshot

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Database]:
        raise TypeError("a replica is read from, never written: this read's kind is wrong")
        yield self  # pragma: no cover


async def replica_for_export(
    primary: asyncpg.Connection, dsn: str | None, *, max_lag_seconds: float, timeout_seconds: float
) -> tuple[asyncpg.Connection | None, str]:
    """`casework export`'s connection to the replica, once it has replayed everything the
    primary had when asked (within max_lag_seconds), or None: read the primary. With a line
    saying which, for standard error."""
    if dsn is None or not may_lag(ReadKind.EXPORT):
        return None, ""
    replica: asyncpg.Connection | None = None
    try:
        replica = await connect(dsn, connect_timeout=min(CONNECT_TIMEOUT_SECONDS, timeout_seconds))
        waited = await wait_replayed(primary, replica, max_lag_seconds)
    except Exception as error:
        if not is_unavailable(error):
            raise
        reason = f"unavailable ({type(error).__name__}: {error})"
        waited = None
    else:
        reason = f"not caught up within {max_lag_seconds:g} s, or not a standby"
    if waited is None:
        if replica is not None:
            await replica.close()
        return None, f"the read replica is {reason}; reading the primary"
    return replica, f"reading the replica (caught up with the primary in {waited:.2f} s)"
