"""The constraint names the domain compares refusals to exist, on the tables their comments
name, and the code uses no name server/store/constraints.py does not define."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import asyncpg
import pytest

from server.config import REPO_ROOT
from server.store import constraints

CONSTRAINTS_PY = Path(constraints.__file__)
_TABLE = re.compile(r"^# ([a-z_]+): ")

# A name PostgreSQL reports for a unique violation: a UNIQUE or PRIMARY KEY constraint, an
# exclusion constraint, or a unique index that no constraint owns.
ON_TABLE = """
SELECT c.conrelid::regclass::text
FROM pg_constraint AS c
WHERE c.conname = $1 AND c.contype IN ('u', 'p', 'x')
  AND c.connamespace = 'public'::regnamespace
UNION ALL
SELECT x.indrelid::regclass::text
FROM pg_class AS i
JOIN pg_index AS x ON x.indexrelid = i.oid
WHERE i.relname = $1 AND x.indisunique
  AND i.relnamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conindid = i.oid)
"""


def declared(source: str) -> dict[str, tuple[str, str]]:
    """Each constant of constraints.py: its value, and the table its comment names."""
    lines = source.splitlines()
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)):
            continue
        (target,) = node.targets
        assert isinstance(target, ast.Name)
        assert isinstance(node.value.value, str)
        # The comment block right above the constant; its first line names the table.
        first = node.lineno - 1
        while first > 0 and lines[first - 1].startswith("#"):
            first -= 1
        table = _TABLE.match(lines[first]) if first < node.lineno - 1 else None
        assert table, f"constraints.py:{node.lineno}: the comment above starts with `# <table>: `"
        found[target.id] = (node.value.value, table.group(1))
    return found


DECLARED = declared(CONSTRAINTS_PY.read_text())


def used_in(root: Path) -> dict[str, list[str]]:
    """Each `constraints.X` the code under `root` reads, with where."""
    used: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "constraints"
            ):
                where = f"{path.relative_to(root)}:{node.lineno}"
                used.setdefault(node.attr, []).append(where)
    return used


@pytest.mark.parametrize("constant", sorted(DECLARED))
async def test_each_name_is_on_its_table(owner_conn: asyncpg.Connection, constant: str) -> None:
    name, table = DECLARED[constant]

    assert [row[0] for row in await owner_conn.fetch(ON_TABLE, name)] == [table]


def test_every_name_the_code_uses_is_defined() -> None:
    used = used_in(REPO_ROOT / "server")

    assert set(used) <= set(DECLARED), {k: v for k, v in used.items() if k not in DECLARED}
    # And every name defined is used: one the code no longer compares to is clutter.
    assert set(used) == set(DECLARED)


def test_the_scans_read_what_they_claim(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from server.store import constraints\nconstraints.NOPE\n")
    assert declared("# some_table: why\n# more why\nX = 'x_name'\n") == {
        "X": ("x_name", "some_table")
    }
    with pytest.raises(AssertionError):
        declared("X = 'x_name'\n")
    assert used_in(tmp_path) == {"NOPE": ["a.py:2"]}
