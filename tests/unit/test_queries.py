"""Named queries: `-- name:` blocks parsed from the SQL files."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.store.queries import Queries, QueryNotFound, load_queries, parse_queries
from tests.pg import QUERIES_DIR

TWO_QUERIES = """\
-- name: first_query
-- What it does.
SELECT 1;

-- name: second_query
SELECT 2
FROM t;
"""


def test_each_block_is_named_and_trimmed() -> None:
    parsed = parse_queries(TWO_QUERIES, "x.sql")

    assert {name: statement.sql for name, statement in parsed.items()} == {
        "first_query": "-- What it does.\nSELECT 1",
        "second_query": "SELECT 2\nFROM t",
    }
    assert (parsed["first_query"].line, parsed["first_query"].doc) == (1, "What it does.")
    assert (parsed["second_query"].line, parsed["second_query"].doc) == (5, "")


def test_text_before_the_first_name_is_ignored() -> None:
    assert parse_queries("-- header\n" + TWO_QUERIES, "x.sql").keys() == {
        "first_query",
        "second_query",
    }


def test_a_name_defined_twice_in_one_file_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'first_query' is defined twice in x\.sql"):
        parse_queries(TWO_QUERIES + "\n-- name: first_query\nSELECT 3;\n", "x.sql")


def test_a_name_defined_in_two_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text("-- name: shared\nSELECT 1;\n")
    (tmp_path / "b.sql").write_text("-- name: shared\nSELECT 2;\n")

    with pytest.raises(ValueError, match="'shared' is defined in more than one file"):
        load_queries(tmp_path)


def test_an_unknown_name_raises_query_not_found() -> None:
    queries = Queries(QUERIES_DIR)

    with pytest.raises(QueryNotFound):
        queries["no_such_query"]


def test_the_project_queries_load() -> None:
    names = Queries(QUERIES_DIR).names()

    assert names == sorted(names)
    assert {"item_claim_next", "decision_submit", "decision_overturn", "items_upsert"} <= set(names)
