"""The statements of db/queries/metrics.sql, as symbols.

Generated from db/queries/metrics.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/metrics.sql:1
METRICS_FIGURES_READ = Query("metrics_figures_read", lambda *, max_age_seconds, unapplied_threshold_seconds: None)
"""The database figures of /metrics, as one JSON object. A snapshot younger than
:max_age_seconds is returned as it is; otherwise this statement computes the figures and
stores them for the next scrapes, of this process or any other. Computing costs what the
backlog costs, never the history: every count walks a partial index (pending items,
applications not applied, open exceptions). Every configured queue, workflow and reason
is listed, with zeros, so that a series does not vanish when its count drops to nothing.
"""
