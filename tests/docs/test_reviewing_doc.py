"""docs/reviewing.md (the guide), docs/reviewing-reference.md and docs/reviewing-bulk-actions.md
(the reference): their GraphQL is valid against the schema, and the reference's table of
timeline kinds names every kind there is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from graphql import GraphQLSchema, TypeDefinitionNode, parse, validate

from server.config import REPO_ROOT
from server.domain.timeline.events import TimelineKind
from server.graphql.schema import build_schema
from tests.docs.helpers import code_blocks, section

REVIEWING_GUIDE = REPO_ROOT / "docs" / "reviewing.md"
REVIEWING_REFERENCE = REPO_ROOT / "docs" / "reviewing-reference.md"
BULK_REFERENCE = REPO_ROOT / "docs" / "reviewing-bulk-actions.md"
PAGES = [REVIEWING_GUIDE, REVIEWING_REFERENCE, BULK_REFERENCE]
_KIND_CELL = re.compile(r"^\| ((?:`[A-Z_]+`(?:, )?)+) \|", re.MULTILINE)


def assert_valid(schema: GraphQLSchema, block: str) -> None:
    document = parse(block)
    if all(isinstance(d, TypeDefinitionNode) for d in document.definitions):
        # An excerpt of the schema: every type it shows is one the schema has.
        for definition in document.definitions:
            assert isinstance(definition, TypeDefinitionNode)
            assert schema.get_type(definition.name.value) is not None, definition.name
        return
    assert validate(schema, document) == [], block


SECTIONS_WITH_GRAPHQL = [
    *(
        (REVIEWING_GUIDE, heading)
        for heading in (
            "## A reviewer's day",
            "## A manager's day",
            "## Reading an item's story",
            "## Notes",
            "## Second review (four-eyes before the effect)",
            "## Assignment and lease limits",
            "## Holds",
            "## Due times and overdue items",
            "## Bulk actions",
            "## QA sampling",
        )
    ),
    (BULK_REFERENCE, "## The mutations"),
]


@pytest.mark.parametrize(
    ("page", "heading"),
    [
        pytest.param(page, heading, id=f"{page.name} {heading}")
        for page, heading in SECTIONS_WITH_GRAPHQL
    ],
)
def test_each_graphql_example_is_valid_against_the_schema(page: Path, heading: str) -> None:
    schema = build_schema()._schema
    blocks = code_blocks(section(page, heading), "graphql")

    assert blocks
    for block in blocks:
        assert_valid(schema, block)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_graphql_block_of_each_page_is_valid_against_the_schema(page: Path) -> None:
    schema = build_schema()._schema

    for block in code_blocks(page.read_text(), "graphql"):
        assert_valid(schema, block)


def test_the_kinds_table_names_every_kind() -> None:
    table = section(REVIEWING_REFERENCE, "## The item timeline").split("\n### ", 1)[0]
    named = {kind.strip("`") for cell in _KIND_CELL.findall(table) for kind in cell.split(", ")}

    assert named == {kind.name for kind in TimelineKind}
