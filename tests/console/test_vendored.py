"""The vendored files are the ones recorded: each digest in a SHA256SUMS matches, and no
file sits in a vendor folder without one (licences and the README aside)."""

from __future__ import annotations

import hashlib
import re
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


AXE = CONSOLE_DIR / "vendor" / "axe-core" / "axe.min.js"


def test_axe_core_is_the_release_recorded_and_the_console_never_loads_it() -> None:
    """The accessibility tests' axe-core is vendored like the others: its README row names
    the release the file itself says it is, under its licence (MPL-2.0); and no file of the
    console (the page, its modules, its styles) names it, so no reader is sent it."""
    readme = (CONSOLE_DIR / "vendor" / "README.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| axe-core |")]
    version = row.split("|")[2].strip()
    assert AXE.read_text()[:40].startswith(f"/*! axe v{version}\n")
    assert "MPL-2.0" in row
    licence = CONSOLE_DIR / "vendor" / "licenses" / "axe-core.LICENSE"
    assert licence.read_text().startswith("Mozilla Public License, version 2.0")
    assert "axe-core/axe.min.js" in recorded(CONSOLE_DIR / "vendor")
    own = [
        path
        for path in CONSOLE_DIR.rglob("*")
        if path.is_file() and "vendor" not in path.relative_to(CONSOLE_DIR).parts
    ]
    assert any(path.name == "index.html" for path in own)
    naming = [path.name for path in own if re.search(r"\baxe\b", path.read_text(errors="replace"))]
    assert naming == []
