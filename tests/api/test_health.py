"""Health endpoints mean what they say, and the image probes the one that fails in an outage.

- /livez: the process answers; 200 whatever the database does.
- /readyz: 503 while the database or the listener is down (take it out of rotation).
- /healthz: the details; 200 when all is well, 503 when degraded.
"""

from __future__ import annotations

import re

import httpx

from server.config import REPO_ROOT
from tests.api.live_server import casework_serve_process
from tests.live.helpers import (
    DOWN_WITHIN_SECONDS,
    RECOVER_WITHIN_SECONDS,
    migrated_database,
    private_postgres,
    serve_env,
    wait_for_readiness,
)


def probed_path() -> str:
    """The path the Dockerfile's HEALTHCHECK fetches."""
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    found = re.search(r"HEALTHCHECK[^\n]*\\\n\s*CMD .*http://127\.0\.0\.1:8000(/\w+)", dockerfile)
    assert found, "no HEALTHCHECK with a URL in the Dockerfile"
    return found.group(1)


def test_the_image_and_the_readme_name_the_endpoint_that_fails_in_an_outage() -> None:
    assert probed_path() == "/readyz"
    readme = (REPO_ROOT / "README.md").read_text()
    assert "`HEALTHCHECK` on `/readyz`" in readme
    for path in ("/livez", "/readyz", "/healthz"):
        assert f"`{path}`" in readme, path


async def assert_all_well(client: httpx.AsyncClient) -> None:
    live = await client.get("/livez")
    assert (live.status_code, live.json()) == (200, {"live": True})
    ready = await client.get("/readyz")
    assert (ready.status_code, ready.json()) == (
        200,
        {"ready": True, "database": True, "listener": True},
    )
    health = await client.get("/healthz")
    assert health.status_code == 200, health.text
    body = health.json()
    assert (body["status"], body["database"], body["listener"]["connected"]) == ("ok", True, True)


async def test_each_endpoint_during_an_outage_and_after() -> None:
    async with private_postgres() as postgres:
        database = await migrated_database(postgres.server_dsn)
        async with (
            casework_serve_process(serve_env(database)) as served,
            httpx.AsyncClient(base_url=served.url, timeout=30) as client,
        ):
            await wait_for_readiness(client, 200, within=RECOVER_WITHIN_SECONDS)
            await assert_all_well(client)

            await postgres.stop()
            await wait_for_readiness(client, 503, within=DOWN_WITHIN_SECONDS)
            ready = (await client.get("/readyz")).json()
            assert (ready["ready"], ready["database"]) == (False, False), ready
            health = await client.get("/healthz")
            assert health.status_code == 503, health.text
            body = health.json()
            assert (body["status"], body["database"]) == ("degraded", False), body
            # The process itself is fine: restarting it would not bring the database back.
            live = await client.get("/livez")
            assert (live.status_code, live.json()) == (200, {"live": True})
            assert (await client.get(probed_path())).status_code == 503

            await postgres.start()
            await wait_for_readiness(client, 200, within=RECOVER_WITHIN_SECONDS)
            await assert_all_well(client)
            assert (await client.get(probed_path())).status_code == 200
            assert served.process.returncode is None, "".join(served.log)
