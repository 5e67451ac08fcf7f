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
from collections.abc import Iterator
from pathlib import Path

from graphql import OperationType

from server.graphql.documents.ids import document_id
from server.graphql.documents.manifest import ManifestError, checked_document
from server.graphql.schema import build_schema

HERE = Path(__file__).resolve().parent
RUNS_LEAN = frozenset({OperationType.QUERY, OperationType.MUTATION})


def string_constants(folder: Path) -> Iterator[str]:
    for module in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield node.value


def trusted_texts(folder: Path = HERE) -> list[str]:
    """The texts among the constants that a manifest may hold (server/graphql/documents/
    manifest.py checks each as it would at start-up) and that hold a query or mutation."""
    schema = build_schema()
    found: dict[str, None] = {}
    for text in string_constants(folder):
        if "{" not in text or text in found:
            continue
        try:
            document = checked_document(text, schema)
        except ManifestError:
            continue
        if set(document.operations.values()) & RUNS_LEAN:
            found[text] = None
    return list(found)


def write_manifest(path: Path) -> Path:
    path.write_text(json.dumps({document_id(text): text for text in trusted_texts()}))
    return path
