"""Test modules import from helpers, never from one another: what two suites share lives in a
helpers module (or a conftest fixture), so a test module can move, split or go without
breaking another, and each runs on its own under `-k` or on an xdist worker."""

from __future__ import annotations

import ast
from pathlib import Path

from server.config import REPO_ROOT

TESTS = REPO_ROOT / "tests"


def is_test_module(name: str) -> bool:
    return name.rsplit(".", 1)[-1].startswith("test_")


def module_of(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def imported_modules(source: str, module: str) -> list[tuple[int, str]]:
    """Every module an import statement in `source` names, anywhere in it, with its line:
    `from a.b import c` names a.b and a.b.c (c may be a module)."""
    package = module.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return sorted(found)


def imports_of_test_modules(root: Path) -> list[str]:
    """`file:line imports module` for each import of a test_*.py module below `root`."""
    problems: list[str] = []
    for path in sorted(root.rglob("*.py")):
        module = module_of(path, root.parent)
        for line, imported in imported_modules(path.read_text(), module):
            if is_test_module(imported):
                problems.append(f"{path.relative_to(root.parent)}:{line} imports {imported}")
    return problems


def test_no_module_of_the_suite_imports_a_test_module() -> None:
    assert imports_of_test_modules(TESTS) == []


def test_the_check_finds_each_form_of_import(tmp_path: Path) -> None:
    suite = tmp_path / "tests" / "live"
    suite.mkdir(parents=True)
    (suite / "helpers.py").write_text("X = 1\n")
    (suite / "test_a.py").write_text("Y = 2\n")
    (suite / "test_b.py").write_text(
        "from tests.live.helpers import X\n"
        "from tests.live.test_a import Y\n"
        "from tests.live import test_a\n"
        "import tests.live.test_a\n"
        "from .test_a import Y as Z\n"
        "def later() -> None:\n"
        "    from . import test_a\n"
    )

    assert imports_of_test_modules(tmp_path / "tests") == [
        "tests/live/test_b.py:2 imports tests.live.test_a",
        "tests/live/test_b.py:3 imports tests.live.test_a",
        "tests/live/test_b.py:4 imports tests.live.test_a",
        "tests/live/test_b.py:5 imports tests.live.test_a",
        "tests/live/test_b.py:7 imports tests.live.test_a",
    ]
