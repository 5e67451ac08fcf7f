"""Named SQL queries, loaded from db/queries/*.sql.

A file holds blocks that each start with a `-- name: <query_name>` line; the SQL runs to
the next such line. Keeping the SQL in files keeps it reviewable where it lives.
"""

from __future__ import annotations

import re
from pathlib import Path

_NAME_LINE = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


class QueryNotFound(KeyError):
    pass


def parse_queries(text: str, source: str) -> dict[str, str]:
    queries: dict[str, str] = {}
    matches = list(_NAME_LINE.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        name = match.group(1)
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice in {source}")
        queries[name] = text[match.end() : end].strip().rstrip(";")
    return queries


def load_queries(queries_dir: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for path in sorted(queries_dir.glob("*.sql")):
        for name, sql in parse_queries(path.read_text(), path.name).items():
            if name in queries:
                raise ValueError(f"query {name!r} is defined in more than one file")
            queries[name] = sql
    return queries


class Queries:
    def __init__(self, queries_dir: Path) -> None:
        self._sql = load_queries(queries_dir)

    def __getitem__(self, name: str) -> str:
        try:
            return self._sql[name]
        except KeyError:
            raise QueryNotFound(name) from None

    def names(self) -> list[str]:
        return sorted(self._sql)
