"""Named SQL queries, loaded from db/queries/*.sql, with named parameters.

A file holds blocks that each start with a `-- name: <query_name>` line; the SQL runs to
the next such line. Keeping the SQL in files keeps it reviewable where it lives.

Parameters are written `:item_id`. They are translated once, at load, into asyncpg's `$n`:
each distinct name gets one number, in order of first appearance, so a name used twice is
one value. `::type` is a cast, `:=` is left alone, and nothing inside a string literal, a
quoted identifier or a comment is a parameter; a colon right after a name or a number (an
array slice such as `[1:100]`) is not one either. A positional `$n` is refused: one
statement speaks one language.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, ParamSpec

_NAME_LINE = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")

P = ParamSpec("P")


class QueryNotFound(KeyError):
    pass


class QueryArguments(TypeError):
    """A call named a parameter the statement does not have, or left one out."""


class Query(Generic[P]):
    """A statement's name, typed by a keyword-only signature of its parameters.

    The signature exists for mypy (`Database.fetch` takes `**P.kwargs`); at run time the
    names are checked against the statement as loaded (`Statement.bind`).
    """

    __slots__ = ("name",)

    def __init__(self, name: str, parameters: Callable[P, None]) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Query({self.name!r})"


@dataclass(frozen=True)
class Statement:
    name: str
    sql: str
    """The SQL as PostgreSQL gets it: `$n` in place of the names."""
    parameters: tuple[str, ...]
    """The names, in `$n` order."""
    source: str
    line: int
    doc: str
    """The comment lines that open the block, without their `--`."""

    def bind(self, arguments: Mapping[str, Any]) -> list[Any]:
        try:
            values = [arguments[name] for name in self.parameters]
        except KeyError:
            raise self._mismatch(arguments) from None
        if len(arguments) != len(self.parameters):
            raise self._mismatch(arguments)
        return values

    def _mismatch(self, arguments: Mapping[str, Any]) -> QueryArguments:
        missing = [name for name in self.parameters if name not in arguments]
        unknown = sorted(set(arguments) - set(self.parameters))
        problems = []
        if missing:
            problems.append("missing " + ", ".join(missing))
        if unknown:
            problems.append("unknown " + ", ".join(unknown))
        return QueryArguments(
            f"query {self.name!r} ({self.source}): {'; '.join(problems)}; "
            f"it takes {', '.join(self.parameters) or 'no parameters'}"
        )


def translate(sql: str, source: str = "<sql>") -> tuple[str, tuple[str, ...]]:
    """`:name` parameters to `$n`; returns the SQL and the names in `$n` order."""
    numbers: dict[str, int] = {}
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        nxt = sql[i + 1] if i + 1 < n else ""
        if char == "-" and nxt == "-":
            end = sql.find("\n", i)
            end = n if end < 0 else end
        elif char == "/" and nxt == "*":
            end = sql.find("*/", i + 2)
            if end < 0:
                raise ValueError(f"{source}: unterminated /* comment")
            end += 2
        elif char in "'\"":
            end = i + 1
            while True:
                end = sql.find(char, end)
                if end < 0:
                    raise ValueError(f"{source}: unterminated {char} quote")
                # A doubled quote is an escaped quote inside the literal.
                if sql.startswith(char * 2, end):
                    end += 2
                    continue
                end += 1
                break
        elif char == "$":
            tag = _DOLLAR_TAG.match(sql, i)
            if tag is None:
                raise ValueError(f"{source}: positional parameter in a named query; use :name")
            close = sql.find(tag.group(0), tag.end())
            if close < 0:
                raise ValueError(f"{source}: unterminated {tag.group(0)} quote")
            end = close + len(tag.group(0))
        elif char == ":":
            if nxt in (":", "="):
                end = i + 2
            elif (name := _IDENTIFIER.match(sql, i + 1)) and not _ends_a_word(sql, i):
                number = numbers.setdefault(name.group(0), len(numbers) + 1)
                out.append(f"${number}")
                i = name.end()
                continue
            else:
                end = i + 1
        else:
            end = i + 1
        out.append(sql[i:end])
        i = end
    return "".join(out), tuple(numbers)


def _ends_a_word(sql: str, colon: int) -> bool:
    return colon > 0 and (sql[colon - 1].isalnum() or sql[colon - 1] == "_")


def _doc(body: str) -> str:
    lines = []
    for line in body.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[2:].strip())
    return "\n".join(lines)


def parse_queries(text: str, source: str) -> dict[str, Statement]:
    queries: dict[str, Statement] = {}
    matches = list(_NAME_LINE.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        name = match.group(1)
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice in {source}")
        body = text[match.end() : end].strip().rstrip(";")
        sql, parameters = translate(body, f"{source}: {name}")
        queries[name] = Statement(
            name=name,
            sql=sql,
            parameters=parameters,
            source=source,
            line=text.count("\n", 0, match.start()) + 1,
            doc=_doc(body),
        )
    return queries


def load_queries(queries_dir: Path) -> dict[str, Statement]:
    queries: dict[str, Statement] = {}
    for path in sorted(queries_dir.glob("*.sql")):
        for name, statement in parse_queries(path.read_text(), path.name).items():
            if name in queries:
                raise ValueError(f"query {name!r} is defined in more than one file")
            queries[name] = statement
    return queries


class Queries:
    def __init__(self, queries_dir: Path) -> None:
        self._statements = load_queries(queries_dir)

    def statement(self, name: str) -> Statement:
        try:
            return self._statements[name]
        except KeyError:
            raise QueryNotFound(name) from None

    def __getitem__(self, name: str) -> str:
        """The translated SQL, for PREPARE and EXPLAIN."""
        return self.statement(name).sql

    def names(self) -> list[str]:
        return sorted(self._statements)
