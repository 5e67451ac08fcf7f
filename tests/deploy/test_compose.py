"""deploy/compose.yaml: what it runs, with which credentials, in which order.

There is no Docker engine where the tests run, so `docker compose config` cannot check it:
these tests read the file as the Compose specification defines it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from server.config import REPO_ROOT
from tests.deploy.helpers import DEPLOY, load_yaml

COMPOSE = DEPLOY / "compose.yaml"
CASEWORK_SERVICES = ("migrate", "api", "worker")


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    document = load_yaml(COMPOSE)
    assert set(document) <= {"name", "services", "volumes", "x-casework", "x-service-environment"}
    found: dict[str, Any] = document["services"]
    return found


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    assert isinstance(env, dict), "environment is written as a mapping"
    return env


def test_the_services_and_the_monitoring_profile(services: dict[str, Any]) -> None:
    assert set(services) == {
        "postgres",
        "migrate",
        "api",
        "worker",
        "redis",
        "prometheus",
        "grafana",
    }
    profiled = {name for name, service in services.items() if "profiles" in service}
    assert profiled == {"prometheus", "grafana"}
    assert all(services[name]["profiles"] == ["monitoring"] for name in profiled)


def test_only_the_migrate_job_holds_the_owner_credentials(services: dict[str, Any]) -> None:
    migrate = services["migrate"]
    assert migrate["command"] == ["casework", "migrate"]
    assert migrate["restart"] == "no"
    assert environment(migrate)["DATABASE_URL"].startswith("postgresql://casework_owner:")
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in ("api", "worker"):
        env = environment(services[name])
        assert "DATABASE_URL" not in env, name
        assert env["CASEWORK_APP_DATABASE_URL"].startswith("postgresql://casework_app:"), name
        assert "casework_owner" not in str(services[name]), name


def test_two_api_replicas_serve_without_migrating_and_one_worker_applies(
    services: dict[str, Any],
) -> None:
    api, worker = services["api"], services["worker"]
    assert api["deploy"]["replicas"] == 2
    assert api["command"][:2] == ["casework", "serve"]
    assert {"--no-migrate", "--no-worker"} <= set(api["command"])
    assert worker["command"][:2] == ["casework", "worker"]
    assert worker.get("deploy", {}).get("replicas", 1) == 1
    for service in (api, worker):
        assert service["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert service["depends_on"]["redis"] == {"condition": "service_healthy"}
    # Replicas cannot share one host port: each gets one of a range as wide as their number.
    (published,) = api["ports"]
    first, last = map(int, re.fullmatch(r"127\.0\.0\.1:(\d+)-(\d+):8000", published).groups())  # type: ignore[union-attr]
    assert last - first + 1 == api["deploy"]["replicas"]


def test_live_updates_travel_through_redis(services: dict[str, Any]) -> None:
    for name in ("api", "worker"):
        env = environment(services[name])
        assert env["CASEWORK_EVENTS_TRANSPORT"] == "redis"
        assert env["CASEWORK_REDIS_URL"] == "redis://redis:6379/0"
    assert services["redis"]["image"].startswith("redis:")


def test_casework_services_are_built_from_the_repository_dockerfile(
    services: dict[str, Any],
) -> None:
    for name in CASEWORK_SERVICES:
        build = services[name]["build"]
        context = (DEPLOY / build["context"]).resolve()
        assert context == REPO_ROOT, name
        assert (context / build["dockerfile"]).is_file(), name


def test_casework_services_set_only_variables_casework_reads(services: dict[str, Any]) -> None:
    config = (REPO_ROOT / "server" / "config.py").read_text()
    read = set(re.findall(r'"((?:CASEWORK_|DATABASE_URL)[A-Z_]*)"', config))
    assert {"CASEWORK_APP_DATABASE_URL", "CASEWORK_EVENTS_TRANSPORT"} <= read
    for name in CASEWORK_SERVICES:
        unknown = set(environment(services[name])) - read
        assert not unknown, f"{name}: {unknown}"


def test_every_file_mounted_from_the_repository_exists(services: dict[str, Any]) -> None:
    mounts = [
        (name, volume.split(":")[0])
        for name, service in services.items()
        for volume in service.get("volumes", [])
        if volume.startswith("./")
    ]
    assert len(mounts) >= 4
    for name, source in mounts:
        assert (DEPLOY / source).exists(), f"{name} mounts {source}, which is not in deploy/"


def test_passwords_come_from_the_environment_never_the_file() -> None:
    text = COMPOSE.read_text()
    for variable in ("CASEWORK_OWNER_PASSWORD", "CASEWORK_APP_PASSWORD", "GRAFANA_ADMIN_PASSWORD"):
        assert f"${{{variable}:?" in text, variable
    assert not re.search(r"postgresql://[^:@\s]+:(?!\$\{)[^@\s]+@", text)


def test_the_app_role_script_creates_the_role_the_services_use() -> None:
    script = (DEPLOY / "postgres" / "create-app-role.sh").read_text()
    assert "CREATE ROLE casework_app LOGIN PASSWORD :'app_password'" in script
    assert '"$CASEWORK_APP_PASSWORD"' in script


def test_grafana_is_provisioned_with_the_dashboard_and_the_datasource_it_names(
    services: dict[str, Any],
) -> None:
    volumes = services["grafana"]["volumes"]
    assert "./grafana/casework.json:/var/lib/grafana/dashboards/casework.json:ro" in volumes
    provider = load_yaml(DEPLOY / "grafana" / "provisioning" / "dashboards" / "casework.yml")
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    datasource = load_yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")
    (prometheus,) = datasource["datasources"]
    assert prometheus["url"] == "http://prometheus:9090"
    assert prometheus["uid"] == "casework-prometheus"


def test_prometheus_scrapes_every_api_replica_with_a_token_and_loads_the_alerts(
    services: dict[str, Any],
) -> None:
    assert "./prometheus:/etc/prometheus:ro" in services["prometheus"]["volumes"]
    config = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    assert config["rule_files"] == ["alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    api = jobs["casework-api"]
    assert api["dns_sd_configs"] == [{"names": ["api"], "type": "A", "port": 8000}]
    assert api["authorization"] == {"type": "Bearer", "credentials_file": "secrets/metrics.token"}
    command = services["worker"]["command"]
    worker_port = int(command[command.index("--metrics-port") + 1])
    assert jobs["casework-worker"]["dns_sd_configs"][0]["port"] == worker_port
