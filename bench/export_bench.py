"""`casework export queue` at two sizes side by side: items per second, and the export
process's peak RSS, which stays flat as the window grows because the export streams.

For each size (default 10,000 and 50,000) a scratch database gets queue `bench` (through
the domain) and that many decided items, seeded as the owner with INSERT ... SELECT
generate_series: each item has its `enqueued` timeline row, every 4th a `noted` row, one
decision (every 3rd with a note) under a lease, and an application that took two attempts
(a transient failure, then applied), then VACUUM ANALYZE. The export runs as the operator
runs it, `python -m server.cli export queue bench --since ... --until ... --output FILE`,
in a process of its own; its wall time (start-up included) and its peak RSS (from wait4)
are measured, and the file is checked: one line per item, each with its own hash. The sizes
are exported in alternating order for --repeats rounds.

    .venv/bin/python bench/export_bench.py [--database-url URL] [--sizes 10000 50000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import benchlib

from server.config import REPO_ROOT
from server.domain.review.evidence import canonical_json
from server.store.database import Database, connect

SINCE = "2026-11-01"
UNTIL = "2026-12-01"
WINDOW_START = datetime(2026, 11, 1, tzinfo=UTC)

SEED = [
    # Items enqueued across the window, decided five minutes later.
    """
    INSERT INTO review_items
        (origin_queue, queue, external_key, priority, payload, evidence_hash, state,
         lease_count, created_at, updated_at, decided_at, lease_started_at)
    SELECT $1, $1, 'item-' || g, g % 10,
           jsonb_build_object('applicant', jsonb_build_object('name', 'Applicant ' || g,
                                                              'country', 'NL'),
                              'score', g % 1000,
                              'documents', jsonb_build_array('passport', 'utility_bill')),
           encode(sha256(convert_to('item-' || g, 'UTF8')), 'hex'), 'decided', 1,
           $3::timestamptz + g * ($4::interval / $2),
           $3::timestamptz + g * ($4::interval / $2) + interval '5 minutes',
           $3::timestamptz + g * ($4::interval / $2) + interval '5 minutes',
           $3::timestamptz + g * ($4::interval / $2) + interval '1 minute'
    FROM generate_series(1, $2::bigint) AS g
    """,
    """
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, detail, at, recorded_at)
    SELECT i.id, i.queue, 'enqueued', 'bench-integration', 'integration',
           jsonb_build_object('evidence_hash', i.evidence_hash), i.created_at, i.created_at
    FROM review_items AS i WHERE i.queue = $1
    """,
    """
    INSERT INTO item_events (item_id, queue, kind, actor, actor_role, body, at, recorded_at)
    SELECT i.id, i.queue, 'noted', 'bench-reviewer', 'reviewer',
           'Asked the applicant for a second document.',
           i.created_at + interval '2 minutes', i.created_at + interval '2 minutes'
    FROM review_items AS i WHERE i.queue = $1 AND i.id % 4 = 0
    """,
    # The trigger of migration 0004 puts each decision on the work list.
    """
    INSERT INTO review_decisions
        (item_id, queue, verdict, outcome, reason_code, note, reviewer, reviewer_role,
         evidence_hash, lease_token, lease_started_at, lease_count, item_created_at,
         decided_at)
    SELECT i.id, i.queue, 'approve', 'approve', $2,
           CASE WHEN i.id % 3 = 0 THEN 'Documents match the application.' END,
           'bench-reviewer', 'reviewer', i.evidence_hash, gen_random_uuid(),
           i.lease_started_at, 1, i.created_at, i.decided_at
    FROM review_items AS i WHERE i.queue = $1
    """,
    """
    INSERT INTO apply_attempts
        (decision_id, attempt, worker, started_at, finished_at, outcome, error, next_retry_at)
    SELECT d.id, a.attempt, 'bench-worker', d.decided_at + a.attempt * interval '1 second',
           d.decided_at + a.attempt * interval '1 second' + interval '40 milliseconds',
           CASE a.attempt WHEN 1 THEN 'transient' ELSE 'applied' END,
           CASE a.attempt WHEN 1 THEN '503 Service Unavailable' END,
           CASE a.attempt WHEN 1 THEN d.decided_at + interval '2 seconds' END
    FROM review_decisions AS d CROSS JOIN (VALUES (1), (2)) AS a (attempt)
    WHERE d.queue = $1
    """,
    """
    INSERT INTO applied_decisions (decision_id, applied_at, note)
    SELECT d.id, d.decided_at + interval '2 seconds', 'account opened'
    FROM review_decisions AS d WHERE d.queue = $1
    """,
    """
    UPDATE decision_applications
    SET state = 'applied', attempts = 2, updated_at = decided_at + interval '2 seconds'
    WHERE queue = $1
    """,
]


@dataclass
class Size:
    items: int
    database: str
    seconds: list[float] = field(default_factory=list)
    peak_rss_kib: list[int] = field(default_factory=list)
    bytes_written: int = 0


async def seed(server: str, size: Size) -> float:
    started = time.perf_counter()
    await benchlib.create_migrated(server, size.database)
    conn = await connect(benchlib.owner_dsn(server, size.database))
    try:
        await benchlib.seed_queue(Database(conn, benchlib.load_queries()))
        for statement in SEED:
            arguments: list[object] = [benchlib.QUEUE]
            if "$4" in statement:
                arguments += [size.items, WINDOW_START, timedelta(days=29)]
            elif "$2" in statement:
                arguments.append(benchlib.REASON_CODE)
            await conn.execute(statement, *arguments)
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()
    return time.perf_counter() - started


def export(server: str, size: Size, output: Path) -> None:
    """One export in a process of its own; its wall time and peak RSS (wait4)."""
    env = {
        **os.environ,
        "DATABASE_URL": benchlib.owner_dsn(server, size.database),
        "CASEWORK_APP_DATABASE_URL": benchlib.app_dsn(server, size.database),
    }
    command = [sys.executable, "-m", "server.cli", "export", "queue", benchlib.QUEUE]
    command += ["--since", SINCE, "--until", UNTIL, "--output", str(output)]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"export failed ({process.returncode}): {stderr}")
    size.seconds.append(elapsed)
    size.peak_rss_kib.append(usage.ru_maxrss)  # KiB on Linux
    size.bytes_written = check_output(output, size.items)


def check_output(output: Path, expected: int) -> int:
    lines = 0
    with output.open("rb") as packs:
        for line in packs:
            document = json.loads(line)
            digest = hashlib.sha256(canonical_json(document["pack"])).hexdigest()
            if digest != document["sha256"]:
                raise SystemExit(f"line {lines + 1}: the hash does not match its pack")
            lines += 1
    if lines != expected:
        raise SystemExit(f"expected {expected} lines, found {lines}")
    return output.stat().st_size


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    server = benchlib.require_local(args.database_url)
    sizes = [Size(items, benchlib.new_name(f"export_{items}")) for items in args.sizes]
    print(
        f"export_bench: sizes {', '.join(f'{s.items:,}' for s in sizes)}; "
        f"{args.repeats} round(s), order alternating; window [{SINCE}, {UNTIL})"
    )
    try:
        for size in sizes:
            seconds = await seed(server, size)
            print(f"  seeded {size.items:,} decided items in {seconds:.1f} s", flush=True)
        with tempfile.TemporaryDirectory(prefix="casework_export_bench_") as scratch:
            for round_number in range(args.repeats):
                order = sizes if round_number % 2 == 0 else sizes[::-1]
                for size in order:
                    export(server, size, Path(scratch) / f"{size.items}.jsonl")
    finally:
        for size in sizes:
            await benchlib.drop_database(server, size.database)
    print()
    smallest = sizes[0]
    benchlib.print_table(
        ["items", "best s", "items/s", "peak RSS MiB", "MiB out"],
        [
            [
                f"{size.items:,}",
                f"{min(size.seconds):.2f}",
                f"{size.items / min(size.seconds):,.0f}",
                f"{max(size.peak_rss_kib) / 1024:.1f}",
                f"{size.bytes_written / 2**20:.1f}",
            ]
            for size in sizes
        ],
    )
    for size in sizes[1:]:
        print(
            f"  {size.items:,} / {smallest.items:,}: items x{size.items / smallest.items:.1f}, "
            f"peak RSS x{max(size.peak_rss_kib) / max(smallest.peak_rss_kib):.2f}"
        )
    print("  load average at the end " + " ".join(f"{load:.2f}" for load in os.getloadavg()))


if __name__ == "__main__":
    benchlib.run(main)
