"""The application as the benchmark's uvicorn process runs it.

    CASEWORK_BENCH_APP_DSN=postgresql://casework_app@127.0.0.1:5432/<db> \
        python -m uvicorn --factory --app-dir bench app_factory:create

The pool size comes from CASEWORK_POOL_MIN / CASEWORK_POOL_MAX, as for the real service.
"""

from __future__ import annotations

import os

from starlette.applications import Starlette

from server.app import create_app

APP_DSN_VARIABLE = "CASEWORK_BENCH_APP_DSN"


def create() -> Starlette:
    return create_app(os.environ[APP_DSN_VARIABLE], dev=False)
