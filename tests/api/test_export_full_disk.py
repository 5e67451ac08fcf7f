"""`casework export` onto a full disk: one line naming where and why, status 2, and no file
that looks like a complete export.

The disk is /dev/full, which takes an open and fails every write with ENOSPC: as standard
output, and as the file the export writes before renaming it into place (its `.partial`
sibling, made a link to /dev/full, as a full filesystem would refuse the blocks).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.api.conftest import GraphQL, Tokens
from tests.api.helpers import ENQUEUE, casework
from tests.api.live_server import casework_process
from tests.conftest import TestDatabase

FULL = Path("/dev/full")
WINDOW = "--since 2000-01-01 --until 2100-01-01"
NO_SPACE = os.strerror(28)  # ENOSPC: "No space left on device"


async def enqueue(gql: GraphQL, tokens: Tokens, count: int) -> None:
    items = [{"externalKey": f"full-{n}", "payload": {"n": n}} for n in range(count)]
    body = await gql(tokens.integration, ENQUEUE, queue="kyc", items=items)
    assert len(body["data"]["enqueueItems"]["items"]) == count, body


async def test_an_export_to_a_full_standard_output_is_one_line_and_status_2(
    gql: GraphQL, tokens: Tokens, kyc: str, test_database: TestDatabase, tmp_path: Path
) -> None:
    await enqueue(gql, tokens, 3)
    env = {
        **os.environ,
        "DATABASE_URL": test_database.owner_dsn,
        "CASEWORK_HOME": str(tmp_path),
    }
    env.pop("CASEWORK_APP_DATABASE_URL", None)
    full = os.open(FULL, os.O_WRONLY)
    try:
        process = await casework_process(
            env, "export", "queue", "kyc", *WINDOW.split(), stdout=full
        )
        _, stderr = await process.communicate()
    finally:
        os.close(full)

    assert process.returncode == 2, stderr
    assert stderr.decode() == f"casework: error: cannot write standard output: {NO_SPACE}\n"


async def test_an_export_to_a_full_disk_leaves_no_file_and_the_previous_export_intact(
    gql: GraphQL, tokens: Tokens, kyc: str, test_database: TestDatabase, tmp_path: Path
) -> None:
    await enqueue(gql, tokens, 3)
    fresh = tmp_path / "kyc.jsonl"
    (tmp_path / "kyc.jsonl.partial").symlink_to(FULL)
    previous = tmp_path / "previous.jsonl"
    previous.write_bytes(b'{"previous":"export"}\n')
    (tmp_path / "previous.jsonl.partial").symlink_to(FULL)

    to_fresh = await casework(
        test_database, tmp_path, f"export queue kyc {WINDOW} --output {fresh}"
    )
    over_previous = await casework(
        test_database, tmp_path, f"export queue kyc {WINDOW} --output {previous}"
    )

    for run, target in ((to_fresh, fresh), (over_previous, previous)):
        assert (run.code, run.stdout) == (2, ""), run.stderr
        assert run.stderr == (
            f"casework: error: cannot write {target}: {NO_SPACE} "
            f"({target.name}.partial removed, {target.name} not written)\n"
        )
    # Nothing that looks like an export, and the previous one as it was.
    assert sorted(os.listdir(tmp_path)) == ["previous.jsonl"]
    assert previous.read_bytes() == b'{"previous":"export"}\n'
