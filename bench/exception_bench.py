"""Exceptions: what the overdue check costs every claim, and what a full exception cycle
costs against a review cycle, each pair measured side by side in one run.

  claims     raw SQL, N workers on an asyncpg pool as the application role: claim+decide
             cycles on queue `bench` (item_claim_next, which also looks for overdue
             exceptions of the queue, then decision_submit), on a database without
             exceptions and on one holding --open-exceptions open, not-yet-due exceptions
             that escalate to `bench`, so the overdue probe walks a populated index. Runs
             alternate.
  lifecycle  GraphQL over HTTP against a real uvicorn process, N workers: an exception
             cycle (raiseException, claimNext, submitCorrection, claimNext by an approver,
             approveCorrection, requestRedrive, reportRedriveResult: 7 mutations) against a
             review cycle (enqueueItems, claimNext, submitDecision: 3 mutations). Compared
             per mutation, since the cycles differ in length.

After each run the rows written are counted against the cycles done.

    .venv/bin/python bench/exception_bench.py [--database-url URL] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import benchlib
from http1 import KeepAliveConnection

from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.store import sql
from server.store.database import Database, create_pool

OWNER_QUEUE = "bench-exc"
APPROVAL_QUEUE = "bench-approvals"
WORKFLOW = "bench_flow"
REASON = "bench_mismatch"

SETUP = """
mutation {
  a: configureQueue(input: {name: "bench-exc"}) { __typename }
  b: configureQueue(input: {name: "bench-approvals"}) { __typename }
  c: configureWorkflow(input: {name: "bench_flow", approvalQueue: "bench-approvals"}) {
    __typename }
  d: defineExceptionReason(input: {workflow: "bench_flow", code: "bench_mismatch",
    label: "bench", ownerRole: "bench-exc", escalationOwnerRole: "bench",
    allowedActions: [ATTACH_EVIDENCE, SUBMIT_CORRECTION, APPROVE_CORRECTION, REJECT_CORRECTION,
                     REQUEST_REDRIVE, REPORT_REDRIVE_RESULT, CLOSE_EXCEPTION, REOPEN_EXCEPTION],
    dueSeconds: {low: 86400, medium: 86400, high: 86400, critical: 86400}}) { __typename }
}
"""
RAISE = (
    "mutation($i:RaiseExceptionInput!){ raiseException(input:$i){ __typename "
    "... on ExceptionRaised { exception { id } } } }"
)
CLAIM = (
    "mutation($q:String!){ claimNext(queue:$q){ __typename "
    "... on Claim { leaseToken evidenceHash item { id exception { id version } } } } }"
)
CORRECT = "mutation($i:SubmitCorrectionInput!){ submitCorrection(input:$i){ __typename } }"
APPROVE = "mutation($i:ApproveCorrectionInput!){ approveCorrection(input:$i){ __typename } }"
REDRIVE = (
    "mutation($i:RequestRedriveInput!){ requestRedrive(input:$i){ __typename "
    "... on RedriveQueued { redriveKey } } }"
)
REPORT = "mutation($i:ReportRedriveResultInput!){ reportRedriveResult(input:$i){ __typename } }"
ENQUEUE = (
    "mutation($q:String!,$items:[NewItemInput!]!){ enqueueItems(queue:$q, items:$items){ "
    "__typename } }"
)
DECIDE = "mutation($i:SubmitDecisionInput!){ submitDecision(input:$i){ __typename } }"


@dataclass(frozen=True)
class Config:
    server: str
    concurrency: int
    claim_cycles: int
    lifecycle_cycles: int
    open_exceptions: int
    repeats: int


@dataclass(frozen=True)
class Run:
    cycles: int
    seconds: float
    # Rows written, against every cycle done (warm-up included).
    rows: int
    warmup: int

    @property
    def rate(self) -> float:
        return self.cycles / self.seconds


Cycle = Callable[[int], Awaitable[None]]


async def timed(cycle: Cycle, concurrency: int, cycles: int) -> tuple[int, float, int]:
    """Shares `cycles` among the workers after one untimed warm-up cycle each."""
    await asyncio.gather(*(cycle(index) for index in range(concurrency)))
    remaining = cycles

    async def worker(index: int) -> int:
        nonlocal remaining
        done = 0
        while remaining > 0:
            remaining -= 1
            await cycle(index)
            done += 1
        return done

    started = time.perf_counter()
    done = await asyncio.gather(*(worker(index) for index in range(concurrency)))
    return sum(done), time.perf_counter() - started, concurrency


# --- claims: the overdue check --------------------------------------------------------------


async def seed_open_exceptions(owner: asyncpg.Connection, count: int) -> None:
    """Open exceptions escalating to `bench`, none due: what the check walks on every claim."""
    await owner.execute(
        """
        WITH items AS (
            INSERT INTO review_items (origin_queue, queue, external_key, payload,
                                      evidence_hash, kind)
            SELECT 'bench-exc', 'bench-exc', 'exc_SEED' || lpad(n::text, 16, '0'),
                   '{}'::jsonb, repeat('0', 64), 'exception'
            FROM generate_series(1, $1) AS n
            RETURNING id, external_key
        )
        INSERT INTO exceptions (id, workflow, source_record_id, reason_code, detail,
                                consequence, owner_role, escalation_role, due_at, item_id)
        SELECT external_key, 'bench_flow', 'seed-' || id, 'bench_mismatch', 'seeded',
               'medium', 'bench-exc', 'bench', now() + interval '1 day', id
        FROM items
        """,
        count,
    )
    await owner.execute("VACUUM ANALYZE")


async def claim_run(config: Config, database: str, with_exceptions: bool) -> Run:
    queries = benchlib.load_queries()
    claim = queries.statement(sql.items.ITEM_CLAIM_NEXT.name)
    decide = queries.statement(sql.decisions.DECISION_SUBMIT.name)
    if with_exceptions:
        owner = await asyncpg.connect(benchlib.owner_dsn(config.server, database))
        try:
            await seed_open_exceptions(owner, config.open_exceptions)
        finally:
            await owner.close()
    pool = await create_pool(
        benchlib.app_dsn(config.server, database),
        min_size=config.concurrency,
        max_size=config.concurrency,
    )
    try:

        async def cycle(index: int) -> None:
            user = f"bench-reviewer-{index:02d}"
            row = await pool.fetchrow(
                claim.sql,
                *claim.bind(
                    {"queue": benchlib.QUEUE, "actor": user, "actor_role": Role.REVIEWER.value}
                ),
            )
            if row is None or row["id"] is None or row["escalated"] or row["overdue_exceptions"]:
                raise RuntimeError(f"claim returned {row}; are there enough items?")
            decided = await pool.fetchrow(
                decide.sql,
                *decide.bind(benchlib.approve_arguments(row, user)),
            )
            if decided is None:
                raise RuntimeError(f"decision on item {row['id']} was refused")

        cycles, seconds, warmup = await timed(cycle, config.concurrency, config.claim_cycles)
        rows = await pool.fetchval("SELECT count(*) FROM review_decisions")
        return Run(cycles, seconds, rows, warmup)
    finally:
        await pool.close()


# --- lifecycle: GraphQL ---------------------------------------------------------------------


@dataclass(frozen=True)
class People:
    integration: str
    reviewers: list[str]
    approvers: list[str]


async def post(conn: KeepAliveConnection, token: str, query: str, **variables: Any) -> Any:
    body = await conn.post_json(
        "/graphql", {"query": query, "variables": variables}, {"authorization": f"Bearer {token}"}
    )
    if body.get("errors"):
        raise RuntimeError(f"GraphQL call failed: {body}")
    [result] = body["data"].values()
    return result


def expect(result: dict[str, Any], typename: str) -> dict[str, Any]:
    if result["__typename"] != typename:
        raise RuntimeError(f"expected {typename}, got {result}")
    return result


def exception_cycle(connections: list[KeepAliveConnection], people: People) -> Cycle:
    counter = 0

    async def cycle(index: int) -> None:
        nonlocal counter
        counter += 1
        conn = connections[index]
        raised = {
            "workflow": WORKFLOW, "sourceRecordId": f"rec-{index}-{counter}",
            "reasonCode": REASON, "detail": "bench", "consequence": "MEDIUM",
            "completedSteps": ["a", "b"], "evidence": ["ref://bench"],
        }  # fmt: skip
        expect(await post(conn, people.integration, RAISE, i=raised), "ExceptionRaised")
        # Any worker's exception will do: each claim takes the first in line.
        mine = expect(await post(conn, people.reviewers[index], CLAIM, q=OWNER_QUEUE), "Claim")
        correction = {
            "exceptionId": mine["item"]["exception"]["id"], "leaseToken": mine["leaseToken"],
            "reasonCode": REASON, "changes": {"field": "fixed"}, "evidence": ["ref://fix"],
        }  # fmt: skip
        expect(await post(conn, people.reviewers[index], CORRECT, i=correction), "ExceptionUpdated")
        theirs = expect(await post(conn, people.approvers[index], CLAIM, q=APPROVAL_QUEUE), "Claim")
        exception = theirs["item"]["exception"]
        approval = {
            "exceptionId": exception["id"], "leaseToken": theirs["leaseToken"],
            "version": exception["version"],
        }  # fmt: skip
        expect(await post(conn, people.approvers[index], APPROVE, i=approval), "ExceptionUpdated")
        redrive = {"exceptionId": exception["id"], "version": exception["version"]}
        queued = expect(
            await post(conn, people.approvers[index], REDRIVE, i=redrive), "RedriveQueued"
        )
        report = {"redriveKey": queued["redriveKey"], "succeeded": True}
        expect(await post(conn, people.integration, REPORT, i=report), "RedriveResultRecorded")

    return cycle


def review_cycle(connections: list[KeepAliveConnection], people: People) -> Cycle:
    counter = 0

    async def cycle(index: int) -> None:
        nonlocal counter
        counter += 1
        conn = connections[index]
        item = {"externalKey": f"review-{index}-{counter}", "payload": {"n": counter}}
        expect(
            await post(conn, people.integration, ENQUEUE, q=benchlib.QUEUE, items=[item]),
            "EnqueuedItems",
        )
        claim = expect(await post(conn, people.reviewers[index], CLAIM, q=benchlib.QUEUE), "Claim")
        decision = {
            "itemId": claim["item"]["id"], "leaseToken": claim["leaseToken"],
            "verdict": "APPROVE", "reasonCode": benchlib.REASON_CODE,
            "evidenceHash": claim["evidenceHash"],
        }  # fmt: skip
        expect(await post(conn, people.reviewers[index], DECIDE, i=decision), "DecisionRecorded")

    return cycle


async def lifecycle_run(config: Config, database: str, people: People, kind: str) -> Run:
    async with benchlib.uvicorn_server(
        benchlib.app_dsn(config.server, database),
        pool_min=config.concurrency,
        pool_max=config.concurrency,
        env={"CASEWORK_WORKER_CONCURRENCY": "1"},
    ) as server:
        address = urlsplit(server.base_url)
        assert address.hostname is not None
        assert address.port is not None
        connections = [
            KeepAliveConnection(address.hostname, address.port) for _ in range(config.concurrency)
        ]
        for conn in connections:
            await conn.__aenter__()
        try:
            build = exception_cycle if kind == "exception" else review_cycle
            cycle = build(connections, people)
            cycles, seconds, warmup = await timed(
                cycle, config.concurrency, config.lifecycle_cycles
            )
        finally:
            for conn in connections:
                await conn.__aexit__(None, None, None)
    owner = await asyncpg.connect(benchlib.owner_dsn(config.server, database))
    try:
        if kind == "exception":
            rows = await owner.fetchval(
                "SELECT count(*) FROM exceptions WHERE closure = 'corrected'"
            )
        else:
            rows = await owner.fetchval("SELECT count(*) FROM review_decisions")
    finally:
        await owner.close()
    return Run(cycles, seconds, rows, warmup)


# --- setup and report -----------------------------------------------------------------------


async def build_template(config: Config, name: str) -> People:
    await benchlib.create_migrated(config.server, name)
    queries = benchlib.load_queries()
    app_pool = await create_pool(benchlib.app_dsn(config.server, name), min_size=1, max_size=2)
    owner_pool = await create_pool(benchlib.owner_dsn(config.server, name), min_size=1, max_size=1)
    try:
        db = Database(app_pool, queries)
        await benchlib.seed_queue(db)
        rng = random.Random(20261130)
        items = config.claim_cycles + config.concurrency * 2
        await benchlib.enqueue(db, [f"item-{n:06d}" for n in range(items)], rng)
        owner_db = Database(owner_pool, queries)
        admin = await create_token(owner_db, user="bench-admin", role=Role.ADMIN, queues=[])
        people = People(
            integration=await create_token(
                owner_db, user="bench-erp", role=Role.INTEGRATION, queues=[]
            ),
            reviewers=[
                await create_token(
                    owner_db,
                    user=f"bench-reviewer-{i:02d}",
                    role=Role.REVIEWER,
                    queues=[benchlib.QUEUE, OWNER_QUEUE],
                )
                for i in range(config.concurrency)
            ],
            approvers=[
                await create_token(
                    owner_db,
                    user=f"bench-approver-{i:02d}",
                    role=Role.APPROVER,
                    queues=[APPROVAL_QUEUE],
                )
                for i in range(config.concurrency)
            ],
        )
        async with benchlib.uvicorn_server(
            benchlib.app_dsn(config.server, name), pool_min=1, pool_max=2, env={}
        ) as server:
            address = urlsplit(server.base_url)
            assert address.hostname is not None
            assert address.port is not None
            async with KeepAliveConnection(address.hostname, address.port) as conn:
                body = await conn.post_json(
                    "/graphql", {"query": SETUP}, {"authorization": f"Bearer {admin}"}
                )
                if body.get("errors") or any(
                    "__typename" not in r or r["__typename"] in ("NotPermitted", "InvalidInput")
                    for r in body["data"].values()
                ):
                    raise RuntimeError(f"setup failed: {body}")
        return people
    finally:
        await app_pool.close()
        await owner_pool.close()


async def in_clone(config: Config, template: str, label: str, measure: Callable[[str], Any]) -> Run:
    name = benchlib.new_name(label)
    await benchlib.create_database(config.server, name, template=template)
    try:
        result: Run = await measure(name)
    finally:
        await benchlib.drop_database(config.server, name)
    return result


def pooled(runs: list[Run]) -> Run:
    return Run(
        sum(r.cycles for r in runs),
        sum(r.seconds for r in runs),
        sum(r.rows for r in runs),
        sum(r.warmup for r in runs),
    )


async def main(config: Config) -> None:
    template = benchlib.new_name("template")
    started = time.perf_counter()
    print(
        f"exception_bench: concurrency {config.concurrency}, {config.repeats} run(s) per "
        f"path, {config.open_exceptions} open exceptions seeded; {os.cpu_count()} CPUs",
        flush=True,
    )
    runs: dict[str, list[Run]] = {"empty": [], "loaded": [], "review": [], "exception": []}
    try:
        people = await build_template(config, template)
        for repeat in range(config.repeats):
            pairs = (("empty", "loaded"), ("review", "exception"))
            for first, second in pairs:
                order = (first, second) if repeat % 2 == 0 else (second, first)
                for mode in order:

                    async def measure(database: str, mode: str = mode) -> Run:
                        if mode in ("empty", "loaded"):
                            return await claim_run(config, database, mode == "loaded")
                        return await lifecycle_run(config, database, people, mode)

                    run = await in_clone(config, template, mode, measure)
                    runs[mode].append(run)
                    print(
                        f"  {mode:<9} {run.cycles} cycles in {run.seconds:.2f} s "
                        f"({run.rate:.0f}/s); rows {run.rows} for {run.cycles + run.warmup} "
                        f"cycles: {'ok' if run.rows == run.cycles + run.warmup else 'MISMATCH'}",
                        flush=True,
                    )
    finally:
        await benchlib.drop_database(config.server, template)
    total = {mode: pooled(found) for mode, found in runs.items()}
    empty, loaded = total["empty"], total["loaded"]
    review, exception = total["review"], total["exception"]
    print()
    claims = f"claims, raw SQL, {config.concurrency} workers"
    lifecycles = f"lifecycles, GraphQL, {config.concurrency} workers"
    benchlib.print_table(
        ["pair", "path", "cycles/s", "mutations/s", "ratio"],
        [
            [claims, "no exceptions", f"{empty.rate:.0f}", "-", "-"],
            [
                claims,
                f"{config.open_exceptions} open exceptions",
                f"{loaded.rate:.0f}",
                "-",
                f"{loaded.rate / empty.rate:.2f} (with/without)",
            ],
            [
                lifecycles,
                "review cycle (3 mutations)",
                f"{review.rate:.0f}",
                f"{review.rate * 3:.0f}",
                "-",
            ],
            [
                lifecycles,
                "exception cycle (7 mutations)",
                f"{exception.rate:.0f}",
                f"{exception.rate * 7:.0f}",
                f"{exception.rate * 7 / (review.rate * 3):.2f} (exception/review, per mutation)",
            ],
        ],
        title="claim+decide or lifecycle cycles per second, pooled over the runs of each path",
    )
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--claim-cycles", type=int, default=4000)
    parser.add_argument("--lifecycle-cycles", type=int, default=400)
    parser.add_argument("--open-exceptions", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    return Config(
        server=benchlib.require_local(args.database_url),
        concurrency=args.concurrency,
        claim_cycles=args.claim_cycles,
        lifecycle_cycles=args.lifecycle_cycles,
        open_exceptions=args.open_exceptions,
        repeats=args.repeats,
    )


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
