"""The GraphQL documents the API tests send, as a manifest of trusted documents.

Every string constant in the API tests' modules that is a valid GraphQL document with a
query or a mutation is written to one manifest at the start of the session, and the
applications the tests start trust it (CASEWORK_TRUSTED_DOCUMENTS): the requests that send
one of these texts exactly take the lean path where it is on. A document built at run time
(an f-string, a text with a value spliced in) is not trusted and goes the general way,
which the same tests then cover.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    parse,
    specified_rules,
)
from graphql import validate as validate_document

from server.graphql.documents.ids import document_id
from server.graphql.operation import MAX_TOKENS, validation_rules
from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import graphql_schema_of

HERE = Path(__file__).resolve().parent
RUNS_LEAN = frozenset({OperationType.QUERY, OperationType.MUTATION})


def string_constants(folder: Path) -> Iterator[str]:
    for module in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield node.value


def trusted_texts(folder: Path = HERE) -> list[str]:
    """The texts among the constants that parse, validate, and hold a query or mutation."""
    schema = graphql_schema_of(build_schema())
    rules = (*specified_rules, *validation_rules(dev=False))
    found: dict[str, None] = {}
    for text in string_constants(folder):
        if "{" not in text or text in found:
            continue
        try:
            document = parse(text, max_tokens=MAX_TOKENS)
        except GraphQLError:
            continue
        kinds = {
            d.operation for d in document.definitions if isinstance(d, OperationDefinitionNode)
        }
        if kinds & RUNS_LEAN and _valid(schema, document, rules):
            found[text] = None
    return list(found)


def _valid(schema: GraphQLSchema, document: DocumentNode, rules: Sequence[Any]) -> bool:
    try:
        return not validate_document(schema, document, rules)
    except ValueError:
        # Strawberry's depth limiter fails on an empty selection set (`{}`), which the
        # server refuses before validation (guards.py); not a document to trust.
        return False


def write_manifest(path: Path) -> Path:
    path.write_text(json.dumps({document_id(text): text for text in trusted_texts()}))
    return path
