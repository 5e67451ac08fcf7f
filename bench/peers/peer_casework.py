"""Casework's two paths in the peers bench: the lean path and the general path.

Both serve claim_bench's two documents (claimNext, submitDecision) registered as trusted
documents: a manifest `{"sha256:<hex>": "<text>"}` written to a temporary file and named
by CASEWORK_TRUSTED_DOCUMENTS. `casework-lean` runs with CASEWORK_LEAN_PATH=1 (the
default), `casework-general` with CASEWORK_LEAN_PATH=0 (the kill switch): the same
requests, the same server, only the route inside it differs.

The client sends each document by its id (`{"documentId": "sha256:<hex>", ...}`) when the
server takes ids, else its text: `probe` asks a server of each setting once at the start,
with a third trusted document that reads nothing, and the bench prints which way the
requests went. A server whose lean path does not take ids has no lean path to measure:
then both rows measure the general path.
"""

from __future__ import annotations

import json
from pathlib import Path

import benchlib
import claim_bench
from http1 import HttpError, KeepAliveConnection

from server.graphql.documents.ids import document_id

LEAN = "casework-lean"
GENERAL = "casework-general"
PROBE = "query PeersBenchProbe { __typename }"
DOCUMENTS = (claim_bench.CLAIM, claim_bench.DECIDE, PROBE)


def write_manifest(directory: Path) -> Path:
    """The bench's trusted documents as a manifest file in `directory`."""
    path = directory / "peers-bench-documents.json"
    path.write_text(json.dumps({document_id(text): text for text in DOCUMENTS}, indent=1))
    return path


def server_env(manifest: Path, *, lean: bool) -> dict[str, str]:
    return {
        "CASEWORK_TRUSTED_DOCUMENTS": str(manifest),
        "CASEWORK_LEAN_PATH": "1" if lean else "0",
    }


async def probe(
    config: claim_bench.Config, template: str, manifest: Path, token: str, *, lean: bool
) -> str | None:
    """None if a server given the manifest (and the lean path on or off) answers the probe
    document asked for by its id; else why not, in one line. Runs on a clone of
    `template`, dropped after."""
    name = benchlib.new_name("probe")
    await benchlib.create_database(config.server, name, template=template)
    try:
        app_dsn = benchlib.app_dsn(config.server, name)
        env = server_env(manifest, lean=lean)
        async with claim_bench.graphql_server(config, app_dsn, 1, None, env) as server:
            host, port = server.base_url.removeprefix("http://").split(":")
            async with KeepAliveConnection(host, int(port)) as client:
                try:
                    data = await benchlib.graphql_post(client, token, PROBE, {}, by_id=True)
                except (HttpError, RuntimeError) as refused:
                    return " ".join(str(refused).split())[:200]
        if not isinstance(data.get("__typename"), str):
            return f"unexpected answer {data}"
        return None
    finally:
        await benchlib.drop_database(config.server, name)
