"""The statements of db/queries/health.sql, as symbols.

Generated from db/queries/health.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/health.sql:1
HEALTH_CHECK = Query("health_check", lambda: None)
"""`writable`: this connection reaches a server that takes writes. False on a standby (in
recovery) and on a server set read-only: a primary's pool that reaches one is not ready.
"""
