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


def create() -> Starlette:
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
