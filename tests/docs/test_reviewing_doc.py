"""docs/reviewing.md: its GraphQL is valid against the schema, and its table of timeline
kinds names every kind there is."""

from __future__ import annotations

import re

import pytest
from graphql import TypeDefinitionNode, parse, validate

from server.config import REPO_ROOT
from server.domain.timeline.events import TimelineKind
from server.graphql.schema import build_schema
from tests.docs.helpers import code_blocks, section

REVIEWING_DOC = REPO_ROOT / "docs" / "reviewing.md"
_KIND_CELL = re.compile(r"^\| ((?:`[A-Z_]+`(?:, )?)+) \|", re.MULTILINE)


@pytest.mark.parametrize(
    "heading",
    [
        "## A reviewer's day",
        "## A manager's day",
        "## The item timeline",
        "## Notes",
        "## Second review (four-eyes before the effect)",
        "## Assignment and lease limits",
        "## Holds",
        "## Due times and overdue items",
        "## Bulk actions",
        "## QA sampling",
    ],
)
def test_each_graphql_example_is_valid_against_the_schema(heading: str) -> None:
    schema = build_schema()._schema
    blocks = code_blocks(section(REVIEWING_DOC, heading), "graphql")

    assert blocks
    for block in blocks:
        document = parse(block)
        if all(isinstance(d, TypeDefinitionNode) for d in document.definitions):
            # An excerpt of the schema: every type it shows is one the schema has.
            for definition in document.definitions:
                assert isinstance(definition, TypeDefinitionNode)
                assert schema.get_type(definition.name.value) is not None, definition.name
            continue
        assert validate(schema, document) == [], block


def test_the_kinds_table_names_every_kind() -> None:
    table = section(REVIEWING_DOC, "## The item timeline").split("\n### ", 1)[0]
    named = {kind.strip("`") for cell in _KIND_CELL.findall(table) for kind in cell.split(", ")}

    assert named == {kind.name for kind in TimelineKind}
