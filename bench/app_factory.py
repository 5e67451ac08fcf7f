"""The application as the benchmark's uvicorn process runs it.

    CASEWORK_BENCH_APP_DSN=postgresql://casework_app@127.0.0.1:5432/<db> \
        python -m uvicorn --factory --app-dir bench app_factory:create

The pool size comes from CASEWORK_POOL_MIN / CASEWORK_POOL_MAX, as for the real service,
and logging is configured as `casework serve` configures it (CASEWORK_LOG_FORMAT and
CASEWORK_LOG_LEVEL; an access line per request at the default INFO), so its cost is measured.
"""

from __future__ import annotations

import os

from starlette.applications import Starlette

from server.app import create_app
from server.config import Settings
from server.observability.logs import LogFormat, configure_logging

APP_DSN_VARIABLE = "CASEWORK_BENCH_APP_DSN"


def _log_slow_collections(threshold: float) -> None:
    """CASEWORK_BENCH_GC_LOG_MS: logs each garbage collection that takes longer."""
    import gc
    import logging
    import time

    log = logging.getLogger("casework.bench.gc")
    started: list[float] = [0.0]

    def probe(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = 1000 * (time.perf_counter() - started[0])
        if took >= threshold:
            log.warning("gc generation %d took %.0f ms", info["generation"], took)

    gc.callbacks.append(probe)


def create() -> Starlette:
    if os.environ.get("CASEWORK_BENCH_GC_LOG_MS"):
        _log_slow_collections(float(os.environ["CASEWORK_BENCH_GC_LOG_MS"]))
    settings = Settings.from_env()
    configure_logging(LogFormat(settings.log_format), settings.log_level)
    return create_app(os.environ[APP_DSN_VARIABLE], dev=False, settings=settings)


def create_traced() -> Starlette:
    """create() with tracemalloc on, and GET /bench/heap: `?mark` takes the baseline,
    `?compare` answers the growth since then by file and line (bench/socket_memory.py)."""
    import tracemalloc

    from starlette.requests import Request
    from starlette.responses import JSONResponse

    tracemalloc.start(1)
    app = create()
    marks: list[tracemalloc.Snapshot] = []

    async def heap(request: Request) -> JSONResponse:
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        if "mark" in request.query_params or not marks:
            marks[:] = [snapshot]
            return JSONResponse({"marked": True})
        by = request.query_params.get("by", "lineno")
        rows = snapshot.compare_to(marks[0], by)[:40]
        return JSONResponse(
            [
                {"where": str(row.traceback), "bytes": row.size_diff, "count": row.count_diff}
                for row in rows
            ]
        )

    app.add_route("/bench/heap", heap)
    return app
