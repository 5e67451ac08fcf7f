"""Claim+decide cycles per second: Casework against its peers on one PostgreSQL, interleaved.

Paths (each cell: a fresh database cloned from its path's seeded template):

  casework-lean     the service over GraphQL/HTTP, as bench/claim_bench.py's graphql path:
                    uvicorn with bench/app_factory.py, a pool of N, N keep-alive clients
                    (bench/http1.py) with one reviewer token each, claimNext then
                    submitDecision; both documents registered as trusted documents and
                    sent by id (peer_casework.py), the lean path on.
  casework-general  the same requests with CASEWORK_LEAN_PATH=0: the general path.
  postgraphile      PostGraphile v4 (npm, installed into bench/peers/.cache) serving the SQL
                    of raw+notify as two mutation functions, pool of N, N keep-alive clients
                    with one JWT each, documents of the same shape.
  postgraphile-nojwt  the same without authentication (no JWT secret, no Authorization
                    header; the actor is an argument): the upper bound of that peer.
  pgqueuer          pgqueuer's own queries (PyPI) on an asyncpg pool of N: dequeue one job,
                    log it successful, per cycle; jobs enqueued up front.
  raw               bench/peers/review_queue.sql's functions over an asyncpg pool of N:
                    claim (UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED
                    LIMIT 1)) and a fenced decision, no NOTIFY.
  raw+notify        the same, with the two NOTIFYs per cycle Casework sends, and a listener.
  plain+notify      the same cycle as two plain statements (peer_plain.py): the claim, then
                    fence + insert of the decision in one statement, each with its NOTIFY;
                    no PL/pgSQL, no JSON built by the database; a listener.

For each concurrency N, each path runs --repeats times, the order of the paths reversed
on every other round so a drift of the machine hits all of them; the runs of a cell are
pooled. Every run does --warmup untimed cycles per worker, then the workers share a
budget of --cycles timed cycles; afterwards the decision rows (pgqueuer: its successful
log rows) are counted against the cycles done, and the hints the listener heard against
two per cycle. Around the timed window the CPU seconds of this process (the clients), of
the server process (uvicorn or node) and of the PostgreSQL backends of the cell's
database are read from /proc. The report ends with issue 29's ratios and their targets.

    pip install -e '.[bench]'     # pgqueuer, matplotlib; npm and node must be on PATH
    .venv/bin/python bench/peers/run.py [--concurrency 8 32] [--plot out.png]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

# The shared bench helpers live one directory up; this script runs as bench/peers/run.py.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchlib
import claim_bench
import peer_casework
import peer_pgqueuer
import peer_plain
import peer_postgraphile
import peer_raw
from peer_casework import GENERAL, LEAN

POSTGRAPHILE = "postgraphile"
POSTGRAPHILE_NOJWT = "postgraphile-nojwt"
RAW_NOTIFY = "raw+notify"
PLAIN_NOTIFY = "plain+notify"
PATHS = (
    LEAN,
    GENERAL,
    POSTGRAPHILE,
    POSTGRAPHILE_NOJWT,
    "pgqueuer",
    "raw",
    RAW_NOTIFY,
    PLAIN_NOTIFY,
)
SERVED = (LEAN, GENERAL, POSTGRAPHILE, POSTGRAPHILE_NOJWT)
# Issue 29's targets, printed beside the figures.
TARGET_VS_POSTGRAPHILE = 1.5  # lean cycles/s over each PostGraphile's, at 8 and 32
TARGET_VS_POSTGRAPHILE_AT = (8, 32)
TARGET_VS_PLAIN = 0.5  # lean cycles/s over plain+notify's, at 8
TARGET_VS_PLAIN_AT = 8
TARGET_SERVER_LEAN_VS_GENERAL = 0.5  # server CPU per cycle, lean over general
TARGET_POSTGRES_VS_PLAIN = 2.0  # PostgreSQL CPU per cycle, lean over plain+notify


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


@dataclass(frozen=True)
class Documents:
    """The trusted documents' manifest, and whether the server takes them by id with the
    lean path on and with it off (the general path)."""

    manifest: Path
    lean_by_id: bool
    general_by_id: bool


Measure = Callable[[str, int], Awaitable[tuple[benchlib.Measurement, int | None]]]


def casework_config(config: Config) -> claim_bench.Config:
    return claim_bench.Config(
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


def measures(
    config: Config, templates: Templates, documents: Documents
) -> dict[str, tuple[str, Measure]]:
    """Each path's template and how one cell of it is measured (a database, N) ->
    (measurement, hints received by the listener where the path counts them)."""
    served = casework_config(config)

    def casework(lean: bool) -> Measure:
        env = peer_casework.server_env(documents.manifest, lean=lean)
        by_id = documents.lean_by_id if lean else documents.general_by_id

        async def measure(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
            tokens = templates.casework_tokens
            measured = await claim_bench.measure_graphql(
                served, database, n, tokens, None, env=env, by_id=by_id
            )
            return measured, None

        return measure

    def postgraphile(jwt: bool) -> Measure:
        async def measure(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
            args = (config.server, database, n, config.cycles, config.warmup)
            return await peer_postgraphile.measure(*args, jwt=jwt), None

        return measure

    async def pgqueuer(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        args = (config.server, database, n, config.cycles, config.warmup)
        return await peer_pgqueuer.measure(*args), None

    async def raw(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        args = (config.server, database, n, config.cycles, config.warmup)
        return await peer_raw.measure(*args, notify=False)

    async def raw_notify(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        args = (config.server, database, n, config.cycles, config.warmup)
        return await peer_raw.measure(*args, notify=True)

    async def plain_notify(database: str, n: int) -> tuple[benchlib.Measurement, int | None]:
        return await peer_plain.measure(config.server, database, n, config.cycles, config.warmup)

    return {
        LEAN: (templates.casework, casework(lean=True)),
        GENERAL: (templates.casework, casework(lean=False)),
        POSTGRAPHILE: (templates.review_queue, postgraphile(jwt=True)),
        POSTGRAPHILE_NOJWT: (templates.review_queue, postgraphile(jwt=False)),
        "pgqueuer": (templates.pgqueuer, pgqueuer),
        "raw": (templates.review_queue, raw),
        RAW_NOTIFY: (templates.review_queue, raw_notify),
        PLAIN_NOTIFY: (templates.review_queue, plain_notify),
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
        f"  c={concurrency:<3} {path:<18} {result.cycles} timed + {result.warmup_cycles} "
        f"warm-up cycles in {result.seconds:.2f} s; decisions {result.decisions} "
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
    tokens = await claim_bench.build_template(casework_config(config), names.casework)
    await peer_raw.build_template(config.server, names.review_queue, config.items)
    await peer_pgqueuer.build_template(config.server, names.pgqueuer, config.items)
    return Templates(names.casework, tokens, names.review_queue, names.pgqueuer)


async def probe_documents(config: Config, templates: Templates, manifest: Path) -> Documents:
    """Asks a server of each setting once whether it takes the trusted documents by id;
    says which way the Casework requests will go."""
    found = {LEAN: False, GENERAL: False}
    for path in (p for p in (LEAN, GENERAL) if p in config.paths):
        refused = await peer_casework.probe(
            casework_config(config),
            templates.casework,
            manifest,
            templates.casework_tokens[0],
            lean=path == LEAN,
        )
        switch = f"CASEWORK_LEAN_PATH={int(path == LEAN)}"
        found[path] = refused is None
        print(
            f"  {path} ({switch}): "
            + (
                "the server takes the documents by id: requests send documentId"
                if refused is None
                else f"no documentId ({refused}): requests send the documents' text"
            ),
            flush=True,
        )
    return Documents(manifest, lean_by_id=found[LEAN], general_by_id=found[GENERAL])


def ratio(numerator: float, denominator: float) -> str:
    return f"{numerator / denominator:.2f}" if denominator else "-"


def report(
    results: dict[int, dict[str, benchlib.Measurement]], config: Config, documents: Documents
) -> None:
    paths = config.paths
    pooled = f", pooled over {config.repeats} runs per cell" if config.repeats > 1 else ""
    headers = ["concurrency", "path", "cycles/s"]
    if LEAN in paths:
        headers.append("lean/path")
    rows = []
    for concurrency, cell in results.items():
        for path in paths:
            m = cell[path]
            row = [str(concurrency), path, f"{m.rate:.0f}"]
            if LEAN in paths:
                row.append(ratio(cell[LEAN].rate, m.rate))
            rows.append(row + m.cpu_cells(has_server=path in SERVED))
    print()
    benchlib.print_table(
        headers + benchlib.CPU_HEADERS,
        rows,
        title=f"claim+decide cycles per second{pooled}; CPU ms per cycle in the timed window "
        "(server = uvicorn or node; postgres = the backends of the cell's database); machine, "
        f"steal: cores busy on average, of {os.cpu_count()}",
    )
    print()
    print(
        f"Targets (issue 29): {LEAN} cycles/s >= {TARGET_VS_POSTGRAPHILE}x each PostGraphile's "
        f"(at 8 and 32) and >= {TARGET_VS_PLAIN}x {PLAIN_NOTIFY}'s (at {TARGET_VS_PLAIN_AT}); "
        f"server CPU per cycle {LEAN}/{GENERAL} <= {TARGET_SERVER_LEAN_VS_GENERAL}; "
        f"PostgreSQL CPU per cycle {LEAN}/{PLAIN_NOTIFY} <= {TARGET_POSTGRES_VS_PLAIN}"
    )
    if LEAN in paths:
        print(
            "  casework-lean sent documentId (the lean path could take them)"
            if documents.lean_by_id
            else "  casework-lean sent text: the server took no documentId, so it has no "
            "lean path to measure and both casework rows ran the general path"
        )
    for concurrency, cell in results.items():
        for check in target_checks(concurrency, cell):
            print(f"  c={concurrency:<3} {check}")


def target_checks(concurrency: int, cell: dict[str, benchlib.Measurement]) -> list[str]:
    """Each of issue 29's ratios the cell has the paths for: figure, target, met or not.
    Beside each throughput ratio, the same ratio of cycles per CPU second (client, server
    and PostgreSQL summed): what the rates would say if the paths had the cores to
    themselves, the steadier reading on a machine busy with other work."""
    lean = cell.get(LEAN)
    if lean is None:
        return ["no casework-lean row: no targets to check"]
    checks: list[str] = []
    for peer, target, at in (
        (POSTGRAPHILE, TARGET_VS_POSTGRAPHILE, TARGET_VS_POSTGRAPHILE_AT),
        (POSTGRAPHILE_NOJWT, TARGET_VS_POSTGRAPHILE, TARGET_VS_POSTGRAPHILE_AT),
        (PLAIN_NOTIFY, TARGET_VS_PLAIN, (TARGET_VS_PLAIN_AT,)),
    ):
        if peer not in cell:
            continue
        other = cell[peer]
        by_cpu = f"; by CPU per cycle {cpu_per_cycle(other) / cpu_per_cycle(lean):.2f}"
        name, figure = f"cycles/s lean/{peer}", lean.rate / other.rate
        if concurrency in at:
            checks.append(_check(name, figure, ">=", target, by_cpu))
        else:
            checks.append(f"{name} {figure:.2f} (no target at {concurrency}{by_cpu})")
    general = cell.get(GENERAL)
    if general is not None:
        figure = lean.cpu.server / lean.cycles / (general.cpu.server / general.cycles)
        target = TARGET_SERVER_LEAN_VS_GENERAL
        checks.append(_check("server CPU per cycle lean/general", figure, "<=", target))
    plain = cell.get(PLAIN_NOTIFY)
    if plain is not None:
        figure = lean.cpu.postgres / lean.cycles / (plain.cpu.postgres / plain.cycles)
        name = f"PostgreSQL CPU per cycle lean/{PLAIN_NOTIFY}"
        checks.append(_check(name, figure, "<=", TARGET_POSTGRES_VS_PLAIN))
    return checks


def cpu_per_cycle(m: benchlib.Measurement) -> float:
    return (m.cpu.client + m.cpu.server + m.cpu.postgres) / m.cycles


def _check(name: str, figure: float, relation: str, target: float, aside: str = "") -> str:
    met = figure >= target if relation == ">=" else figure <= target
    return f"{name} {figure:.2f} (target {relation} {target}: {'met' if met else 'NOT met'}{aside})"


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
    documents = Documents(Path(), lean_by_id=False, general_by_id=False)
    results: dict[int, dict[str, benchlib.Measurement]] = {}
    with tempfile.TemporaryDirectory(prefix="casework-peers-") as scratch:
        try:
            templates = await build_templates(config)
            manifest = peer_casework.write_manifest(Path(scratch))
            documents = await probe_documents(config, templates, manifest)
            by_path = measures(config, templates, documents)
            position = 0
            for concurrency in config.concurrency:
                runs: dict[str, list[benchlib.Measurement]] = {p: [] for p in config.paths}
                for _ in range(config.repeats):
                    order = config.paths if position % 2 == 0 else config.paths[::-1]
                    position += 1
                    for path in order:
                        template, measure = by_path[path]
                        result = await one_run(config, path, template, measure, concurrency)
                        runs[path].append(result)
                results[concurrency] = {p: benchlib.sum_runs(found) for p, found in runs.items()}
        finally:
            if templates is not None:
                for name in (templates.casework, templates.review_queue, templates.pgqueuer):
                    await benchlib.drop_database(config.server, name)
    report(results, config, documents)
    if config.plot is not None:
        import peer_plot

        title = (
            f"Claim+decide cycles/s on one PostgreSQL, {os.cpu_count()} cores shared "
            f"({config.repeats} interleaved run{'s' * (config.repeats != 1)} per cell)"
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
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
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
    node_paths = {POSTGRAPHILE, POSTGRAPHILE_NOJWT} & set(chosen.paths)
    installed = peer_postgraphile.ensure_installed() if node_paths else None
    benchlib.run(lambda: main(chosen, installed))
