"""clients/python's generated code is what ariadne-codegen makes of today's schema.graphql
and queries.graphql: regenerated into a temporary copy of the layout, it must be identical.
And every expected failure the schema declares has its typed error."""

from __future__ import annotations

import filecmp
import re
import shutil
import subprocess
from pathlib import Path

from server.config import REPO_ROOT
from tests.clients.conftest import CLIENT_DIR

GENERATED = CLIENT_DIR / "casework_client" / "generated"
REGENERATE = "cd clients/python && .codegen-env/bin/ariadne-codegen client"


def tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*.py"))
    }


def test_the_generated_client_is_current(tmp_path: Path, ariadne_codegen: Path) -> None:
    # The repository's layout, so that the package's own configuration (relative paths
    # included) is used unchanged.
    client = tmp_path / "clients" / "python"
    (client / "casework_client").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "schema.graphql", tmp_path / "schema.graphql")
    for name in ("pyproject.toml", "queries.graphql"):
        shutil.copy(CLIENT_DIR / name, client / name)

    run = subprocess.run(
        [str(ariadne_codegen), "client"], cwd=client, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr

    fresh, committed = tree(client / "casework_client" / "generated"), tree(GENERATED)
    stale = sorted(
        name for name in fresh.keys() | committed.keys() if fresh.get(name) != committed.get(name)
    )
    assert not stale, (
        f"clients/python/casework_client/generated is stale ({', '.join(stale)}): "
        f"run `{REGENERATE}` (the environment is made by this test) and commit the result"
    )
    assert not filecmp.dircmp(client / "casework_client" / "generated", GENERATED).diff_files


def test_the_staleness_check_can_fail(tmp_path: Path) -> None:
    """The comparison above sees a one-byte change."""
    copy = tmp_path / "generated"
    shutil.copytree(GENERATED, copy)
    before = tree(copy)
    target = copy / "enums.py"
    target.write_bytes(target.read_bytes() + b"\n")
    after = tree(copy)
    assert [name for name in before if before[name] != after[name]] == ["enums.py"]


def test_every_expected_failure_of_the_schema_has_a_typed_error() -> None:
    from casework_client.errors import ERRORS, ResultError

    schema = (REPO_ROOT / "schema.graphql").read_text()
    declared = set(re.findall(r"^type (\w+) implements Error\b", schema, re.MULTILINE))
    assert declared, "no `implements Error` type found: the pattern is out of date"
    assert set(ERRORS) == declared
    for name, error in ERRORS.items():
        assert issubclass(error, ResultError)
        assert error.__name__ == f"{name}Error"
