"""The vendored files are the ones recorded: each digest in a SHA256SUMS matches, and no
file sits in a vendor folder without one (licences and the README aside)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from server.console import CONSOLE_DIR, GRAPHIQL_DIR

VENDOR_DIRS = [CONSOLE_DIR / "vendor", GRAPHIQL_DIR / "vendor"]
UNRECORDED = {"README.md", "SHA256SUMS"}


def recorded(folder: Path) -> dict[str, str]:
    lines = (folder / "SHA256SUMS").read_text().splitlines()
    return {name: digest for digest, name in (line.split(maxsplit=1) for line in lines)}


@pytest.mark.parametrize("folder", VENDOR_DIRS, ids=["console", "graphiql"])
def test_every_vendored_file_is_recorded_and_unchanged(folder: Path) -> None:
    digests = recorded(folder)
    present = {
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and path.name not in UNRECORDED and path.parent.name != "licenses"
    }
    assert present == set(digests)
    for name, digest in digests.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    assert (folder / "licenses").is_dir()
