"""What the deployment tests share: the files under deploy/, and the metric names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from server.config import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"

# The metric names of /metrics, as issue 13 §1 lists them (docs/observability.md documents
# them). The dashboard and the alerts may use these and no others.
METRICS = frozenset(
    {
        # Read from the database at scrape time: the same on every API replica.
        "casework_queue_pending",
        "casework_queue_leased",
        "casework_queue_oldest_pending_age_seconds",
        "casework_decisions_unapplied",
        "casework_decisions_unapplied_older_than_threshold",
        "casework_applications_failed",
        "casework_exceptions_open",
        "casework_exceptions_overdue",
        # Per process.
        "casework_decisions_total",
        "casework_stale_lease_refusals_total",
        "casework_lease_count_at_decision",
        "casework_decision_handling_seconds",
        "casework_apply_attempts_total",
        "casework_graphql_operation_seconds",
        "casework_websocket_connections",
        "casework_subscriptions",
        "casework_listener_connected",
        "casework_listener_reconnects_total",
        "casework_event_deliveries_total",
        "casework_webhook_endpoints_disabled_total",
        # Issue 28: casework intake's own metrics, and the notifications the worker sends.
        "casework_intake_messages_total",
        "casework_intake_redrives_total",
        "casework_notifications_total",
    }
)
HISTOGRAMS = frozenset(
    {
        "casework_lease_count_at_decision",
        "casework_decision_handling_seconds",
        "casework_graphql_operation_seconds",
    }
)
_METRIC_NAME = re.compile(r"\bcasework_[a-z0-9_]+")
_HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")


def metrics_in(expr: str) -> set[str]:
    """The Casework metrics a PromQL expression reads, a histogram's series by its name.

    Recording rules' names (`casework:...`) are not metrics of the service and are left out.
    """
    found = set()
    for name in _METRIC_NAME.findall(expr):
        for suffix in _HISTOGRAM_SERIES:
            base = name.removesuffix(suffix)
            if base != name and base in HISTOGRAMS:
                name = base
                break
        found.add(name)
    return found


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())
