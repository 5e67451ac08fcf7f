"""The Grafana dashboard and the Prometheus alert rules under deploy/.

promtool (Debian's `prometheus` package; .ci/run installs it) checks the rules and runs
their unit tests (deploy/prometheus/alerts.test.yml). Where it is missing, the checks of
structure and metric names below still run, and the promtool tests are skipped, except
under CI, where a missing promtool fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.helpers import DEPLOY, HISTOGRAMS, METRICS, load_yaml, metrics_in

DASHBOARD = DEPLOY / "grafana" / "casework.json"
PROMETHEUS = DEPLOY / "prometheus"
ALERTS = PROMETHEUS / "alerts.yml"


def dashboard() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return found


def dashboard_exprs() -> list[str]:
    return [
        target["expr"] for panel in dashboard()["panels"] for target in panel.get("targets", [])
    ]


def test_the_dashboard_is_one_provisionable_document() -> None:
    board = dashboard()
    assert board["uid"] == "casework-overview"
    assert board["title"] == "Casework"
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"]), panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "casework-prometheus"}
        assert panel["targets"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


def test_the_dashboard_reads_every_metric_and_no_other() -> None:
    used = set().union(*(metrics_in(expr) for expr in dashboard_exprs()))
    variables = [variable["query"]["query"] for variable in dashboard()["templating"]["list"]]
    used |= set().union(*(metrics_in(query) for query in variables))

    assert used - METRICS == set()
    assert METRICS - used == set()


def test_histograms_are_read_through_their_buckets() -> None:
    for expr in dashboard_exprs():
        for name in metrics_in(expr) & HISTOGRAMS:
            assert f"{name}_bucket" in expr, expr


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in load_yaml(ALERTS)["groups"] for rule in group["rules"]]


def test_the_alerts_cover_what_the_issue_names() -> None:
    alerts = {rule["alert"]: rule for rule in alert_rules() if "alert" in rule}
    assert set(alerts) == {
        "CaseworkDecisionsUnappliedTooLong",
        "CaseworkApplicationsFailed",
        "CaseworkOldestPendingOverLimit",
        "CaseworkListenerDown",
        "CaseworkTargetDown",
        "CaseworkWebhookEndpointDisabled",
        "CaseworkDeadLettersParked",
        "CaseworkNotificationsFailing",
    }
    reads = {name: metrics_in(rule["expr"]) for name, rule in alerts.items()}
    assert reads["CaseworkDecisionsUnappliedTooLong"] == {
        "casework_decisions_unapplied_older_than_threshold"
    }
    assert reads["CaseworkApplicationsFailed"] == {"casework_applications_failed"}
    assert reads["CaseworkOldestPendingOverLimit"] == {"casework_queue_oldest_pending_age_seconds"}
    assert reads["CaseworkListenerDown"] == {"casework_listener_connected"}
    assert reads["CaseworkWebhookEndpointDisabled"] == {"casework_webhook_endpoints_disabled_total"}
    assert reads["CaseworkDeadLettersParked"] == {"casework_intake_messages_total"}
    assert reads["CaseworkNotificationsFailing"] == {"casework_notifications_total"}
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in ("page", "ticket"), name
        assert {"summary", "description"} <= set(rule["annotations"]), name
        assert rule["for"], name


def test_the_alerts_read_only_metrics_of_the_service() -> None:
    for rule in alert_rules():
        assert metrics_in(rule["expr"]) <= METRICS, rule


def test_each_queue_limit_is_one_labelled_rule() -> None:
    limits = [rule for rule in alert_rules() if rule.get("record")]
    assert limits
    for rule in limits:
        assert rule["record"] == "casework:queue_oldest_pending_limit_seconds"
        assert set(rule["labels"]) == {"queue"}
        assert rule["expr"].startswith("vector(")
    queues = [rule["labels"]["queue"] for rule in limits]
    assert len(queues) == len(set(queues))


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing under CI: .ci/run installs Debian's prometheus")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


def run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_promtool_checks_the_rules_and_runs_their_unit_tests() -> None:
    tool = promtool()

    checked = run(tool, "check", "rules", "alerts.yml", cwd=PROMETHEUS)
    tested = run(tool, "test", "rules", "alerts.test.yml", cwd=PROMETHEUS)

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_promtool_checks_the_scrape_config(tmp_path: Path) -> None:
    tool = promtool()
    # As mounted in the container, with the token file an operator puts there.
    shutil.copytree(PROMETHEUS, tmp_path / "prometheus")
    (tmp_path / "prometheus" / "secrets" / "metrics.token").write_text("cw_example\n")

    checked = run(tool, "check", "config", "prometheus.yml", cwd=tmp_path / "prometheus")

    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_promtool_catches_a_broken_rule(tmp_path: Path) -> None:
    """The check above can fail: the same rules with an expression cut short."""
    tool = promtool()
    broken = ALERTS.read_text().replace(
        "casework_listener_connected == 0", "casework_listener_connected =="
    )
    (tmp_path / "alerts.yml").write_text(broken)

    checked = run(tool, "check", "rules", "alerts.yml", cwd=tmp_path)

    assert checked.returncode != 0
