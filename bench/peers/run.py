"""Claim+decide cycles per second: Casework against its peers on one PostgreSQL, interleaved.

Paths (each cell: a fresh database cloned from its path's seeded template):

  casework      the service over GraphQL/HTTP, exactly as bench/claim_bench.py's graphql
                path: uvicorn with bench/app_factory.py, a pool of N, N keep-alive clients
                (bench/http1.py) with one reviewer token each, claimNext then submitDecision.
  postgraphile  PostGraphile v4 (npm, installed into bench/peers/.cache) serving the SQL
                of raw+notify as two mutation functions, pool of N, N keep-alive clients
                with one JWT each, documents of the same shape.
  pgqueuer      pgqueuer's own queries (PyPI) on an asyncpg pool of N: dequeue one job,
                log it successful, per cycle; jobs enqueued up front.
  raw           bench/peers/review_queue.sql over an asyncpg pool of N: claim (UPDATE ...
                WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)) and a fenced
                decision, no NOTIFY.
  raw+notify    the same, with the two NOTIFYs per cycle Casework sends, and a listener.

For each concurrency N, each path runs --repeats times, the order of the paths reversed
on every other round so a drift of the machine hits all of them; the runs of a cell are
pooled. Every run does --warmup untimed cycles per worker, then the workers share a
budget of --cycles timed cycles; afterwards the decision rows (pgqueuer: its successful
log rows) are counted against the cycles done. Around the timed window the CPU seconds of
this process (the clients), of the server process (uvicorn or node) and of the PostgreSQL
backends of the cell's database are read from /proc.

    pip install -e '.[bench]'     # pgqueuer, matplotlib; npm and node must be on PATH
    .venv/bin/python bench/peers/run.py [--concurrency 1 8 32] [--plot out.png]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

# The shared bench helpers live one directory up; this script runs as bench/peers/run.py.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchlib
import claim_bench
import peer_pgqueuer
import peer_postgraphile
import peer_raw

PATHS = ("casework", "postgraphile", "pgqueuer", "raw", "raw+notify")
# Issue 15's targets, printed beside the figures.
TARGET_VS_POSTGRAPHILE = 2.0
TARGET_VS_RAW_NOTIFY = 0.6
TARGET_SERVER_MS = 0.8
TARGET_POSTGRES_VS_RAW_NOTIFY = 1.5


@dataclass(frozen=True)
class Config:
    server: str
    concurrency: list[int]
    paths: list[str]
    items: int
    cycles: int
    warmup: int
    repeats: int
    plot: Path | None


@dataclass(frozen=True)
class Templates:
    casework: str
    casework_tokens: list[str]
    review_queue: str
    pgqueuer: str


Measure = Callable[[str, int], Awaitable[tuple[benchlib.Measurement, int | None]]]


def measures(config: Config, templates: Templates) -> dict[str, tuple[str, Measure]]:
    """Each path's template and how one cell of it is measured (a database, N) ->
    (measurement, hints received by the listener where the path counts them)."""
    casework_config = claim_bench.Config(
        server=config.server,
        concurrency=config.concurrency,
        items=config.items,
        cycles=config.cycles,
        warmup=config.warmup,
        repeats=config.repeats,
        hints="notify",
        redis_url="",
        server_workers=[],
    )

    async def casework(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        tokens = templates.casework_tokens
        measured = await claim_bench.measure_graphql(casework_config, database, n, tokens, None)
        return measured, None

    async def postgraphile(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        args = (config.server, database, n, config.cycles, config.warmup)
        return await peer_postgraphile.measure(*args), None

    async def pgqueuer(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        args = (config.server, database, n, config.cycles, config.warmup)
        return await peer_pgqueuer.measure(*args), None

    async def raw(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        args = (config.server, database, n, config.cycles, config.warmup)
        return await peer_raw.measure(*args, notify=False)

    async def raw_notify(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        args = (config.server, database, n, config.cycles, config.warmup)
        return await peer_raw.measure(*args, notify=True)

    return {
        "casework": (templates.casework, casework),
        "postgraphile": (templates.review_queue, postgraphile),
        "pgqueuer": (templates.pgqueuer, pgqueuer),
        "raw": (templates.review_queue, raw),
        "raw+notify": (templates.review_queue, raw_notify),
    }


async def one_run(
    config: Config, path: str, template: str, measure: Measure, concurrency: int
) -> benchlib.Measurement:
    name = benchlib.new_name(f"peer{concurrency}")
    await benchlib.create_database(config.server, name, template=template)
    try:
        result, hints = await measure(name, concurrency)
    finally:
        await benchlib.drop_database(config.server, name)
    expected = result.warmup_cycles + result.cycles
    verdict = "ok" if result.decisions == expected else "MISMATCH"
    hint_text = ""
    if hints is not None:
        wanted = peer_raw.HINTS_PER_CYCLE * expected
        hint_text = f"; hints heard {hints} (expected {wanted})"
        if hints != wanted:
            verdict = "MISMATCH"
    print(
        f"  c={concurrency:<3} {path:<12} {result.cycles} timed + {result.warmup_cycles} warm-up "
        f"cycles in {result.seconds:.2f} s; decisions {result.decisions} "
        f"(expected {expected}){hint_text}: {verdict}",
        flush=True,
    )
    if verdict != "ok":
        raise SystemExit(f"{path} at concurrency {concurrency} did not do what it counted")
    return result


async def build_templates(config: Config) -> Templates:
    names = Templates(
        benchlib.new_name("peer_casework"),
        [],
        benchlib.new_name("peer_review_queue"),
        benchlib.new_name("peer_pgqueuer"),
    )
    casework_config = claim_bench.Config(
        config.server, config.concurrency, config.items, 0, 0, 1, "notify", "", []
    )
    tokens = await claim_bench.build_template(casework_config, names.casework)
    await peer_raw.build_template(config.server, names.review_queue, config.items)
    await peer_pgqueuer.build_template(config.server, names.pgqueuer, config.items)
    return Templates(names.casework, tokens, names.review_queue, names.pgqueuer)


def ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.2f}" if denominator else "-"


def report(results: dict[int, dict[str, benchlib.Measurement]], config: Config) -> None:
    paths = config.paths
    pooled = f", pooled over {config.repeats} runs per cell" if config.repeats > 1 else ""
    headers = ["concurrency", "path", "cycles/s"]
    if "casework" in paths:
        headers.append("casework/path")
    rows = []
    for concurrency, cell in results.items():
        for path in paths:
            m = cell[path]
            row = [str(concurrency), path, f"{m.rate:.0f}"]
            if "casework" in paths:
                row.append(ratio(cell["casework"].rate, m.rate))
            has_server = path in ("casework", "postgraphile")
            rows.append(row + m.cpu_cells(has_server=has_server))
    print()
    benchlib.print_table(
        headers + benchlib.CPU_HEADERS,
        rows,
        title=f"claim+decide cycles per second{pooled}; CPU ms per cycle in the timed window "
        "(server = uvicorn or node; postgres = the backends of the cell's database); machine, "
        f"steal: cores busy on average, of {os.cpu_count()}",
    )
    if {"casework", "postgraphile", "raw+notify"} <= set(paths):
        print()
        print(
            f"Targets: casework/postgraphile >= {TARGET_VS_POSTGRAPHILE}, casework/raw+notify "
            f">= {TARGET_VS_RAW_NOTIFY}, casework server CPU <= {TARGET_SERVER_MS} ms per "
            f"cycle, casework postgres CPU <= {TARGET_POSTGRES_VS_RAW_NOTIFY}x raw+notify's"
        )
        for concurrency, cell in results.items():
            cw, pgl, rn = cell["casework"], cell["postgraphile"], cell["raw+notify"]
            server_ms = cw.cpu_ms_per_cycle(cw.cpu.server)
            pg_ratio = cw.cpu_ms_per_cycle(cw.cpu.postgres) / rn.cpu_ms_per_cycle(rn.cpu.postgres)
            checks = [
                _met(cw.rate / pgl.rate >= TARGET_VS_POSTGRAPHILE, f"{cw.rate / pgl.rate:.2f}x"),
                _met(cw.rate / rn.rate >= TARGET_VS_RAW_NOTIFY, f"{cw.rate / rn.rate:.2f}x"),
                _met(server_ms <= TARGET_SERVER_MS, f"{server_ms:.2f} ms"),
                _met(pg_ratio <= TARGET_POSTGRES_VS_RAW_NOTIFY, f"{pg_ratio:.2f}x"),
            ]
            print(
                f"  c={concurrency:<3} vs postgraphile {checks[0]}; vs raw+notify {checks[1]}; "
                f"server CPU {checks[2]}; postgres CPU vs raw+notify {checks[3]}"
            )


def _met(ok: bool, figure: str) -> str:
    return f"{figure} ({'met' if ok else 'not met'})"


def machine_load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


async def main(config: Config, postgraphile_version: str | None) -> None:
    started = time.perf_counter()
    print(
        f"peers: {config.items} items per database, {config.cycles} timed cycles per run after "
        f"{config.warmup} warm-up cycles per worker; concurrency {config.concurrency}; "
        f"{config.repeats} run(s) per path and concurrency; paths {config.paths}; "
        f"{os.cpu_count()} CPUs; load average {machine_load()}",
        flush=True,
    )
    print(f"  {_versions(postgraphile_version)}", flush=True)
    templates: Templates | None = None
    results: dict[int, dict[str, benchlib.Measurement]] = {}
    try:
        templates = await build_templates(config)
        by_path = measures(config, templates)
        position = 0
        for concurrency in config.concurrency:
            runs: dict[str, list[benchlib.Measurement]] = {p: [] for p in config.paths}
            for _ in range(config.repeats):
                order = config.paths if position % 2 == 0 else config.paths[::-1]
                position += 1
                for path in order:
                    template, measure = by_path[path]
                    runs[path].append(await one_run(config, path, template, measure, concurrency))
            results[concurrency] = {p: benchlib.sum_runs(found) for p, found in runs.items()}
    finally:
        if templates is not None:
            for name in (templates.casework, templates.review_queue, templates.pgqueuer):
                await benchlib.drop_database(config.server, name)
    report(results, config)
    if config.plot is not None:
        import peer_plot

        title = (
            f"Claim+decide cycles/s on one PostgreSQL, {os.cpu_count()} cores shared "
            f"(pooled over {config.repeats} interleaved runs per cell)"
        )
        rates = {c: {p: m.rate for p, m in cell.items()} for c, cell in results.items()}
        peer_plot.plot(rates, config.paths, title, config.plot)
        print(f"\nplot written to {config.plot}")
    elapsed = time.perf_counter() - started
    print(f"load average at the end {machine_load()}; total time {elapsed:.0f} s")


def _versions(postgraphile_version: str | None) -> str:
    from importlib.metadata import version

    parts = [f"pgqueuer {version('pgqueuer')}", f"asyncpg {version('asyncpg')}"]
    if postgraphile_version is not None:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
        parts.append(f"postgraphile {postgraphile_version} on node {node.stdout.strip()}")
    return ", ".join(parts)


def parse_args(argv: list[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database-url",
        default=benchlib.database_url_from_env(),
        help="owner DSN of a local server to create scratch databases on "
        "(default: $BENCH_DATABASE_URL or %(default)s)",
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--items", type=int, default=3000, help="items (jobs) per database")
    parser.add_argument("--cycles", type=int, default=2000, help="timed cycles per run")
    parser.add_argument(
        "--warmup",
        type=int,
        default=20,
        help="untimed cycles per worker (node and the JIT warm up)",
    )
    parser.add_argument("--repeats", type=int, default=2, help="runs per path and cell, pooled")
    parser.add_argument("--plot", type=Path, help="write a PNG of the throughput table here")
    args = parser.parse_args(argv)
    config = Config(
        server=benchlib.require_local(args.database_url),
        concurrency=args.concurrency,
        paths=[p for p in PATHS if p in args.paths],
        items=args.items,
        cycles=args.cycles,
        warmup=args.warmup,
        repeats=args.repeats,
        plot=args.plot,
    )
    needed = config.cycles + config.warmup * max(config.concurrency)
    if min(config.concurrency) < 1 or config.repeats < 1:
        parser.error("--concurrency and --repeats must be positive")
    if config.items < needed:
        parser.error(f"--items must be at least --cycles + --warmup * concurrency = {needed}")
    return config


if __name__ == "__main__":
    chosen = parse_args()
    # Before the event loop: npm runs once, into bench/peers/.cache, and is skipped after.
    installed = peer_postgraphile.ensure_installed() if "postgraphile" in chosen.paths else None
    benchlib.run(lambda: main(chosen, installed))
