"""Shared by the apply tests: a queue with an effect, decisions made fast through the domain,
`casework worker` processes, bounded waits on the work list, and its invariants; and for
redrives by webhook, the supplier walk-through's exception corrected and approved, and an
in-process worker whose claim rounds and deliveries a test awaits."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from server.domain.exceptions.redrive_delivery import DueDelivery
from server.domain.failures import QueueEmpty
from server.domain.model import Claim, EffectKind, Principal
from server.domain.review.items import MAX_BATCH, NewItem, enqueue_items
from server.domain.review.leases import claim_next
from server.domain.review.queues import Effect, QueueSettings, configure_queue
from server.effects.http import Session
from server.store.database import Database
from server.worker import ApplyWorker, WorkerSettings, WorkerStats
from tests.api.conftest import GraphQL
from tests.api.live_server import casework_process
from tests.apply.receiver import Policy, Receiver, webhook_receiver
from tests.conftest import ADMIN, INTEGRATION, TestDatabase, one_row, reviewer
from tests.exceptions.conftest import APPROVAL_QUEUE, OWNER_QUEUE, WORKFLOW, People
from tests.exceptions.operations import (
    EXCEPTION_FIELDS,
    REQUEST_REDRIVE,
    approve_as,
    correct_as,
    raise_mismatch,
    run,
)
from tests.exceptions.states import CORRECTION, CORRECTION_EVIDENCE
from tests.integration.helpers import decide

# A Standard Webhooks secret: `whsec_` and the base64 of 28 bytes.
SECRET = "whsec_Y2FzZXdvcmstdGVzdC1zaWduaW5nLXNlY3JldA=="
# Retries fall due quickly: the first after ~0.05 s, then doubling.
BACKOFF_SECONDS = "0.05"
# How often a test polls a table it waits on: no signal exists for "the work list drained".
POLL_SECONDS = 0.1
WORKER_EXIT_SECONDS = 15.0
# In-process workers poll often, so that a test never waits on the backstop.
FAST = WorkerSettings(concurrency=4, backoff_seconds=0.05, poll_seconds=0.05, grace_seconds=5)


async def configure_effect(
    db: Database,
    queue: str,
    effect: Effect,
    *,
    timeout_seconds: float | None = None,
    max_attempts: int | None = None,
) -> None:
    result = await configure_queue(
        db,
        ADMIN,
        QueueSettings(
            queue,
            effect=effect,
            effect_timeout_seconds=timeout_seconds,
            effect_max_attempts=max_attempts,
        ),
    )
    assert not hasattr(result, "message"), result


def webhook(url: str, secret: str = SECRET) -> Effect:
    return Effect(EffectKind.WEBHOOK, url, secret)


@asynccontextmanager
async def effect_receiver(
    db: Database,
    queue: str,
    policy: Policy | None = None,
    *,
    timeout_seconds: float | None = None,
    max_attempts: int | None = None,
) -> AsyncIterator[Receiver]:
    """A webhook receiver signing with SECRET and answering by `policy`, the queue's effect
    pointed at it."""
    async with webhook_receiver(SECRET, policy) as receiver:
        await configure_effect(
            db,
            queue,
            webhook(receiver.url),
            timeout_seconds=timeout_seconds,
            max_attempts=max_attempts,
        )
        yield receiver


async def make_decisions(
    db: Database, queue: str, count: int, *, claimers: int = 4, prefix: str = "cust"
) -> list[int]:
    """Enqueues `count` items and approves them all, `claimers` reviewers at once; returns
    the decision ids. Each decision joins the work list in its own transaction."""
    keys = [f"{prefix}-{n}" for n in range(count)]
    for start in range(0, count, MAX_BATCH):
        batch = [NewItem(key, {"n": key}, 0) for key in keys[start : start + MAX_BATCH]]
        enqueued = await enqueue_items(db, INTEGRATION, queue, batch)
        assert isinstance(enqueued, list), enqueued

    async def review(principal: Principal) -> list[int]:
        decided: list[int] = []
        while True:
            claim = await claim_next(db, principal, queue)
            if isinstance(claim, QueueEmpty):
                return decided
            assert isinstance(claim, Claim), claim
            decided.append((await decide(db, principal, claim)).id)

    batches = await asyncio.gather(
        *(review(reviewer(f"reviewer-{n}", queue)) for n in range(claimers))
    )
    decision_ids = [decision_id for batch in batches for decision_id in batch]
    assert len(decision_ids) == len(set(decision_ids)) == count
    return decision_ids


async def make_decision(db: Database, queue: str, key: str) -> int:
    return (await make_decisions(db, queue, 1, claimers=1, prefix=key))[0]


def worker_env(test_database: TestDatabase, **extra: str) -> dict[str, str]:
    """The environment of a `casework worker` (or serve) on this test database."""
    env = {
        **os.environ,
        "DATABASE_URL": test_database.owner_dsn,
        "CASEWORK_APPLY_BACKOFF_SECONDS": BACKOFF_SECONDS,
        **extra,
    }
    env.pop("CASEWORK_APP_DATABASE_URL", None)
    return env


def worker_name(pid: int) -> str:
    """The name a worker process records its attempts under."""
    return f"{socket.gethostname()}:{pid}"


@dataclass
class WorkerProcess:
    """A running `casework worker`, its output collected as it comes."""

    process: asyncio.subprocess.Process
    output: list[str] = field(default_factory=list)
    _reading: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def name(self) -> str:
        return worker_name(self.pid)

    @property
    def log(self) -> str:
        return "".join(self.output)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.output.append(line.decode(errors="replace"))

    async def wait(self, within: float = WORKER_EXIT_SECONDS) -> int:
        code = await asyncio.wait_for(self.process.wait(), within)
        if self._reading is not None:
            await self._reading
        return code

    async def kill(self) -> None:
        """SIGKILL: nothing of the process gets to run any more."""
        if self.process.returncode is None:
            self.process.kill()
        await self.wait()

    async def terminate(self, within: float = WORKER_EXIT_SECONDS) -> int:
        """SIGTERM, then the exit code."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await self.wait(within)


async def start_worker(env: dict[str, str], *args: str) -> WorkerProcess:
    process = await casework_process(env, "worker", *args, stderr=asyncio.subprocess.STDOUT)
    worker = WorkerProcess(process)
    worker._reading = asyncio.create_task(worker._read())
    return worker


@asynccontextmanager
async def worker_processes(
    env: dict[str, str], count: int, *args: str
) -> AsyncIterator[list[WorkerProcess]]:
    """`count` workers; the list may be changed (a restart replaces its entry). Whatever is
    still running at the end is killed."""
    workers = [await start_worker(env, *args) for _ in range(count)]
    try:
        yield workers
    finally:
        for worker in workers:
            with contextlib.suppress(ProcessLookupError):
                await worker.kill()


@asynccontextmanager
async def running(worker: ApplyWorker) -> AsyncIterator[ApplyWorker]:
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        await task


async def wait_until(check: Callable[[], Awaitable[Any]], *, within: float, what: str) -> Any:
    """Polls `check` every POLL_SECONDS until it returns something truthy; returns it.
    Fails after `within` seconds. For states that no signal announces."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = await check()
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"not within {within} s: {what} (last: {result!r})")
        await asyncio.sleep(POLL_SECONDS)


async def application_row(conn: asyncpg.Connection, decision_id: int) -> asyncpg.Record:
    query = (
        "SELECT *, locked_until > now() AS locked FROM decision_applications WHERE decision_id = $1"
    )
    missing = f"decision {decision_id} is not on the work list"
    return await one_row(conn, query, decision_id, missing=missing)


async def attempt_rows(conn: asyncpg.Connection, decision_id: int) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await conn.fetch(
        "SELECT * FROM apply_attempts WHERE decision_id = $1 ORDER BY id", decision_id
    )
    return rows


async def state_is(conn: asyncpg.Connection, decision_id: int, state: str) -> bool:
    return bool((await application_row(conn, decision_id))["state"] == state)


async def reaches(
    conn: asyncpg.Connection, decision_id: int, state: str, *, within: float, what: str
) -> None:
    """Waits (bounded, polling) until the decision's work-list row is in `state`."""

    async def there() -> bool:
        return await state_is(conn, decision_id, state)

    await wait_until(there, within=within, what=what)


async def inconsistencies(conn: asyncpg.Connection, *, every_attempt_recorded: bool) -> list[str]:
    """What is wrong with the work list, the proofs and the history; empty if nothing.

    `every_attempt_recorded`: no worker was SIGKILLed, so each claimed attempt is either
    recorded in apply_attempts or still under its lock (in flight, or abandoned at shutdown).
    """
    rows = await conn.fetch(
        """
        SELECT a.decision_id, a.state, a.attempts, a.locked_until,
               p.decision_id IS NOT NULL AS proven,
               count(t.id) AS recorded,
               count(t.id) FILTER (WHERE t.outcome = 'applied') AS applied_attempts,
               (array_agg(t.outcome ORDER BY t.id DESC))[1] AS last_outcome
        FROM decision_applications AS a
        LEFT JOIN applied_decisions AS p ON p.decision_id = a.decision_id
        LEFT JOIN apply_attempts AS t ON t.decision_id = a.decision_id
        GROUP BY a.decision_id, p.decision_id
        """
    )
    problems: list[str] = []
    for row in rows:
        where = f"decision {row['decision_id']}: {dict(row)}"
        if (row["state"] == "applied") != row["proven"]:
            problems.append(f"state and proof disagree: {where}")
        if row["state"] != "pending" and row["locked_until"] is not None:
            problems.append(f"settled but locked: {where}")
        if row["state"] == "applied" and row["applied_attempts"] == 0:
            problems.append(f"applied with no applied attempt: {where}")
        if row["state"] == "failed" and row["last_outcome"] != "permanent":
            problems.append(f"failed, but the last attempt is not permanent: {where}")
        if row["recorded"] > row["attempts"]:
            problems.append(f"more attempts recorded than made: {where}")
        if every_attempt_recorded and row["state"] != "applied":
            in_flight = 1 if row["locked_until"] is not None else 0
            if row["recorded"] + in_flight != row["attempts"]:
                problems.append(f"an attempt is neither recorded nor locked: {where}")
    orphans = await conn.fetch(
        "SELECT p.decision_id FROM applied_decisions AS p "
        "LEFT JOIN decision_applications AS a USING (decision_id) WHERE a.decision_id IS NULL"
    )
    problems += [f"proof without a work-list row: {row['decision_id']}" for row in orphans]
    return problems


# The owning system's signing key, a Standard Webhooks secret (28 bytes).
REDRIVE_SECRET = "whsec_ZXJwLXJlZHJpdmUtc2lnbmluZy1zZWNyZXQtMQ=="

# How long a test waits for the worker to claim or record what it is expected to.
RECORD_SECONDS = 15.0

COMPLETED_STEPS = ["collect_documents", "verify_bank_account"]

CONFIGURE_WORKFLOW = """
mutation($input: ConfigureWorkflowInput!) {
  result: configureWorkflow(input: $input) {
    __typename
    ... on WorkflowConfigured {
      workflow { name approvalQueue redriveVia redriveTarget redriveMaxAttempts
                 redriveTimeoutSeconds }
    }
    ... on Error { message }
    ... on InvalidInput { field }
  }
}
"""

DELIVERY_FIELDS = """
  key version resumeAfter staleSteps requestedBy requestedAt succeeded resultDetail reportedBy
  deliveryState deliveryAttempts lastDeliveryError deliveredAt
"""

EXCEPTION_WITH_DELIVERY = f"""
query($id: ID!) {{ exception(id: $id) {{ {EXCEPTION_FIELDS} redrive {{ {DELIVERY_FIELDS} }} }} }}
"""


class AwaitedWorker(ApplyWorker):
    """The real worker, effects and webhook client; a test awaits what it records instead of
    polling or sleeping. A subclass calls `_changed_now` after each step a test may await."""

    def __init__(self, db: Database, name: str) -> None:
        super().__init__(db, FAST, name=name)
        self._changed = asyncio.Condition()

    async def _changed_now(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _progress(self) -> str:
        """What the worker has done, for a wait that timed out."""
        return str(self.stats)

    async def _wait(self, ready: Callable[[], bool], what: str, within: float) -> None:
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(ready), within)
            except TimeoutError:
                raise AssertionError(f"not within {within} s: {what}; {self._progress()}") from None

    async def until(
        self, check: Callable[[WorkerStats], bool], what: str, within: float = RECORD_SECONDS
    ) -> None:
        """Until the worker's stats satisfy `check` (after a recording), bounded."""
        await self._wait(lambda: check(self.stats), what, within)


class DeliveringWorker(AwaitedWorker):
    """An AwaitedWorker whose claim rounds and recorded redrive deliveries a test awaits."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, name="redrive-webhooks")
        # Claim rounds completed (each claims decisions, then redrive deliveries).
        self.rounds = 0

    def _progress(self) -> str:
        return f"{self.stats}, {self.rounds} round(s)"

    async def _start(self, client: Session, free: int) -> int:
        try:
            return await super()._start(client, free)
        finally:
            async with self._changed:
                self.rounds += 1
                self._changed.notify_all()

    async def _deliver(self, client: Session, due: DueDelivery) -> None:
        try:
            await super()._deliver(client, due)
        finally:
            await self._changed_now()

    async def claimed_everything_due(self, within: float = RECORD_SECONDS) -> None:
        """Wakes the worker and waits for a whole claim round that began after this call:
        whatever was due (and claimable) by now has been claimed by then."""
        seen = self.rounds
        self.wake()
        # Round seen + 1 may have begun before the call; seen + 2 began after it ended.
        await self._wait(lambda: self.rounds >= seen + 2, "two more claim rounds", within)


@dataclass(frozen=True)
class OnboardingDesk:
    """What the redrive tests work with: the database as the worker and the owner see it,
    and the API as the supplier-onboarding people use it (the `onboarding` fixture)."""

    db: Database
    conn: asyncpg.Connection
    gql: GraphQL
    people: People

    async def approved_mismatch(self, *, stale_steps: list[str] | None = None) -> tuple[str, int]:
        return await approved_mismatch(self.gql, self.people, stale_steps=stale_steps)

    async def request_redrive(self, exception_id: str, version: int) -> str:
        return await request_redrive(self.gql, self.people, exception_id, version)

    async def exception_of(self, token: str, exception_id: str) -> dict[str, Any]:
        return await exception_of(self.gql, token, exception_id)

    def redrive_receiver(
        self, policy: Policy | None = None, **settings: Any
    ) -> AbstractAsyncContextManager[Receiver]:
        return redrive_receiver(self.gql, self.people, policy, **settings)

    def redrive_requested(
        self, worker: ApplyWorker
    ) -> AbstractAsyncContextManager[tuple[str, str]]:
        return redrive_requested(self.gql, self.people, worker)


async def configure_workflow(gql: GraphQL, token: str, **settings: Any) -> dict[str, Any]:
    return await run(gql, token, CONFIGURE_WORKFLOW, input={"name": WORKFLOW, **settings})


async def take_redrives_by_webhook(
    gql: GraphQL, people: People, target: str, **settings: Any
) -> dict[str, Any]:
    """The admin points supplier_onboarding's redrives at `target`, over the API.

    The approval queue is sent again, unchanged: without it the reconfiguration fails (see
    test_changing_only_the_redrive_route_keeps_the_approval_queue)."""
    configured = await configure_workflow(
        gql,
        people.admin,
        approvalQueue=APPROVAL_QUEUE,
        redriveVia="WEBHOOK",
        redriveTarget=target,
        redriveSecret=REDRIVE_SECRET,
        **settings,
    )
    assert configured["__typename"] == "WorkflowConfigured", configured
    workflow: dict[str, Any] = configured["workflow"]
    return workflow


async def correct_and_approve(
    gql: GraphQL, people: People, exception_id: str, *, stale_steps: list[str]
) -> int:
    """sam claims and corrects the exception; ann approves. Returns the approved version."""
    corrected = await correct_as(
        gql,
        people.sam,
        OWNER_QUEUE,
        exception_id,
        changes=CORRECTION,
        evidence=CORRECTION_EVIDENCE,
        staleSteps=stale_steps,
        note="The supplier trades under the holding's name; record updated.",
    )
    version: int = corrected["version"]
    await approve_as(gql, people.ann, APPROVAL_QUEUE, exception_id, version)
    return version


@asynccontextmanager
async def redrive_receiver(
    gql: GraphQL, people: People, policy: Policy | None = None, **settings: Any
) -> AsyncIterator[Receiver]:
    """The owning system's receiver, signing with REDRIVE_SECRET and answering by `policy`;
    supplier_onboarding's redrives pointed at it (see take_redrives_by_webhook)."""
    async with webhook_receiver(REDRIVE_SECRET, policy) as erp:
        await take_redrives_by_webhook(gql, people, erp.url, **settings)
        yield erp


async def approved_mismatch(
    gql: GraphQL, people: People, *, stale_steps: list[str] | None = None
) -> tuple[str, int]:
    """The walk-through's exception, raised by the ERP, corrected and approved: its id and
    approved version."""
    raised = await raise_mismatch(gql, people.erp)
    assert raised["completedSteps"] == COMPLETED_STEPS
    version = await correct_and_approve(gql, people, raised["id"], stale_steps=stale_steps or [])
    return raised["id"], version


async def request_redrive(gql: GraphQL, people: People, exception_id: str, version: int) -> str:
    queued = await run(
        gql, people.ann, REQUEST_REDRIVE, input={"exceptionId": exception_id, "version": version}
    )
    assert queued["__typename"] == "RedriveQueued", queued
    key: str = queued["redriveKey"]
    return key


async def exception_of(gql: GraphQL, token: str, exception_id: str) -> dict[str, Any]:
    body = await gql(token, EXCEPTION_WITH_DELIVERY, id=exception_id)
    assert "errors" not in body, body
    exception: dict[str, Any] = body["data"]["exception"]
    return exception


async def delivery_row(conn: asyncpg.Connection, key: str) -> dict[str, Any]:
    row = await one_row(
        conn,
        "SELECT delivery_state, delivery_attempts, next_delivery_at, delivery_locked_until, "
        "last_delivery_error, delivered_at FROM exception_redrives WHERE key = $1",
        key,
        missing=key,
    )
    return dict(row)


@asynccontextmanager
async def redrive_requested(
    gql: GraphQL, people: People, worker: ApplyWorker
) -> AsyncIterator[tuple[str, str]]:
    """The walk-through's exception approved, `worker` running, the redrive requested and the
    worker woken to deliver it: yields the exception's id and the redrive key."""
    exception_id, version = await approved_mismatch(gql, people)
    async with running(worker):
        key = await request_redrive(gql, people, exception_id, version)
        worker.wake()
        yield exception_id, key
