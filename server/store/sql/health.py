"""The statements of db/queries/health.sql, as symbols.

Generated from db/queries/health.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/health.sql:1
HEALTH_CHECK = Query("health_check", lambda: None)
