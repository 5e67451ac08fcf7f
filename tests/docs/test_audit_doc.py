"""docs/audit.md: its ways of checking a pack's hash work on what `casework export` writes,
and its commands are ones the parser takes."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

from server.cli import _parser
from server.config import REPO_ROOT
from server.domain.quality import audit
from tests.docs.helpers import code_blocks, section

AUDIT = REPO_ROOT / "docs" / "audit.md"

# Text that canonical JSON writes as it is, or escapes: the checks must agree on both.
AWKWARD: dict[str, Any] = {
    "format": audit.FORMAT,
    "item": {"payload": {"name": 'Zoë "Ångström"\nline two', "score": 1.5, "tags": []}},
    "withheld": [],
}


def write_pack(tmp_path: Path, pack: dict[str, Any]) -> tuple[Path, str]:
    document = audit.sealed(pack)
    path = tmp_path / "pack.json"
    path.write_bytes(audit.pack_bytes(document))
    return path, str(document["sha256"])


def test_the_python_check_accepts_a_pack_and_refuses_a_changed_one(tmp_path: Path) -> None:
    (check,) = code_blocks(section(AUDIT, "## Checking the hash"), "python")
    path, _ = write_pack(tmp_path, AWKWARD)

    subprocess.run(["python3", "-c", check], cwd=tmp_path, check=True)
    path.write_bytes(path.read_bytes().replace("Zoë".encode(), b"Zoe"))
    refused = subprocess.run(["python3", "-c", check], cwd=tmp_path, capture_output=True)
    assert refused.returncode != 0
    assert b"AssertionError" in refused.stderr


def test_the_shell_check_prints_the_packs_hash(tmp_path: Path) -> None:
    (check,) = code_blocks(section(AUDIT, "## Checking the hash"), "sh")
    _, digest = write_pack(tmp_path, AWKWARD)

    printed = subprocess.run(
        ["sh", "-c", check], cwd=tmp_path, check=True, capture_output=True, text=True
    )
    assert printed.stdout.split() == [digest, "-"]


def test_the_commands_are_ones_the_parser_takes() -> None:
    (commands,) = code_blocks(section(AUDIT, "## The commands"), "sh")
    parser = _parser()
    for line in commands.splitlines():
        argv = shlex.split(line.replace(".venv/bin/casework ", ""))
        concrete = [
            {"ID": "42", "NAME": "kyc", "WHEN": "2026-11-01", "FILE": "out.json"}.get(arg, arg)
            for arg in argv
            if arg not in ("[--output", "FILE]")
        ]
        parser.parse_args(concrete)
