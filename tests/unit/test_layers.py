"""Dependencies point one way, graphql -> events -> domain -> store, the feature families
build on the review loop and not on each other, and the side rooms (effects, the worker)
stay apart: checked by import-linter, with proof that each contract breaks when a violating
import appears."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from server.config import REPO_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


CONTRACTS = (
    "Layers: graphql -> events -> domain -> store",
    "The domain imports no web framework",
    "The review loop imports no other feature family",
    "The side families do not know each other",
    "The timeline and the measures read no side family",
    "The shared kernel imports no feature family",
    "The GraphQL side families do not know each other",
    "The domain does not import effects, the worker, the app or the CLI",
    "Effects do not import GraphQL",
    "Observability is a leaf",
    "The sign-in routes import neither GraphQL nor the app",
    "Only privacy's keys and sealing use a cipher",
    "The MCP server imports neither GraphQL nor the app",
    "The intake imports neither GraphQL nor the app",
)

# One import that each contract forbids, as (module file, line appended, the edge reported).
VIOLATIONS = {
    CONTRACTS[0]: ("store/errors.py", "import server.domain.model", "server.store.errors"),
    CONTRACTS[1]: (
        "domain/review/evidence.py",
        "import starlette",
        "server.domain.review.evidence",
    ),
    # The core may import the overdue pass, and nothing else of the exceptions package.
    CONTRACTS[2]: (
        "domain/review/leases.py",
        "import server.domain.exceptions.actions",
        "server.domain.review.leases -> server.domain.exceptions.actions",
    ),
    CONTRACTS[3]: (
        "domain/controls/holds.py",
        "import server.domain.quality.qa",
        "server.domain.controls.holds -> server.domain.quality.qa",
    ),
    CONTRACTS[4]: (
        "domain/timeline/notes.py",
        "import server.domain.controls.holds",
        "server.domain.timeline.notes -> server.domain.controls.holds",
    ),
    CONTRACTS[5]: (
        "domain/parsing.py",
        "import server.domain.review.queues",
        "server.domain.parsing -> server.domain.review.queues",
    ),
    CONTRACTS[6]: (
        "graphql/controls/bulk.py",
        "import server.graphql.quality.types",
        "server.graphql.controls.bulk -> server.graphql.quality.types",
    ),
    CONTRACTS[7]: ("domain/text.py", "import server.worker", "server.domain.text -> server.worker"),
    CONTRACTS[8]: (
        "effects/handlers.py",
        "import server.graphql.schema",
        "server.effects.handlers -> server.graphql.schema",
    ),
    CONTRACTS[9]: (
        "observability/context.py",
        "import server.store.database",
        "server.observability.context -> server.store.database",
    ),
    CONTRACTS[10]: (
        "web/pages.py",
        "import server.graphql.codes",
        "server.web.pages -> server.graphql.codes",
    ),
    # A third module with a cipher of its own: decryption would no longer be in one place.
    CONTRACTS[11]: (
        "domain/privacy/reading.py",
        "import cryptography.fernet",
        "server.domain.privacy.reading -> cryptography",
    ),
    CONTRACTS[12]: (
        "mcp/results.py",
        "import server.graphql.errors",
        "server.mcp.results -> server.graphql.errors",
    ),
    CONTRACTS[13]: (
        "intake/sources.py",
        "import server.graphql.errors",
        "server.intake.sources -> server.graphql.errors",
    ),
}


def lint_imports(
    config: Path, cwd: Path, *, python_path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if python_path is not None:
        # Ahead of the editable install, so the copy is the `server` that gets analysed.
        env["PYTHONPATH"] = str(python_path)
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(config)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_project_keeps_every_contract() -> None:
    result = lint_imports(REPO_ROOT / "pyproject.toml", REPO_ROOT)

    assert result.returncode == 0, result.stdout + result.stderr
    for name in CONTRACTS:
        assert f"{name} KEPT" in result.stdout, result.stdout
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout


def test_each_contract_breaks_on_the_import_it_forbids(tmp_path: Path) -> None:
    shutil.copytree(
        REPO_ROOT / "server", tmp_path / "server", ignore=shutil.ignore_patterns("__pycache__")
    )
    for module, line, _ in VIOLATIONS.values():
        with (tmp_path / "server" / module).open("a") as source:
            source.write(f"\n{line}  # noqa\n")

    result = lint_imports(REPO_ROOT / "pyproject.toml", tmp_path, python_path=tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    for name, (_, _, edge) in VIOLATIONS.items():
        assert f"{name} BROKEN" in result.stdout, result.stdout
        assert edge in result.stdout, result.stdout
    assert f"Contracts: 0 kept, {len(CONTRACTS)} broken." in result.stdout


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    package = tmp_path / "layered"
    for layer, body in {"graphql": "", "domain": "", "store": "import layered.domain\n"}.items():
        (package / layer).mkdir(parents=True)
        (package / layer / "__init__.py").write_text(body)
    (package / "__init__.py").write_text("")
    config = tmp_path / ".importlinter"
    config.write_text(
        "[importlinter]\nroot_package = layered\n\n"
        "[importlinter:contract:layers]\nname = layers\ntype = layers\n"
        "layers =\n    layered.graphql\n    layered.domain\n    layered.store\n"
    )

    result = lint_imports(config, tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "layered.store -> layered.domain" in result.stdout
