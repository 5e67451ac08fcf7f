"""/readyz counts only a primary that takes writes, and a multi-host DSN that does not say
which node to pick reaches the writable one (Patroni cluster, tests/ha/patroni.py).

- Served from the standby alone (a DSN naming only it), the pool connects and reads work,
  but /readyz is 503: every write would fail there.
- Served from both nodes, the standby listed first and no `target_session_attrs`: Casework
  asks for `read-write` itself, so /readyz is 200.
"""

from __future__ import annotations

import os

import httpx
import pytest

from server.store.dsn import APP_ROLE, with_user
from tests.api.live_server import casework_serve_process
from tests.ha import postgres
from tests.ha.patroni import DATABASE, patroni_cluster
from tests.live.helpers import wait_for_readiness

pytestmark = pytest.mark.ha


def service_env(app_dsn: str, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    return {**env, "CASEWORK_APP_DATABASE_URL": app_dsn, **extra}


async def test_readiness_counts_only_a_writable_primary() -> None:
    postgres.require("patroni", "etcd")
    async with patroni_cluster() as cluster:
        leader = await cluster.leader(within=10)
        standby = next(node for node in cluster.nodes if node is not leader)

        # The memory transport: the answer depends on the database alone (LISTEN would fail
        # on a standby and make /readyz 503 for another reason).
        only_standby = with_user(cluster.node_dsn(standby), APP_ROLE)
        env = service_env(only_standby, CASEWORK_EVENTS_TRANSPORT="memory")
        async with (
            casework_serve_process(env, "--no-migrate", "--no-worker") as served,
            httpx.AsyncClient(base_url=served.url, timeout=10) as client,
        ):
            ready = await client.get("/readyz")
            assert (ready.status_code, ready.json()) == (
                503,
                {"ready": False, "database": False, "listener": True},
            )

        hosts = f"{standby.address},{leader.address}"
        standby_first = f"postgresql://{APP_ROLE}@{hosts}/{DATABASE}"
        # Its banner names the hosts (describe_location once raised on a multi-host DSN).
        async with (
            casework_serve_process(service_env(standby_first), "--no-migrate") as served,
            httpx.AsyncClient(base_url=served.url, timeout=10) as client,
        ):
            await wait_for_readiness(client, 200, within=30)
            health = (await client.get("/healthz")).json()
            assert (health["database"], health["listener"]["connected"]) == (True, True)
