"""The statements of db/queries/health.sql, as symbols.

Generated from db/queries/health.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query


def _health_check() -> None: ...


HEALTH_CHECK = Query("health_check", _health_check)
"""db/queries/health.sql:1"""
