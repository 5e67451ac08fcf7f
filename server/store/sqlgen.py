"""Writes server/store/sql/<file>.py from db/queries/<file>.sql: one symbol per statement.

    python -m server.store.sqlgen          # rewrite the modules
    python -m server.store.sqlgen --check  # exit 1 if they are stale (tests do this too)

Each symbol is a `Query` typed by a keyword-only signature of the statement's parameters,
so `db.fetch(sql.items.ITEM_CLAIM_NEXT, queue=...)` is checked by mypy (a misspelt or a
missing name is an error: tests/unit/test_query_parameters.py proves it) and an editor jumps
from the call to the symbol, whose comment names the file and line and whose docstring is
the statement's header comment.

A symbol is one line, its signature a lambda's (`lambda *, queue, actor: None`: mypy reads
its keyword-only names into `Query`'s ParamSpec, each typed Any), so the modules are as
long as the statements they name; ruff neither formats them nor measures their lines
(pyproject.toml).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from server.store.queries import Statement, parse_queries

REPO_ROOT = Path(__file__).resolve().parents[2]
QUERIES_DIR = REPO_ROOT / "db" / "queries"
SQL_PACKAGE = Path(__file__).resolve().parent / "sql"

_HEADER = (
    '"""{doc}\n\n'
    'Generated from db/queries/{source} by `python -m server.store.sqlgen`: do not edit.\n"""\n'
)


def _docstring(statement: Statement) -> str:
    body = statement.doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if body.endswith('"'):  # a quote just before the closing three
        body = body[:-1] + '\\"'
    return f'"""{body}\n"""\n' if "\n" in body else f'"""{body}"""\n'


def _symbol(statement: Statement) -> str:
    names = ", ".join(statement.parameters)
    signature = f"lambda *, {names}: None" if names else "lambda: None"
    return (
        f"# db/queries/{statement.source}:{statement.line}\n"
        f'{statement.name.upper()} = Query("{statement.name}", {signature})\n'
        + (_docstring(statement) if statement.doc else "")
    )


def render_module(source: str, statements: list[Statement]) -> str:
    header = _HEADER.format(
        doc=f"The statements of db/queries/{source}, as symbols.", source=source
    )
    imports = "from __future__ import annotations\n\nfrom server.store.queries import Query\n"
    return f"{header}\n{imports}\n" + "\n".join(_symbol(statement) for statement in statements)


def render_package(modules: list[str]) -> str:
    imports = "".join(f"    {module},\n" for module in modules)
    names = "".join(f'    "{module}",\n' for module in modules)
    header = _HEADER.format(
        doc="The statements of db/queries/*.sql, one module per file.", source="*.sql"
    )
    return f"{header}\nfrom server.store.sql import (\n{imports})\n\n__all__ = [\n{names}]\n"


def render(queries_dir: Path = QUERIES_DIR) -> dict[str, str]:
    """File name under server/store/sql -> its text."""
    files: dict[str, str] = {}
    for path in sorted(queries_dir.glob("*.sql")):
        statements = list(parse_queries(path.read_text(), path.name).values())
        files[f"{path.stem}.py"] = render_module(path.name, statements)
    files["__init__.py"] = render_package([name.removesuffix(".py") for name in sorted(files)])
    return files


def stale(queries_dir: Path = QUERIES_DIR, package: Path = SQL_PACKAGE) -> list[str]:
    """The modules that differ from what the .sql files would generate, or should not exist."""
    wanted = render(queries_dir)
    present = {path.name for path in package.glob("*.py")} if package.exists() else set()
    differ = [
        name
        for name, text in wanted.items()
        if not (package / name).exists() or (package / name).read_text() != text
    ]
    return sorted(differ + sorted(present - set(wanted)))


def write(queries_dir: Path = QUERIES_DIR, package: Path = SQL_PACKAGE) -> None:
    wanted = render(queries_dir)
    package.mkdir(exist_ok=True)
    for path in package.glob("*.py"):
        if path.name not in wanted:
            path.unlink()
    for name, text in wanted.items():
        (package / name).write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only report stale modules")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        for name in names:
            print(f"stale: server/store/sql/{name}", file=sys.stderr)
        return 1 if names else 0
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
