"""The manager dashboard's latency with 100k and with 1M decided items in the history.

Two databases are built side by side, each with 50 queues (`dash-00` … `dash-49`). Each
gets the same recent window: per queue, --recent decided items in the last six days
(hands-on times of 1 to 10 minutes, lease counts 1 to 3, a few overturned), lapsed and
released leases in the timeline, and --pending pending items. The rest of the history,
--small-history or --large-history decided items in all, was decided 30 to 60 days ago:
outside the 7-day window every measure reads. Rows are inserted with INSERT ... SELECT
generate_series as the owner (with triggers off, so the history has no application work
list: every old decision counts as carried out), then VACUUM ANALYZE.

One uvicorn process per database (bench/app_factory.py, create_app(dsn, dev=False)) serves
the dashboard query: every queue with `stats`, `measures` (counts, lease-count histograms,
percentiles, the TTL advice, `reasons`, `reviewers` and `capacity`) and 20 items with their
decisions, as POST /graphql with a manager token over a keep-alive connection
(bench/http1.py). After --warmup untimed requests to each, --requests timed requests per
database alternate between the two in rounds, so a noisy neighbour hits both alike.

    .venv/bin/python bench/dashboard_bench.py [--database-url URL] [--requests 100]

--base DIR measures two trees side by side instead of two history sizes: one database of
--large-history, served by a process of this tree and one of DIR (PYTHONPATH=DIR; run the
script from a directory that is neither tree, with PYTHONPATH=this tree), alternating in
rounds as above; the two answers must be the same, byte for byte once sorted (but for
oldestPendingAgeSeconds, a clock reading).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import benchlib
from http1 import KeepAliveConnection

from server.domain.identity.tokens import create_token
from server.domain.model import Role
from server.store.database import Database, create_pool

QUEUES = 50

DASHBOARD = """
{
  queues {
    name
    stats { pending leased oldestPendingAgeSeconds unappliedDecisions failedApplications }
    measures {
      arrivals decided escalated overturned backlog lapsedLeaseShare
      leaseCountAtDecision { leaseCount items }
      leaseCountPending { leaseCount items }
      handlingSeconds { samples p50 p90 p99 max }
      timeToDecisionSeconds { samples p50 p99 }
      recommendedLeaseTtlSeconds leaseTtlAdvice leaseCutOffShare
      reasons { code verdict count share }
      reviewers { reviewer decided overturned lapsedLeases handlingSeconds { p50 p99 } }
      capacity(availableReviewerMinutesPerDay: 2400) {
        arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog
        backlogMinutesPerDay headroomMinutesPerDay enough
      }
    }
    items(first: 20) { edges { node { id state leaseCount decisions { id verdict reviewer } } } }
  }
}
"""

SEED_QUEUES = """
INSERT INTO queues (name, lease_ttl_seconds)
SELECT 'dash-' || lpad(n::text, 2, '0'), 300 FROM generate_series(0, $1::int - 1) AS n;
"""

SEED_REASONS = """
INSERT INTO reason_codes (queue, code, label, verdicts)
SELECT q.name, r.code, r.code, ARRAY[r.verdict]
FROM queues AS q,
     (VALUES ('documents_ok', 'approve'), ('name_mismatch', 'reject'),
             ('address_mismatch', 'reject'), ('needs_senior', 'escalate')) AS r (code, verdict)
WHERE q.name LIKE 'dash-%'
"""

# Decided items of every dash queue: $1 per queue, decided between $2 and $2 + $3 seconds
# ago, hands-on 1 to 10 minutes, enqueued an hour or so before.
INSERT_DECIDED = """
WITH items AS (
    INSERT INTO review_items
        (origin_queue, queue, external_key, payload, evidence_hash, state, lease_count,
         lease_started_at, created_at, updated_at, decided_at)
    SELECT q.name, q.name, $4 || g, jsonb_build_object('n', g), repeat('0', 64), 'decided',
           1 + (g % 7 = 0)::int + (g % 31 = 0)::int,
           t.at - make_interval(secs => 60 + (g * 37) % 540), t.at - interval '1 hour',
           t.at, t.at
    FROM queues AS q,
         generate_series(1, $1::int) AS g,
         LATERAL (SELECT now() - make_interval(secs => $2 + (g * 7919) % $3::int) AS at) AS t
    WHERE q.name LIKE 'dash-%'
    -- In time order, as a real history is written (decisions are appended as they happen).
    ORDER BY t.at
    RETURNING id, queue, evidence_hash, lease_started_at, lease_count, created_at, decided_at
)
INSERT INTO review_decisions
    (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role, evidence_hash,
     lease_token, lease_started_at, lease_count, item_created_at, decided_at)
SELECT i.id, i.queue, v.verdict, v.verdict, v.code, 'reviewer-' || (h.n % 6), 'reviewer',
       i.evidence_hash, gen_random_uuid(), i.lease_started_at, i.lease_count, i.created_at,
       i.decided_at
FROM items AS i,
     -- Ids interleave the queues, so a hash of the id, not the id, spreads each queue's mix.
     LATERAL (SELECT abs(hashtext(i.id::text)) AS n) AS h,
     LATERAL (SELECT CASE WHEN h.n % 5 = 0 THEN 'reject' ELSE 'approve' END AS verdict,
                     CASE WHEN h.n % 10 = 0 THEN 'address_mismatch'
                          WHEN h.n % 5 = 0 THEN 'name_mismatch'
                          ELSE 'documents_ok' END AS code) AS v
ORDER BY i.decided_at
"""

# Overturns of a few recent approvals.
INSERT_OVERTURNS = """
INSERT INTO review_decisions
    (item_id, queue, verdict, outcome, reason_code, reviewer, reviewer_role, evidence_hash,
     supersedes, supersedes_decided_at, decided_at)
SELECT d.item_id, d.queue, 'overturn', 'reject', 'name_mismatch', 'approver', 'approver',
       d.evidence_hash, d.id, d.decided_at, least(now(), d.decided_at + interval '1 hour')
FROM review_decisions AS d
WHERE d.decided_at > now() - interval '7 days' AND d.outcome = 'approve' AND d.id % 40 = 0
"""

INSERT_PENDING = """
INSERT INTO review_items
    (origin_queue, queue, external_key, payload, evidence_hash, lease_count, created_at)
SELECT q.name, q.name, 'pending-' || g, jsonb_build_object('n', g), repeat('0', 64), g % 3,
       now() - make_interval(secs => g * 600)
FROM queues AS q, generate_series(1, $1::int) AS g
WHERE q.name LIKE 'dash-%'
"""

# Lapsed and released leases, old and recent, in the timeline.
INSERT_LEASE_ENDINGS = """
INSERT INTO item_events (item_id, queue, kind, actor, actor_role, lease_token,
                         lease_started_at, at)
SELECT d.item_id, d.queue, CASE WHEN d.id % 2 = 0 THEN 'lapsed' ELSE 'released' END,
       d.reviewer, 'reviewer', gen_random_uuid(), d.lease_started_at - interval '10 minutes',
       d.lease_started_at - interval '5 minutes'
FROM review_decisions AS d
WHERE d.verdict <> 'overturn' AND d.id % 9 = 0
"""

SIZES = """
SELECT (SELECT count(*) FROM review_items WHERE state = 'decided') AS decided,
       (SELECT count(*) FROM review_decisions
        WHERE decided_at > now() - interval '7 days') AS window_decisions,
       (SELECT count(*) FROM item_events) AS timeline_rows,
       pg_size_pretty(pg_total_relation_size('review_decisions')) AS decisions_size
"""


@dataclass(frozen=True)
class Config:
    server: str
    small_history: int
    large_history: int
    recent: int
    pending: int
    requests: int
    rounds: int
    warmup: int
    base: str | None = None


@dataclass
class State:
    label: str
    history: int
    name: str
    token: str = ""
    # Extra environment of its server process (--base: PYTHONPATH of the other tree).
    env: dict[str, str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)


async def build(config: Config, state: State) -> None:
    started = time.perf_counter()
    await benchlib.create_migrated(config.server, state.name)
    owner = await asyncpg.connect(benchlib.owner_dsn(config.server, state.name))
    try:
        await owner.execute(SEED_QUEUES, QUEUES)
        await owner.execute(SEED_REASONS)
        # Triggers off: the history gets no application work list (it was all carried out).
        await owner.execute("SET session_replication_role = replica")
        old = max(0, state.history // QUEUES - config.recent)
        await owner.execute(INSERT_DECIDED, old, 30 * 86400, 30 * 86400, "history-")
        await owner.execute(INSERT_DECIDED, config.recent, 60, 6 * 86400, "recent-")
        await owner.execute(INSERT_OVERTURNS)
        await owner.execute(INSERT_PENDING, config.pending)
        await owner.execute(INSERT_LEASE_ENDINGS)
        await owner.execute("RESET session_replication_role")
        await owner.execute("VACUUM ANALYZE")
        sizes = await owner.fetchrow(SIZES)
    finally:
        await owner.close()
    assert sizes is not None
    pool = await create_pool(benchlib.owner_dsn(config.server, state.name), min_size=1, max_size=1)
    try:
        state.token = await create_token(
            Database(pool, benchlib.load_queries()),
            user="bench-manager",
            role=Role.MANAGER,
            queues=[],
        )
    finally:
        await pool.close()
    print(
        f"  built {state.label}: {sizes['decided']:,} decided items "
        f"({sizes['window_decisions']:,} decisions in the 7-day window), "
        f"{sizes['timeline_rows']:,} timeline rows, review_decisions "
        f"{sizes['decisions_size']}, in {time.perf_counter() - started:.1f} s",
        flush=True,
    )


async def dashboard(connection: KeepAliveConnection, token: str) -> dict[str, Any]:
    body = await connection.post_json(
        "/graphql", {"query": DASHBOARD}, {"authorization": f"Bearer {token}"}
    )
    if body.get("errors"):
        raise RuntimeError(f"the dashboard failed: {body['errors']}")
    data: dict[str, Any] = body["data"]
    return data


async def timed(connection: KeepAliveConnection, state: State) -> None:
    started = time.perf_counter()
    await dashboard(connection, state.token)
    state.latencies.append(time.perf_counter() - started)


def check(data: dict[str, Any], config: Config) -> str:
    """What one answer says, so a run that measured an empty dashboard is seen as one."""
    queues = [q for q in data["queues"] if q["name"].startswith("dash-")]
    if len(queues) != QUEUES:
        raise RuntimeError(f"the dashboard showed {len(queues)} dash queues, not {QUEUES}")
    first = queues[0]["measures"]
    return (
        f"{len(data['queues'])} queues; dash-00: decided {first['decided']}, "
        f"backlog {first['backlog']}, handling p50 {first['handlingSeconds']['p50']:.0f} s, "
        f"{len(first['reviewers'])} reviewers, {len(first['reasons'])} reasons, "
        f"{len(queues[0]['items']['edges'])} items"
    )


def summary(state: State) -> tuple[float, float, float]:
    values = sorted(state.latencies)
    ms = 1000.0
    return (
        benchlib.percentile(values, 0.50) * ms,
        benchlib.percentile(values, 0.99) * ms,
        sum(values) / len(values) * ms,
    )


def report(small: State, large: State) -> None:
    print()
    rows = []
    for state in (small, large):
        p50, p99, mean = summary(state)
        rows.append([f"{state.history:,}", *(f"{v:.1f}" for v in (p50, p99, mean))])
    benchlib.print_table(
        ["history (decided items)", "p50 ms", "p99 ms", "mean ms"],
        rows,
        title=f"Dashboard latency, ms ({len(small.latencies)} timed requests per database)",
    )
    small_p50, small_p99, _ = summary(small)
    large_p50, large_p99, _ = summary(large)
    print()
    print(
        f"p50({large.label}) / p50({small.label}) = {large_p50 / small_p50:.2f}  "
        f"(target <= 1.5; p50({large.label}) target < 100 ms)"
    )
    print(f"p99({large.label}) / p99({small.label}) = {large_p99 / small_p99:.2f}")


def report_trees(before: State, after: State) -> None:
    print()
    rows = []
    for state in (before, after):
        p50, p99, mean = summary(state)
        rows.append([state.label, f"{state.history:,}", *(f"{v:.1f}" for v in (p50, p99, mean))])
    benchlib.print_table(
        ["tree", "history (decided items)", "p50 ms", "p99 ms", "mean ms"],
        rows,
        title=f"Dashboard latency, ms ({len(before.latencies)} timed requests per tree)",
    )
    (before_p50, before_p99, _), (after_p50, after_p99, _) = summary(before), summary(after)
    print()
    print(f"p50(after) / p50(before) = {after_p50 / before_p50:.2f}  (target <= 0.7)")
    print(f"p99(after) / p99(before) = {after_p99 / before_p99:.2f}")


# A clock reading (now() - the oldest pending item's enqueue), different on every request.
CLOCK_FIELDS = ("oldestPendingAgeSeconds",)


def canonical(data: dict[str, Any]) -> str:
    """The answer without its clock readings, as sorted JSON."""
    for queue in data["queues"]:
        for name in CLOCK_FIELDS:
            queue["stats"].pop(name, None)
    return json.dumps(data, sort_keys=True)


async def main(config: Config) -> None:
    if config.base is not None:
        await main_trees(config, config.base)
        return
    started = time.perf_counter()
    small = State(
        benchlib.history_label(config.small_history), config.small_history, benchlib.new_name("d1")
    )
    large = State(
        benchlib.history_label(config.large_history), config.large_history, benchlib.new_name("d2")
    )
    print(
        f"dashboard_bench: {QUEUES} queues, {config.recent} recent decisions and "
        f"{config.pending} pending items per queue; {config.requests} timed requests per "
        f"database in {config.rounds} alternating rounds after {config.warmup} warm-up",
        flush=True,
    )
    try:
        for state in (small, large):
            await build(config, state)
        async with contextlib.AsyncExitStack() as stack:
            addresses: dict[str, tuple[str, int]] = {}
            for state in (small, large):
                server = await stack.enter_async_context(
                    benchlib.uvicorn_server(
                        benchlib.app_dsn(config.server, state.name),
                        pool_min=2,
                        pool_max=4,
                        env={},
                    )
                )
                host, port = server.base_url.removeprefix("http://").split(":")
                addresses[state.name] = (host, int(port))
            for state in (small, large):
                async with KeepAliveConnection(*addresses[state.name]) as connection:
                    answer = await dashboard(connection, state.token)
                    print(f"  {state.label}: {check(answer, config)}", flush=True)
                    for _ in range(config.warmup):
                        await dashboard(connection, state.token)
            per_round = config.requests // config.rounds
            for round_index in range(config.rounds):
                order = (small, large) if round_index % 2 == 0 else (large, small)
                for state in order:
                    # A fresh connection per round: the server closes one idle for 5 s.
                    async with KeepAliveConnection(*addresses[state.name]) as connection:
                        for _ in range(per_round):
                            await timed(connection, state)
        report(small, large)
    finally:
        for state in (small, large):
            await benchlib.drop_database(config.server, state.name)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


async def main_trees(config: Config, base: str) -> None:
    """--base: one database, a server of each tree, the same alternating rounds."""
    started = time.perf_counter()
    name = benchlib.new_name("d2")
    label = benchlib.history_label(config.large_history)
    before = State(f"before ({base})", config.large_history, name, env={"PYTHONPATH": base})
    after = State("after (this tree)", config.large_history, name)
    print(
        f"dashboard_bench: {QUEUES} queues at {label}, {config.recent} recent decisions and "
        f"{config.pending} pending items per queue; before = {base}, after = this tree; "
        f"{config.requests} timed requests each in {config.rounds} alternating rounds",
        flush=True,
    )
    try:
        await build(config, after)
        before.token = after.token
        async with contextlib.AsyncExitStack() as stack:
            addresses: dict[str, tuple[str, int]] = {}
            answers: dict[str, str] = {}
            for state in (before, after):
                server = await stack.enter_async_context(
                    benchlib.uvicorn_server(
                        benchlib.app_dsn(config.server, name), pool_min=2, pool_max=4, env=state.env
                    )
                )
                host, port = server.base_url.removeprefix("http://").split(":")
                addresses[state.label] = (host, int(port))
            for state in (before, after):
                async with KeepAliveConnection(*addresses[state.label]) as connection:
                    answer = await dashboard(connection, state.token)
                    answers[state.label] = canonical(answer)
                    print(f"  {state.label}: {check(answer, config)}", flush=True)
                    for _ in range(config.warmup):
                        await dashboard(connection, state.token)
            if answers[before.label] != answers[after.label]:
                raise RuntimeError("the two trees answered the dashboard differently")
            print("  the two answers are the same", flush=True)
            per_round = config.requests // config.rounds
            for round_index in range(config.rounds):
                order = (before, after) if round_index % 2 == 0 else (after, before)
                for state in order:
                    async with KeepAliveConnection(*addresses[state.label]) as connection:
                        for _ in range(per_round):
                            await timed(connection, state)
        report_trees(before, after)
    finally:
        await benchlib.drop_database(config.server, name)
    print(f"\ntotal time {time.perf_counter() - started:.0f} s")


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--small-history", type=int, default=100_000)
    parser.add_argument("--large-history", type=int, default=1_000_000)
    parser.add_argument("--recent", type=int, default=100, help="decisions per queue in window")
    parser.add_argument("--pending", type=int, default=20, help="pending items per queue")
    parser.add_argument("--requests", type=int, default=100, help="timed requests per database")
    parser.add_argument("--rounds", type=int, default=10, help="alternations between databases")
    parser.add_argument("--warmup", type=int, default=5, help="untimed requests per database")
    parser.add_argument(
        "--base", default=None, help="another tree to measure against this one (see above)"
    )
    args = parser.parse_args(argv)
    if args.requests < args.rounds or args.rounds < 1:
        parser.error("--requests must be at least --rounds, and --rounds positive")
    if args.small_history < QUEUES * args.recent:
        parser.error("--small-history must hold the recent decisions: 50 * --recent or more")
    return Config(
        server=benchlib.require_local(args.database_url),
        small_history=args.small_history,
        large_history=args.large_history,
        recent=args.recent,
        pending=args.pending,
        requests=args.requests // args.rounds * args.rounds,
        rounds=args.rounds,
        warmup=args.warmup,
        base=args.base,
    )


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
