"""What lives as long as a serving process: the pool, the credential resolver, live
updates, the apply worker and the session refresher, started and stopped by the lifespan;
and the health endpoints that report on them."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Awaitable

import asyncpg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from server.config import Settings
from server.domain.identity.access_tokens import AccessTokenVerifier
from server.domain.identity.principals import CredentialResolver
from server.domain.identity.provider_tokens import (
    ProviderAccessTokens,
    load_rules,
    provider_verifier,
)
from server.domain.identity.refresh import SessionRefresher
from server.domain.privacy.keys import Keyring
from server.domain.privacy.ledger import ErasureLedger
from server.events.listener import PostgresListener
from server.events.live import LiveUpdates
from server.events.redis import RedisTransport
from server.events.transport import MemoryTransport, Transport
from server.pooler import listen_dsn
from server.retention_worker import RetentionWorker
from server.runtime import describe_location
from server.store import sql
from server.store.database import Database, open_service_database
from server.store.queries import Queries
from server.store.routing import ReadRouter
from server.worker import ApplyWorker, worker_settings

log = logging.getLogger("casework")

GC_THRESHOLDS = (50_000, 20, 10)


class Runtime:
    """What lives as long as the process: the pool and the token cache."""

    def __init__(self, app_dsn: str, settings: Settings, *, run_worker: bool) -> None:
        self._app_dsn = app_dsn
        self._settings = settings
        self._run_worker = run_worker
        self._db: Database | None = None
        self._tokens: CredentialResolver | None = None
        self._live: LiveUpdates | None = None
        self.worker: ApplyWorker | None = None
        self.retention: RetentionWorker | None = None
        self.reads: ReadRouter | None = None
        # Read before the process serves: a bad rule file stops `casework serve` with its
        # message, rather than refusing every login later.
        self.rules = load_rules(settings.auth)
        self.verifier: AccessTokenVerifier | None = None
        self.keyring = Keyring.from_key_file(
            settings.privacy.key_file or settings.home / "keys.json"
        )
        self.erasure_ledger = ErasureLedger(
            settings.privacy.erasure_ledger or settings.home / "erasure-ledger.jsonl"
        )

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("the application has not started")
        return self._db

    @property
    def tokens(self) -> CredentialResolver:
        if self._tokens is None:
            raise RuntimeError("the application has not started")
        return self._tokens

    @property
    def live(self) -> LiveUpdates:
        if self._live is None:
            raise RuntimeError("the application has not started")
        return self._live

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        settings = self._settings
        # Thousands of sockets keep a few hundred thousand objects alive; with the default
        # thresholds a full collection (~200 ms at 1,000 subscribers) lands in a fan-out
        # every few seconds. Rarer young collections make full ones rare too.
        gc.set_threshold(*GC_THRESHOLDS)
        transport = self._transport()
        publish_hints = transport.publish if isinstance(transport, RedisTransport) else None
        pool, self._db = await open_service_database(
            self._app_dsn,
            Queries(settings.db_dir / "queries"),
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            publish_hints=publish_hints,
            transaction_pooler=settings.transaction_pooler,
        )
        # CASEWORK_READ_DATABASE_URL: the reads that may lag go there (server/store/routing.py).
        self.reads = await _read_router(settings, self._db, pool)
        access_tokens = None
        if self.rules is not None:
            self.verifier = provider_verifier(settings.auth)
            access_tokens = ProviderAccessTokens(self._db, self.verifier, self.rules)
        self._tokens = CredentialResolver(
            self._db,
            ttl=settings.token_cache_seconds,
            auth=settings.auth,
            access_tokens=access_tokens,
        )
        self._live = LiveUpdates(self._db, transport)
        worker_task = retention_task = None
        if self._run_worker:
            self.worker = ApplyWorker(self._db, worker_settings(settings))
            self._live.observe(self.worker.hint, self.worker.wake)
            worker_task = asyncio.create_task(self.worker.run(), name="casework-apply-worker")
            # Beside it: personal data whose retention ended, deferred erasures now due.
            self.retention = RetentionWorker(
                self._db,
                self.keyring,
                self.erasure_ledger,
                interval_seconds=settings.privacy.retention_interval_seconds,
            )
            retention_task = asyncio.create_task(
                self.retention.run(), name="casework-retention-worker"
            )
        await self._live.start()
        refresher = SessionRefresher.started(self._db, settings.auth, self.rules, self.verifier)
        try:
            yield
        finally:
            await _within_shutdown(refresher.stop(), "the session refresh")
            if self.worker is not None and worker_task is not None:
                self.worker.stop()
                if not await _within_shutdown(worker_task, "the apply worker"):
                    worker_task.cancel()
            if self.retention is not None and retention_task is not None:
                self.retention.stop()
                if not await _within_shutdown(retention_task, "the retention worker"):
                    retention_task.cancel()
            await _within_shutdown(self._live.stop(), "live updates")
            if self.reads is not None:
                await _within_shutdown(self.reads.close(), "the read replica")
                self.reads = None
            if self.verifier is not None:
                await self.verifier.aclose()
            self._db = self._tokens = self._live = self.worker = self.retention = None
            if not await _within_shutdown(pool.close(), "the pool"):
                # A connection still held by a request that never finished.
                pool.terminate()

    def _transport(self) -> Transport | RedisTransport:
        settings = self._settings
        if settings.events_transport == "memory":
            return MemoryTransport()
        if settings.events_transport == "redis":
            return RedisTransport(settings.redis_url, channel=settings.redis_channel)
        return PostgresListener(listen_dsn(settings, self._app_dsn))

    async def _database_ok(self) -> bool:
        """The primary answers and takes writes. A read-only server does not count (a pool
        connection that reached a standby, or a primary being demoted): writes would fail."""
        with contextlib.suppress(Exception):
            row = await asyncio.wait_for(self.db.fetchrow(sql.health.HEALTH_CHECK), 2)
            return row is not None and bool(row["writable"])
        return False

    async def livez(self, request: Request) -> JSONResponse:
        """200 while the process answers; touches nothing else. Restart it when this fails."""
        return JSONResponse({"live": True})

    async def healthz(self, request: Request) -> JSONResponse:
        """What works and what does not, for a person or a dashboard: 503 when degraded."""
        status = self.live.status()
        database_ok = await self._database_ok()
        healthy = database_ok and status.transport.connected
        body = {
            "status": "ok" if healthy else "degraded",
            "database": database_ok,
            "listener": {
                "transport": status.transport.name,
                "connected": status.transport.connected,
                "reconnects": status.transport.reconnects,
                "last_error": status.transport.last_error,
                "backend_pid": status.transport.backend_pid,
            },
            "subscribers": status.subscribers,
            "events_dispatched": status.events_dispatched,
            "inbox_overflows": status.inbox_overflows,
            "worker": None if self.worker is None else vars(self.worker.stats),
            # Informative: while the replica is down or behind, reads go to the primary.
            "replica": None if self.reads is None else self.reads.monitor.status().as_json(),
        }
        return JSONResponse(body, status_code=200 if healthy else 503)

    async def readyz(self, request: Request) -> JSONResponse:
        """503 while no writable primary answers or the listener is down: take this process
        out of rotation (during a failover, until the new primary takes writes)."""
        database_ok = await self._database_ok()
        listener_ok = self.live.status().transport.connected
        ready = database_ok and listener_ok
        return JSONResponse(
            {"ready": ready, "database": database_ok, "listener": listener_ok},
            status_code=200 if ready else 503,
        )


async def _read_router(
    settings: Settings, primary: Database, pool: asyncpg.Pool
) -> ReadRouter | None:
    if settings.read_database_url is None:
        return None
    return await ReadRouter.open(
        primary,
        pool,
        settings.read_database_url,
        label=describe_location(settings.read_database_url),
        max_lag_seconds=settings.read_max_lag_seconds,
        timeout_seconds=settings.read_timeout_seconds,
        max_size=settings.pool_max_size,
    )


# uvicorn waits for the lifespan's shutdown without a limit, and a second SIGTERM does not
# cut it short: a step that hangs (a pool connection never released) would keep the
# process alive for ever. Each step gets this long, then is logged and cut short.
SHUTDOWN_STEP_SECONDS = 15.0


async def _within_shutdown(step: Awaitable[object], what: str) -> bool:
    """Awaits one step of the shutdown for at most SHUTDOWN_STEP_SECONDS; False if cut."""
    try:
        await asyncio.wait_for(step, SHUTDOWN_STEP_SECONDS)
    except TimeoutError:
        log.warning(
            "shutdown: %s did not stop within %.0f s; stopping without it",
            what,
            SHUTDOWN_STEP_SECONDS,
        )
        return False
    return True
