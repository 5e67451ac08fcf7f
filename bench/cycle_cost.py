"""What one claim+decide cycle costs PostgreSQL, statement by statement, in figures that do
not depend on the machine's load: buffers touched and WAL written, from
EXPLAIN (ANALYZE, BUFFERS, WAL), with the execution time beside them.

A fresh database is migrated and seeded with --history decided items (each with its
decision and its applied application) and --items pending items of queue `bench`; then
--cycles times, as one reviewer: item_claim_next, then decision_submit approving what was
claimed, each run under EXPLAIN ANALYZE (which executes it) with the arguments the domain
passes. The first --warmup cycles are left out; the medians of the rest are printed.

With --cpu, a second part runs --cpu-cycles plain cycles (no EXPLAIN) per round, --rounds
rounds, alternating between the casework statements and a raw baseline in the same
database: a minimal items table claimed with SKIP LOCKED, decided under the same fence
(token, owner, live lease, evidence), one row inserted into a minimal decision table, and
one pg_notify per transaction with a payload of the same shape. For each path it prints
what PostgreSQL's backend spent on CPU per cycle (from /proc/<pid>/schedstat of the
connection's backend: the server must be local and readable, as it is for a bench) and,
if the server preloads pg_stat_statements, each statement's buffers, WAL and execution
time per call, nested statements (triggers, foreign-key checks) included, which EXPLAIN's
top plan node leaves out. The ratio casework / raw is printed beside each figure.

With --before N as well, the casework cycle also runs on a second database migrated
without migration N and those after it, as a third path of every round: a schema change
against the schema before it, in one run, with a ratio per round. With --before-tree DIR
instead, the third path is another tree's casework cycle: a database migrated with DIR's
migrations, running DIR's claim and decision statements (say a worktree of main), so that
a change of statements and schema together is measured against what it changes, in one run.

Run it from two trees to compare them (each with its own PYTHONPATH and migrations):

    PYTHONPATH=$PWD .venv/bin/python bench/cycle_cost.py [--items 1200] [--cycles 300]
        [--cpu [--cpu-cycles 1000] [--rounds 4] [--before N | --before-tree DIR]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import benchlib

from server.domain.model import Role
from server.store import sql
from server.store.database import Database, create_pool
from server.store.migrate import apply_migrations
from server.store.queries import Queries

EXPLAIN = "EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) "
REVIEWER = "bench-reviewer-00"
SEED_ITEMS = (
    "INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash) "
    "SELECT $1, $1, 'k' || g, '{}', repeat('0', 64) FROM generate_series(1, $2::int) AS g"
)
# A decided history under the pending items, as a queue in use has: the decision log and
# the work list are not empty when the plans are made (on an empty table the planner
# rightly prefers a scan, and a plan made then would be measured scanning a growing table).
# Every application of the history has been applied, as in a queue whose worker keeps up.
SEED_HISTORY = (
    "INSERT INTO review_items (origin_queue, queue, external_key, payload, evidence_hash, "
    "state, decided_at) SELECT $1, $1, 'h' || g, '{}', repeat('0', 64), 'decided', now() "
    "FROM generate_series(1, $2::int) AS g",
    "INSERT INTO review_decisions (item_id, queue, verdict, outcome, reason_code, reviewer, "
    "reviewer_role, evidence_hash, lease_token) SELECT i.id, i.queue, 'approve', 'approve', "
    f"'{benchlib.REASON_CODE}', 'bench-history', 'reviewer', i.evidence_hash, "
    "gen_random_uuid() FROM review_items AS i WHERE i.state = 'decided'",
    # Whether the decision or a trigger wrote the application, the history has one each.
    "INSERT INTO decision_applications (decision_id, queue, decided_at) "
    "SELECT d.id, d.queue, d.decided_at FROM review_decisions AS d "
    "WHERE NOT EXISTS (SELECT 1 FROM decision_applications AS a WHERE a.decision_id = d.id)",
    "UPDATE decision_applications SET state = 'applied'",
    "INSERT INTO applied_decisions (decision_id) SELECT decision_id FROM decision_applications",
)
SEED_RAW_HISTORY = (
    "INSERT INTO raw_items (queue, payload, evidence_hash, state, decided_at) "
    "SELECT $1, '{}', repeat('0', 64), 'decided', now() FROM generate_series(1, $2::int) AS g",
    "INSERT INTO raw_decisions (item_id, verdict, reviewer, lease_token) "
    "SELECT r.id, 'approve', 'bench-history', gen_random_uuid() FROM raw_items AS r",
)
SEED_RAW_ITEMS = (
    "INSERT INTO raw_items (queue, payload, evidence_hash) "
    "SELECT $1, '{}', repeat('0', 64) FROM generate_series(1, $2::int) AS g"
)


async def seed_history(owner: asyncpg.Connection, statements: tuple[str, ...], count: int) -> None:
    for statement in statements:
        if "$2" in statement:
            await owner.execute(statement, benchlib.QUEUE, count)
        else:
            await owner.execute(statement)


@dataclass(frozen=True)
class Cost:
    buffers: int
    wal_records: int
    wal_bytes: int
    execution_ms: float

    @classmethod
    def from_plan(cls, explained: str) -> Cost:
        [top] = json.loads(explained)
        plan = top["Plan"]
        return cls(
            plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0),
            plan.get("WAL Records", 0),
            plan.get("WAL Bytes", 0),
            top["Execution Time"],
        )


async def measure(
    server: str, items: int, history: int, cycles: int, warmup: int
) -> dict[str, list[Cost]]:
    name = benchlib.new_name("cc")
    await benchlib.create_migrated(server, name)
    try:
        pool = await create_pool(benchlib.owner_dsn(server, name), min_size=1, max_size=1)
        try:
            await benchlib.seed_queue(Database(pool, benchlib.load_queries()))
        finally:
            await pool.close()
        owner = await asyncpg.connect(benchlib.owner_dsn(server, name))
        try:
            await seed_history(owner, SEED_HISTORY, history)
            await owner.execute(SEED_ITEMS, benchlib.QUEUE, items)
            await owner.execute("VACUUM ANALYZE")
        finally:
            await owner.close()
        app = await asyncpg.connect(benchlib.app_dsn(server, name))
        try:
            return await run_cycles(app, cycles, warmup)
        finally:
            await app.close()
    finally:
        await benchlib.drop_database(server, name)


async def run_cycles(app: asyncpg.Connection, cycles: int, warmup: int) -> dict[str, list[Cost]]:
    queries = benchlib.load_queries()
    claim = queries.statement(sql.items.ITEM_CLAIM_NEXT.name)
    decide = queries.statement(sql.decisions.DECISION_SUBMIT.name)
    costs: dict[str, list[Cost]] = {"claim": [], "decide": []}
    claim_arguments = {"queue": benchlib.QUEUE, "actor": REVIEWER}
    for cycle in range(cycles):
        claim_cost = Cost.from_plan(
            await app.fetchval(
                EXPLAIN + claim.sql,
                *claim.bind({**claim_arguments, "actor_role": Role.REVIEWER.value}),
            )
        )
        # EXPLAIN returns the plan, not the row: read what was claimed.
        held: Any = await app.fetchrow(
            "SELECT id, lease_token, evidence_hash FROM review_items "
            "WHERE lease_owner = $1 AND lease_token IS NOT NULL AND state = 'pending'",
            REVIEWER,
        )
        if held is None:
            raise RuntimeError("the claim took nothing: is --items larger than --cycles?")
        decide_cost = Cost.from_plan(
            await app.fetchval(
                EXPLAIN + decide.sql, *decide.bind(benchlib.approve_arguments(held, REVIEWER))
            )
        )
        if cycle >= warmup:
            costs["claim"].append(claim_cost)
            costs["decide"].append(decide_cost)
    return costs


def report(costs: dict[str, list[Cost]]) -> None:
    benchlib.print_table(
        ["statement", "buffers", "WAL records", "WAL bytes", "execution ms"],
        [
            [
                name,
                f"{statistics.median(r.buffers for r in rows):.0f}",
                f"{statistics.median(r.wal_records for r in rows):.0f}",
                f"{statistics.median(r.wal_bytes for r in rows):.0f}",
                f"{statistics.median(r.execution_ms for r in rows):.3f}",
            ]
            for name, rows in costs.items()
        ],
        title=f"EXPLAIN (ANALYZE, BUFFERS, WAL) per statement, medians of "
        f"{len(next(iter(costs.values())))} cycles",
    )


# --- the plain cycle, casework against a raw baseline -----------------------------------

# The raw baseline: what a claim+decide cycle costs with nothing but the essentials. The
# claim index is the one casework had before its claim controls; the decision table has a
# key and nothing else (no foreign keys, no outbox, no secondary index).
RAW_SCHEMA = """
CREATE TABLE raw_items (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue            text NOT NULL,
    priority         integer NOT NULL DEFAULT 0,
    payload          jsonb NOT NULL,
    evidence_hash    text NOT NULL,
    state            text NOT NULL DEFAULT 'pending',
    lease_owner      text,
    lease_token      uuid,
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    decided_at       timestamptz
);
CREATE INDEX raw_items_claimable ON raw_items (queue, priority DESC, created_at)
    WHERE state = 'pending';
CREATE TABLE raw_decisions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id     bigint NOT NULL,
    verdict     text NOT NULL,
    reviewer    text NOT NULL,
    lease_token uuid NOT NULL,
    decided_at  timestamptz NOT NULL DEFAULT now()
);
"""

RAW_CLAIM = """WITH candidate AS (
    SELECT r.id FROM raw_items AS r
    WHERE r.queue = $1 AND r.state = 'pending'
      AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= now())
    ORDER BY r.priority DESC, r.created_at
    LIMIT 1
    FOR UPDATE OF r SKIP LOCKED
)
UPDATE raw_items AS i
SET lease_owner = $2, lease_token = gen_random_uuid(),
    lease_expires_at = now() + interval '600 seconds'
FROM candidate AS c
WHERE i.id = c.id
RETURNING i.id, i.lease_token, i.evidence_hash,
          pg_notify('casework_events', json_build_object('k', 'claimed', 'q', i.queue,
                                                         'i', i.id)::text)"""

RAW_DECIDE = """WITH moved AS (
    UPDATE raw_items AS i
    SET state = 'decided', decided_at = now(),
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
    WHERE i.id = $1 AND i.lease_token = $2 AND i.lease_owner = $3
      AND i.state = 'pending' AND i.lease_expires_at > now() AND i.evidence_hash = $4
    RETURNING i.id, i.queue
),
recorded AS (
    INSERT INTO raw_decisions (item_id, verdict, reviewer, lease_token)
    SELECT m.id, 'approve', $3, $2 FROM moved AS m
    RETURNING id, item_id
)
SELECT r.id, pg_notify('casework_events',
                       json_build_object('k', 'decided', 'q', m.queue, 'i', r.item_id,
                                         'd', r.id)::text)
FROM recorded AS r JOIN moved AS m ON m.id = r.item_id"""

PATHS = ("casework", "raw")
# With --before N: the casework cycle also runs on a second database migrated without
# migration N and those after it, alternating with the other two paths in the same run,
# so that a schema change is measured against the schema before it round by round.
BEFORE = "before"
# pg_stat_statements' counters per call, in the order they are printed.
STATEMENT_FIGURES = (
    ("buffers", "shared_blks_hit + shared_blks_read"),
    ("dirtied", "shared_blks_dirtied"),
    ("WAL rec", "wal_records"),
    ("WAL FPI", "wal_fpi"),
    ("WAL bytes", "wal_bytes"),
    ("exec ms", "total_exec_time"),
)


def backend_cpu_ns(pid: int) -> int:
    """CPU time the backend has run, in nanoseconds (the scheduler's own count: finer than
    the clock ticks of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/schedstat") as stat:
        return int(stat.read().split()[0])


@dataclass
class PathRun:
    cpu_us_per_cycle: list[float]
    # statement -> figure -> per-call value, one per round
    statements: dict[str, dict[str, list[float]]]


async def plain_cycles(
    server: str,
    items: int,
    history: int,
    cycles: int,
    rounds: int,
    warmup: int,
    before: int | None,
    before_tree: Path | None,
) -> None:
    name = benchlib.new_name("cc")
    has_before = before is not None or before_tree is not None
    before_name = benchlib.new_name("cc") if has_before else None
    try:
        await benchlib.create_migrated(server, name)
        owner = await asyncpg.connect(benchlib.owner_dsn(server, name))
        before_owner = None
        try:
            await owner.execute(RAW_SCHEMA)
            await owner.execute(
                "GRANT SELECT, INSERT, UPDATE ON raw_items, raw_decisions TO casework_app"
            )
            await seed_history(owner, SEED_RAW_HISTORY, history)
            await owner.execute(SEED_RAW_ITEMS, benchlib.QUEUE, items)
            await seed_casework(server, name, owner, items, history)
            has_pgss = bool(
                await owner.fetchval(
                    "SELECT 'pg_stat_statements' = ANY (string_to_array("
                    "current_setting('shared_preload_libraries'), ','))"
                )
            )
            if has_pgss:
                await owner.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            owners = {"casework": owner, "raw": owner}
            database_of = {"casework": name, "raw": name}
            if before_name is not None:
                await create_migrated_before(server, before_name, before, before_tree)
                before_owner = await asyncpg.connect(benchlib.owner_dsn(server, before_name))
                await seed_casework(server, before_name, before_owner, items, history)
                if has_pgss:
                    await before_owner.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                owners[BEFORE] = before_owner
                database_of[BEFORE] = before_name
            apps = {
                path: await asyncpg.connect(benchlib.app_dsn(server, database))
                for path, database in database_of.items()
            }
            try:
                before_queries = Queries(before_tree / "db" / "queries") if before_tree else None
                runs = await alternate(
                    owners, apps, cycles, rounds, warmup, has_pgss, before_queries
                )
                hot = await hot_ratios(owner, apps["casework"])
            finally:
                for app in apps.values():
                    await app.close()
        finally:
            await owner.close()
            if before_owner is not None:
                await before_owner.close()
    finally:
        await benchlib.drop_database(server, name)
        if before_name is not None:
            await benchlib.drop_database(server, before_name)
    report_plain(runs, hot, cycles, has_pgss, before, before_tree)


async def seed_casework(
    server: str, name: str, owner: asyncpg.Connection, items: int, history: int
) -> None:
    pool = await create_pool(benchlib.owner_dsn(server, name), min_size=1, max_size=1)
    try:
        await benchlib.seed_queue(Database(pool, benchlib.load_queries()))
    finally:
        await pool.close()
    await seed_history(owner, SEED_HISTORY, history)
    await owner.execute(SEED_ITEMS, benchlib.QUEUE, items)
    await owner.execute("VACUUM ANALYZE")


async def create_migrated_before(
    server: str, name: str, before: int | None, tree: Path | None
) -> None:
    """A database migrated with the migrations numbered below `before` only, or with every
    migration of another tree."""
    await benchlib.create_database(server, name)
    migrations = tree / "db" / "migrations" if tree else benchlib.MIGRATIONS_DIR
    with tempfile.TemporaryDirectory() as earlier:
        for migration in sorted(migrations.glob("*.sql")):
            if before is None or int(migration.name[:4]) < before:
                shutil.copy(migration, earlier)
        conn = await asyncpg.connect(benchlib.owner_dsn(server, name))
        try:
            await apply_migrations(conn, Path(earlier))
        finally:
            await conn.close()


async def alternate(
    owners: dict[str, asyncpg.Connection],
    apps: dict[str, asyncpg.Connection],
    cycles: int,
    rounds: int,
    warmup: int,
    has_pgss: bool,
    before_queries: Queries | None,
) -> dict[str, PathRun]:
    queries = benchlib.load_queries()
    claim = queries.statement(sql.items.ITEM_CLAIM_NEXT.name)
    decide = queries.statement(sql.decisions.DECISION_SUBMIT.name)
    # The other tree's statements, for its path; their parameters are the same.
    statements_of = {path: (claim, decide) for path in apps}
    if before_queries is not None:
        statements_of[BEFORE] = (
            before_queries.statement(sql.items.ITEM_CLAIM_NEXT.name),
            before_queries.statement(sql.decisions.DECISION_SUBMIT.name),
        )
    claim_values = claim.bind(
        {"queue": benchlib.QUEUE, "actor": REVIEWER, "actor_role": Role.REVIEWER.value}
    )
    paths = tuple(apps)
    # Each statement opens with a comment that names it, so that its pg_stat_statements row
    # is found by its text (the comment changes neither the plan nor the query id).
    statement_of = {
        path: {name: f"/* cycle_cost {path} {name} */\n" for name in ("claim", "decide")}
        for path in paths
    }

    def casework_cycle(path: str) -> Callable[[], Awaitable[None]]:
        app = apps[path]
        path_claim, path_decide = statements_of[path]
        claim_sql = statement_of[path]["claim"] + path_claim.sql
        decide_sql = statement_of[path]["decide"] + path_decide.sql

        async def cycle() -> None:
            row = await app.fetchrow(claim_sql, *claim_values)
            if row is None or row["id"] is None:
                raise RuntimeError("the claim took nothing: raise --items")
            arguments = path_decide.bind(benchlib.approve_arguments(row, REVIEWER))
            if await app.fetchrow(decide_sql, *arguments) is None:
                raise RuntimeError("the decision was refused")

        return cycle

    raw_claim_sql = statement_of["raw"]["claim"] + RAW_CLAIM
    raw_decide_sql = statement_of["raw"]["decide"] + RAW_DECIDE

    async def raw_cycle() -> None:
        app = apps["raw"]
        row = await app.fetchrow(raw_claim_sql, benchlib.QUEUE, REVIEWER)
        if row is None:
            raise RuntimeError("the raw claim took nothing: raise --items")
        if (
            await app.fetchrow(
                raw_decide_sql, row["id"], row["lease_token"], REVIEWER, row["evidence_hash"]
            )
            is None
        ):
            raise RuntimeError("the raw decision was refused")

    cycle_of = {path: raw_cycle if path == "raw" else casework_cycle(path) for path in paths}
    pid = {path: await app.fetchval("SELECT pg_backend_pid()") for path, app in apps.items()}
    database_id = {
        path: await owner.fetchval("SELECT oid FROM pg_database WHERE datname = current_database()")
        for path, owner in owners.items()
    }
    for path in paths:
        for _ in range(warmup):
            await cycle_of[path]()
    runs = {path: PathRun([], {}) for path in paths}
    for round_number in range(rounds):
        order = paths if round_number % 2 == 0 else paths[::-1]
        for path in order:
            owner = owners[path]
            if has_pgss:
                await owner.execute("SELECT pg_stat_statements_reset(0, $1, 0)", database_id[path])
            started = backend_cpu_ns(pid[path])
            for _ in range(cycles):
                await cycle_of[path]()
            spent = backend_cpu_ns(pid[path]) - started
            runs[path].cpu_us_per_cycle.append(spent / cycles / 1000)
            if has_pgss:
                await read_statements(owner, database_id[path], statement_of[path], runs[path])
    return runs


async def read_statements(
    owner: asyncpg.Connection, database_id: int, prefixes: dict[str, str], run: PathRun
) -> None:
    figures = ", ".join(
        f"sum({column})::float8 / sum(calls) AS f{n}"
        for n, (_, column) in enumerate(STATEMENT_FIGURES)
    )
    for statement, prefix in prefixes.items():
        row = await owner.fetchrow(
            f"SELECT {figures} FROM pg_stat_statements "
            "WHERE dbid = $1 AND toplevel AND starts_with(query, $2)",
            database_id,
            prefix,
        )
        if row is None or row["f0"] is None:
            raise RuntimeError(f"pg_stat_statements has no row for {statement}")
        per_figure = run.statements.setdefault(statement, {})
        for n, (label, _) in enumerate(STATEMENT_FIGURES):
            per_figure.setdefault(label, []).append(row[f"f{n}"])


async def hot_ratios(owner: asyncpg.Connection, app: asyncpg.Connection) -> dict[str, str]:
    """Updates that were HOT (no index entry written), per items table, over the whole run."""
    await app.execute("SELECT pg_stat_force_next_flush()")
    await app.execute("SELECT 1")  # the flush happens at the end of a transaction
    await owner.execute("SELECT pg_stat_clear_snapshot()")
    rows = await owner.fetch(
        "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
        "WHERE relname IN ('review_items', 'raw_items')"
    )
    return {
        row["relname"]: f"{row['n_tup_hot_upd']} of {row['n_tup_upd']} updates HOT" for row in rows
    }


def report_plain(
    runs: dict[str, PathRun],
    hot: dict[str, str],
    cycles: int,
    has_pgss: bool,
    before: int | None,
    before_tree: Path | None,
) -> None:
    print()
    print(
        f"plain cycles: {len(runs['raw'].cpu_us_per_cycle)} rounds of {cycles} per path, "
        "alternating; medians of the rounds"
    )
    if before is not None:
        print(f"{BEFORE}: the casework cycle on a database without migrations {before:04d} on")
    if before_tree is not None:
        print(f"{BEFORE}: the casework cycle of {before_tree} (its migrations and statements)")
    cpu = {path: statistics.median(run.cpu_us_per_cycle) for path, run in runs.items()}
    rounds = {
        path: ", ".join(f"{v:.0f}" for v in run.cpu_us_per_cycle) for path, run in runs.items()
    }
    print(
        "PostgreSQL backend CPU per cycle, us: "
        + ", ".join(f"{path} {cpu[path]:.0f} ({rounds[path]})" for path in runs)
        + f", casework/raw {cpu['casework'] / cpu['raw']:.2f}"
        + (f", {BEFORE}/raw {cpu[BEFORE] / cpu['raw']:.2f}" if BEFORE in cpu else "")
    )
    # Each round runs every path once, back to back: its ratio cancels most of the
    # machine's drift between rounds.
    for path in (p for p in ("casework", BEFORE) if p in runs):
        paired = [
            ours / raw
            for ours, raw in zip(
                runs[path].cpu_us_per_cycle, runs["raw"].cpu_us_per_cycle, strict=True
            )
        ]
        print(
            f"{path}/raw per round: "
            + ", ".join(f"{r:.2f}" for r in paired)
            + f"; median {statistics.median(paired):.2f}"
        )
    if BEFORE in runs:
        # Each round runs every path once, back to back: its ratio cancels most of the
        # machine's drift between rounds.
        paired = [
            ours / theirs
            for ours, theirs in zip(
                runs["casework"].cpu_us_per_cycle, runs[BEFORE].cpu_us_per_cycle, strict=True
            )
        ]
        print(
            f"casework/{BEFORE} per round: "
            + ", ".join(f"{r:.3f}" for r in paired)
            + f"; median {statistics.median(paired):.3f}"
        )
    for table, ratio in sorted(hot.items()):
        print(f"{table}: {ratio}")
    if not has_pgss:
        print("(the server does not preload pg_stat_statements: no per-statement figures)")
        return
    labels = [label for label, _ in STATEMENT_FIGURES]
    rows = []
    for statement in ("claim", "decide"):
        cells = []
        for label in labels:
            ours = statistics.median(runs["casework"].statements[statement][label])
            theirs = statistics.median(runs["raw"].statements[statement][label])
            ratio = f"{ours / theirs:.1f}" if theirs else "-"
            number = (
                f"{ours:.3f}/{theirs:.3f}" if label == "exec ms" else f"{ours:.1f}/{theirs:.1f}"
            )
            cells.append(f"{number} ({ratio})")
        rows.append([statement, *cells])
    benchlib.print_table(
        ["per call", *labels], rows, title="pg_stat_statements per call: casework/raw (x)"
    )
    if BEFORE in runs:
        rows = []
        for statement in ("claim", "decide"):
            cells = []
            for label in labels:
                mine_rounds = runs["casework"].statements[statement][label]
                earlier_rounds = runs[BEFORE].statements[statement][label]
                mine = statistics.median(mine_rounds)
                earlier = statistics.median(earlier_rounds)
                ratio = f"{mine / earlier:.2f}" if earlier else "-"
                number = (
                    f"{mine:.3f}/{earlier:.3f}"
                    if label == "exec ms"
                    else f"{mine:.1f}/{earlier:.1f}"
                )
                cells.append(f"{number} ({ratio})")
            rows.append([statement, *cells])
        benchlib.print_table(
            ["per call", *labels],
            rows,
            title=f"pg_stat_statements per call: casework/{BEFORE} (x)",
        )
        print(
            "exec ms per round, casework/before: "
            + "; ".join(
                f"{statement} "
                + ", ".join(
                    f"{a / b:.2f}"
                    for a, b in zip(
                        runs["casework"].statements[statement]["exec ms"],
                        runs[BEFORE].statements[statement]["exec ms"],
                        strict=True,
                    )
                )
                for statement in ("claim", "decide")
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--items", type=int, default=1200)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--history", type=int, default=20000, help="decided items beforehand")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--cpu", action="store_true", help="also run the plain cycles")
    parser.add_argument("--cpu-cycles", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--before",
        type=int,
        metavar="N",
        help="with --cpu: also run the casework cycle on a database without migration N and "
        "those after it, alternating round by round",
    )
    parser.add_argument(
        "--before-tree",
        type=Path,
        metavar="DIR",
        help="with --cpu: also run the casework cycle of another tree (its migrations and "
        "statements), alternating round by round",
    )
    args = parser.parse_args()
    if args.before is not None and args.before_tree is not None:
        parser.error("--before and --before-tree are one or the other")
    server = benchlib.require_local(args.database_url)
    report(asyncio.run(measure(server, args.items, args.history, args.cycles, args.warmup)))
    if args.cpu:
        plain_items = args.cpu_cycles * args.rounds + args.warmup + 10
        asyncio.run(
            plain_cycles(
                server,
                plain_items,
                args.history,
                args.cpu_cycles,
                args.rounds,
                args.warmup,
                args.before,
                args.before_tree,
            )
        )


if __name__ == "__main__":
    main()
