"""docs/reviewing.md: its GraphQL is valid against the schema, and its table of timeline
kinds names every kind there is."""

from __future__ import annotations

import re

import pytest
from graphql import parse, validate

from server.config import REPO_ROOT
from server.domain.timeline import TimelineKind
from server.graphql.schema import build_schema
from tests.docs.helpers import code_blocks, section

REVIEWING_DOC = REPO_ROOT / "docs" / "reviewing.md"
_KIND_CELL = re.compile(r"^\| ((?:`[A-Z_]+`(?:, )?)+) \|", re.MULTILINE)


@pytest.mark.parametrize("heading", ["## The item timeline", "## Notes"])
def test_each_graphql_example_is_valid_against_the_schema(heading: str) -> None:
    schema = build_schema()._schema
    blocks = code_blocks(section(REVIEWING_DOC, heading), "graphql")

    assert blocks
    for block in blocks:
        assert validate(schema, parse(block)) == [], block


def test_the_kinds_table_names_every_kind() -> None:
    table = section(REVIEWING_DOC, "## The item timeline").split("\n### ", 1)[0]
    named = {kind.strip("`") for cell in _KIND_CELL.findall(table) for kind in cell.split(", ")}

    assert named == {kind.name for kind in TimelineKind}
