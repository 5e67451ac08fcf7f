"""Dependencies point one way, graphql -> events -> domain -> store, checked by import-linter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from server.config import REPO_ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(config: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(config)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_project_keeps_its_layers() -> None:
    result = lint_imports(REPO_ROOT / "pyproject.toml", REPO_ROOT)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Layers: graphql -> events -> domain -> store KEPT" in result.stdout
    assert "The domain imports no web framework KEPT" in result.stdout


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
