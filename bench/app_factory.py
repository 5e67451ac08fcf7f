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
