"""`casework intake` as a process: its pool, its principal, and one drain loop per source.

Each source's loop takes a batch, and for each dead letter in it calls `take` (core.py),
then acknowledges it (or parks it with the reason) once `take` returned, so after the
commit. A stop (SIGTERM, SIGINT) lets the message in hand finish; the rest of the batch is
not acknowledged and goes back to its queue with the connection.

The seam for redrives to brokers: the runner holds each source's `RedrivePublisher` by
source name (`publishers`, opened through the adapter's `open_publisher` where it has one)
and its stop event (`stop`); `run(redrive=...)` runs a redrive loop beside the drains with
both, and stops it with them."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import signal
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any, TypeVar

from server.config import Settings
from server.domain.exceptions.workflows import get_reasons
from server.domain.failures import InvalidInput, NotPermitted
from server.domain.identity.principals import CredentialResolver, Credentials
from server.domain.model import Principal, Role
from server.domain.privacy.keys import Keyring
from server.domain.review.queues import require_queue
from server.events.redis import RedisTransport
from server.intake.config import EnqueueTarget, IntakeConfig, IntakeSource, RaiseTarget
from server.intake.core import IntakeRefused, Taken, Unmappable, take
from server.intake.sources import (
    BrokerKind,
    DeadLetter,
    DeadLetterSource,
    RedrivePublisher,
    SourceConfig,
)
from server.observability.metrics import IntakeOutcome, record_intake
from server.store.database import Database, open_service_database
from server.store.errors import is_unavailable
from server.store.queries import Queries

log = logging.getLogger("casework.intake")

TOKEN_VARIABLE = "CASEWORK_INTAKE_TOKEN"
# While the database does not answer, the message in hand is tried again after this long,
# doubling up to the maximum; it is neither acknowledged nor parked meanwhile.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0

T = TypeVar("T")
OpenSource = Callable[[SourceConfig], Awaitable[DeadLetterSource]]
RedriveLoop = Callable[
    [Database, Mapping[str, RedrivePublisher], asyncio.Event], Coroutine[Any, Any, None]
]


class IntakeStartError(Exception):
    """What stops the intake before it takes anything, one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class SourceEnded(Exception):
    """A source's batches ended though the intake was not stopping."""


def adapter(broker: BrokerKind) -> ModuleType:
    """server/intake/<broker>.py, which provides open_source (and open_publisher)."""
    try:
        return importlib.import_module(f"server.intake.{broker.value}")
    except ModuleNotFoundError as error:
        if error.name != f"server.intake.{broker.value}":
            raise
        raise IntakeStartError(
            [f"broker {broker.value!r}: this installation has no adapter for it"]
        ) from None


async def open_adapter_source(config: SourceConfig) -> DeadLetterSource:
    opened: DeadLetterSource = await adapter(config.broker).open_source(config)
    return opened


class TokenPrincipal:
    """The intake's principal: its token, resolved again for every batch, so a revocation
    stops it within the resolver's cache time."""

    def __init__(self, resolver: CredentialResolver, token: str) -> None:
        self._resolver = resolver
        self._credentials = Credentials.of(f"Bearer {token}")

    async def __call__(self) -> Principal:
        found = await self._resolver.resolve(self._credentials)
        if found is None:
            raise IntakeRefused(f"{TOKEN_VARIABLE} is not (or no longer) a valid token")
        return found


async def check_targets(
    db: Database, principal: Principal, sources: Sequence[IntakeSource]
) -> list[str]:
    """What the token cannot do of what the configuration asks, one line each."""
    if principal.role is not Role.INTEGRATION:
        return [
            f"the token acts as {principal.role.value}; the intake needs an integration token "
            "(`casework token create --role integration`)"
        ]
    problems = []
    for source in sources:
        target = source.target
        if isinstance(target, RaiseTarget):
            reasons = [
                r
                for r in (await get_reasons(db, [target.workflow])).get(target.workflow, [])
                if principal.works_in(r.owner_role)
            ]
            if target.reason_code not in {r.code for r in reasons}:
                known = ", ".join(sorted(r.code for r in reasons)) or "none the token covers"
                problems.append(
                    f"source {source.name!r}: reason_code {target.reason_code!r} is not in the "
                    f"catalogue of workflow {target.workflow!r} (known: {known})"
                )
        elif isinstance(target, EnqueueTarget):
            found = await require_queue(db, principal, target.queue)
            if isinstance(found, NotPermitted | InvalidInput):
                problems.append(f"source {source.name!r}: queue: {found.message}")
    return problems


class IntakeRunner:
    def __init__(
        self,
        db: Database,
        principal: Callable[[], Awaitable[Principal]],
        sources: Sequence[IntakeSource],
        *,
        keyring: Keyring | None = None,
        open_source: OpenSource = open_adapter_source,
    ) -> None:
        self.db = db
        self._principal = principal
        self.sources = tuple(sources)
        self._keyring = keyring
        self._open_source = open_source
        self.stop = asyncio.Event()
        # The redrive seam: each source's publisher, by source name.
        self.publishers: dict[str, RedrivePublisher] = {}
        self._opened: dict[str, DeadLetterSource] = {}
        # Set once every source is open and draining (for callers that wait for it).
        self.draining = asyncio.Event()

    async def run(self, redrive: RedriveLoop | None = None) -> None:
        try:
            await self._open_all()
            tasks = [
                asyncio.create_task(self._drain(spec, self._opened[spec.name]), name=spec.name)
                for spec in self.sources
            ]
            if redrive is not None:
                tasks.append(
                    asyncio.create_task(
                        redrive(self.db, self.publishers, self.stop), name="intake-redrive"
                    )
                )
            self.draining.set()
            await _until_all_end_or_one_fails(tasks, self.stop)
        finally:
            await self._close_all()

    async def _open_all(self) -> None:
        problems = []
        for spec in self.sources:
            try:
                self._opened[spec.name] = await self._open_source(spec.broker)
                if self._open_source is open_adapter_source:
                    opener = getattr(adapter(spec.broker.broker), "open_publisher", None)
                    if opener is not None:
                        self.publishers[spec.name] = await opener(spec.broker)
            except IntakeStartError as error:
                problems += [f"source {spec.name!r}: {line}" for line in error.problems]
            except Exception as error:
                problems.append(f"source {spec.name!r}: {error or repr(error)}")
        if problems:
            raise IntakeStartError(problems)

    async def _close_all(self) -> None:
        for name, source in self._opened.items():
            try:
                await source.close()
            except Exception as error:
                log.warning("intake %s: closing the source failed: %r", name, error)
        for name, publisher in self.publishers.items():
            try:
                await publisher.close()
            except Exception as error:
                log.warning("intake %s: closing the publisher failed: %r", name, error)
        self._opened.clear()
        self.publishers.clear()

    async def _drain(self, spec: IntakeSource, source: DeadLetterSource) -> None:
        batches = source.batches(spec.batch_size).__aiter__()
        while not self.stop.is_set():
            batch = await self._next(batches)
            if batch is None:
                if self.stop.is_set():
                    return
                # Not asked to stop: a source that ends has lost its broker for good. The
                # process ends with an error, for its supervisor to start it again.
                raise SourceEnded(f"source {spec.name!r}: the broker stopped delivering")
            principal = await self._while_unavailable(spec, "the token", self._principal)
            if principal is None:
                return
            outcomes: Counter[IntakeOutcome] = Counter()
            for letter in batch:
                taken = await self._take(spec, principal, letter)
                if taken is None:
                    return  # stopping while the database was away: the rest goes back
                outcome = await self._settle(spec, source, letter, taken)
                if outcome is not None:
                    outcomes[outcome] += 1
            log.info(
                "intake %s: batch of %d: %s",
                spec.name,
                len(batch),
                ", ".join(f"{outcome.value} {n}" for outcome, n in sorted(outcomes.items())),
            )

    async def _next(self, batches: AsyncIterator[list[DeadLetter]]) -> list[DeadLetter] | None:
        """The next batch, or None once stopping (or the source ended)."""
        getting: asyncio.Future[Any] = asyncio.ensure_future(anext(batches, None))
        stopping = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if getting.done():
            batch: list[DeadLetter] | None = getting.result()
            return batch
        getting.cancel()
        with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
            await getting
        return None

    async def _settle(
        self,
        spec: IntakeSource,
        source: DeadLetterSource,
        letter: DeadLetter,
        taken: Taken | Unmappable,
    ) -> IntakeOutcome | None:
        """Acknowledges (or parks) the message `take` is done with. A broker that fails
        here brings the message back later (a repeat, or parked then): logged, not fatal."""
        if isinstance(taken, Unmappable):
            try:
                await source.park(letter, taken.reason)
            except Exception as error:
                log.warning(
                    "intake %s: message %r could not be parked (%r); it stays on the "
                    "dead-letter queue and comes back",
                    spec.name,
                    letter.message_id,
                    error,
                )
                return None
            record_intake(spec.name, IntakeOutcome.PARKED)
            log.warning(
                "intake %s: parked message %r in %r: %s",
                spec.name,
                letter.message_id,
                spec.broker.parking,
                taken.reason,
            )
            return IntakeOutcome.PARKED
        try:
            await source.acknowledge(letter)
        except Exception as error:
            # Committed: the broker brings the message back, and it is then a repeat.
            log.warning(
                "intake %s: message %r is recorded but its acknowledgement failed (%r); it "
                "will come back and be acknowledged as a repeat",
                spec.name,
                letter.message_id,
                error,
            )
        record_intake(spec.name, taken.outcome)
        return taken.outcome

    async def _take(
        self, spec: IntakeSource, principal: Principal, letter: DeadLetter
    ) -> Taken | Unmappable | None:
        """take(), tried again while the database does not answer; None once stopping."""

        async def taking() -> Taken | Unmappable:
            return await take(self.db, principal, spec, letter, self._keyring)

        return await self._while_unavailable(spec, f"message {letter.message_id!r}", taking)

    async def _while_unavailable(
        self, spec: IntakeSource, what: str, call: Callable[[], Awaitable[T]]
    ) -> T | None:
        """`call()`, tried again after a growing pause while the database does not answer;
        None once stopping."""
        delay = RETRY_FIRST_SECONDS
        while True:
            try:
                return await call()
            except Exception as error:
                if not is_unavailable(error):
                    raise
                log.warning(
                    "intake %s: the database is unavailable (%r); %s waits %.1f s",
                    spec.name,
                    error,
                    what,
                    delay,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), delay)
            if self.stop.is_set():
                return None
            delay = min(delay * 2, RETRY_MAX_SECONDS)


async def _until_all_end_or_one_fails(tasks: list[asyncio.Task[Any]], stop: asyncio.Event) -> None:
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = next((t for t in done if not t.cancelled() and t.exception()), None)
        if failed is not None:
            stop.set()
            await asyncio.wait(tasks)
            raise failed.exception()  # type: ignore[misc]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# --- the process -------------------------------------------------------------------------------


@asynccontextmanager
async def intake_database(app_dsn: str, settings: Settings) -> AsyncIterator[Database]:
    """The intake's pool, as the service role. In a Redis deployment its writes' hints go to
    Redis, as a serving process's do: a NOTIFY would reach no subscriber there."""
    redis = (
        RedisTransport(settings.redis_url, channel=settings.redis_channel)
        if settings.events_transport == "redis"
        else None
    )
    pool, db = await open_service_database(
        app_dsn,
        Queries(settings.db_dir / "queries"),
        min_size=1,
        max_size=4,
        publish_hints=None if redis is None else redis.publish,
        transaction_pooler=settings.transaction_pooler,
    )
    try:
        yield db
    finally:
        await pool.close()
        if redis is not None:
            await redis.stop()


async def run_intake(
    app_dsn: str,
    settings: Settings,
    config: IntakeConfig,
    token: str,
    *,
    announce: Callable[[str], None] = print,
    redrive: RedriveLoop | None = None,
) -> None:
    """Until SIGTERM or SIGINT. Raises IntakeStartError for what stops it from starting and
    IntakeRefused when its token stops working."""
    keyring = Keyring.from_key_file(settings.privacy.key_file or settings.home / "keys.json")
    async with intake_database(app_dsn, settings) as db:
        resolver = CredentialResolver(db, ttl=settings.token_cache_seconds, auth=settings.auth)
        principal = TokenPrincipal(resolver, token)
        try:
            me = await principal()
        except IntakeRefused as refused:
            raise IntakeStartError([str(refused)]) from None
        if problems := await check_targets(db, me, config.sources):
            raise IntakeStartError(problems)
        runner = IntakeRunner(db, principal, config.sources, keyring=keyring)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, runner.stop.set)
        draining = asyncio.create_task(runner.run(redrive))
        announced = asyncio.create_task(runner.draining.wait())
        await asyncio.wait({draining, announced}, return_when=asyncio.FIRST_COMPLETED)
        if runner.draining.is_set():
            announce(
                f"casework intake: draining {len(config.sources)} source(s) as "
                f"{me.user}: " + "; ".join(_describe(spec) for spec in config.sources)
            )
        announced.cancel()
        await draining


def _describe(spec: IntakeSource) -> str:
    target = spec.target
    into = (
        f"exceptions of {target.workflow}"
        if isinstance(target, RaiseTarget)
        else f"items of queue {target.queue}"
    )
    return f"{spec.name} ({spec.broker.broker.value} {spec.broker.dead_letter} -> {into})"
