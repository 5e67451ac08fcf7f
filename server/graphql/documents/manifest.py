"""Manifests of trusted documents, loaded and validated once at start-up.

A manifest is a JSON file in one of two shapes:
- an object mapping each id to its text: `{"sha256:<hex>": "query Me { me { user } }"}`
  (the shape GraphQL Code Generator's and Relay's persisted-document outputs take; an id
  without the `sha256:` prefix is read as a bare hex hash);
- Apollo's persisted query manifest: `{"format": "apollo-persisted-query-manifest",
  "version": 1, "operations": [{"id": "<hex>", "name": ..., "type": ..., "body": ...}]}`.

Every entry's id must be the hash of its text, and every text must parse and validate
against the schema with the limits every request has. The first problem stops the start
with one line naming the file and the document (ManifestError).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from graphql import DocumentNode, OperationType

from server.graphql.documents.ids import PREFIX, document_id

# The manifests that ship with Casework: the console's and the clients' documents.
BUILT_IN = Path(__file__).resolve().parent / "manifests"


class ManifestError(ValueError):
    """A manifest that cannot be used; its message is one line naming the file and entry."""


@dataclass(frozen=True, eq=False)
class TrustedDocument:
    id: str
    text: str
    # Parsed once; validated once against the schema.
    document: DocumentNode
    # Each operation's type by its name (None for the one anonymous operation).
    operations: Mapping[str | None, OperationType]


class TrustedDocuments:
    """The documents of every manifest, by id and by text."""

    def __init__(self, documents: Iterable[TrustedDocument] = ()) -> None:
        self._by_id: dict[str, TrustedDocument] = {}
        self._by_text: dict[str, TrustedDocument] = {}
        for document in documents:
            self._by_id[document.id] = document
            self._by_text[document.text] = document

    def by_id(self, identifier: str) -> TrustedDocument | None:
        return self._by_id.get(identifier)

    def by_text(self, text: str) -> TrustedDocument | None:
        return self._by_text.get(text)

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[TrustedDocument]:
        return iter(self._by_id.values())


def _manifest_files(paths: Iterable[Path]) -> Iterator[Path]:
    """The built-in manifests, then the files named."""
    yield from sorted(BUILT_IN.glob("*.json"))
    yield from paths


def _entries(path: Path) -> Iterator[tuple[str, str]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ManifestError(f"{path}: cannot be read as JSON: {error}") from None
    if isinstance(data, dict) and data.get("format") == "apollo-persisted-query-manifest":
        for operation in data.get("operations") or ():
            yield str(operation.get("id")), str(operation.get("body"))
    elif isinstance(data, dict):
        yield from ((str(key), str(value)) for key, value in data.items())
    else:
        raise ManifestError(f"{path}: expected a JSON object")


# Each file's documents once checked, by the file's path, size and change time: a process
# that builds several applications (the tests, the benchmarks) checks a manifest once.
_checked: dict[tuple[Path, int, int], list[TrustedDocument]] = {}


def load_manifests(paths: Iterable[Path], schema: object) -> TrustedDocuments:
    """The built-in manifests' documents and those of `paths`, each parsed and validated
    against `schema` (a Strawberry schema) with the limits and rules every request has."""
    found: list[TrustedDocument] = []
    for path in _manifest_files(paths):
        try:
            stat = path.stat()
        except OSError as error:
            raise ManifestError(f"{path}: cannot be read: {error.strerror}") from None
        key = (path, stat.st_size, stat.st_mtime_ns)
        if key not in _checked:
            _checked[key] = list(_checked_documents(path, schema))
        found.extend(_checked[key])
    return TrustedDocuments(found)


def _checked_documents(path: Path, schema: object) -> Iterator[TrustedDocument]:
    from graphql import GraphQLError, OperationDefinitionNode, parse, specified_rules, validate

    from server.graphql import guards
    from server.graphql.operation import MAX_TOKENS, validation_rules
    from server.graphql.strawberry_internals import graphql_schema_of

    graphql_schema = graphql_schema_of(schema)
    rules = (*specified_rules, *validation_rules(dev=False))
    for key, text in _entries(path):
        identifier = key if key.startswith(PREFIX) else PREFIX + key
        if identifier != document_id(text):
            raise ManifestError(f"{path}: {key} is not the SHA-256 of its text")
        try:
            document = parse(
                text, max_tokens=MAX_TOKENS, max_source_length=guards.MAX_DOCUMENT_CHARS
            )
        except GraphQLError as error:
            raise ManifestError(f"{path}: {key}: {error.message}") from None
        errors = validate(graphql_schema, document, rules)
        if errors:
            raise ManifestError(f"{path}: {key}: {errors[0].message}")
        operations = {
            (d.name.value if d.name else None): d.operation
            for d in document.definitions
            if isinstance(d, OperationDefinitionNode)
        }
        yield TrustedDocument(identifier, text, document, operations)
