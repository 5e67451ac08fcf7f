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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from graphql import (
    ASTValidationRule,
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    parse,
    specified_rules,
)
from strawberry.schema.base import BaseSchema

from server.graphql import guards
from server.graphql.documents.ids import PREFIX, document_id, hash_of
from server.graphql.operation import MAX_TOKENS, validation_rules
from server.graphql.strawberry_internals import graphql_schema_of

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


# Apollo's persisted query manifest (the second shape the module's docstring names).
APOLLO_FORMAT = "apollo-persisted-query-manifest"

# The documents found valid, by the schema's SDL and then by id (load_manifests says why).
_CHECKED: dict[str, dict[str, TrustedDocument]] = {}


def built_in_manifests() -> list[Path]:
    return sorted(BUILT_IN.glob("*.json"))


def load_manifests(paths: Sequence[Path], schema: BaseSchema) -> TrustedDocuments:
    """The built-in manifests and the operator's `paths`, parsed and validated against
    `schema` with the limits and rules of a production request (whatever --dev says: a
    document an operator trusts must also run where introspection is off).

    Raises ManifestError, one line naming the file and the document, at the first problem.
    """
    rules = (*specified_rules, *validation_rules(dev=False))
    graphql_schema = graphql_schema_of(schema)
    # Validating the built-in documents takes about a second; every application a process
    # builds (the tests build hundreds) has the same schema, so each text is checked once.
    checked = _CHECKED.setdefault(schema.as_str(), {})
    documents: list[TrustedDocument] = []
    for path in (*built_in_manifests(), *paths):
        for identifier, text in _entries(path):
            found = checked.get(identifier)
            if found is None or found.text != text:
                found = checked[identifier] = _trusted(
                    path, identifier, text, graphql_schema, rules
                )
            documents.append(found)
    return TrustedDocuments(documents)


def checked_document(text: str, schema: BaseSchema) -> TrustedDocument:
    """One text checked as a manifest's entry is (ManifestError when it would be refused):
    for a tool that writes a manifest and keeps only what a server would load."""
    rules = (*specified_rules, *validation_rules(dev=False))
    return _trusted(Path("<text>"), document_id(text), text, graphql_schema_of(schema), rules)


def _trusted(
    path: Path,
    identifier: str,
    text: str,
    schema: GraphQLSchema,
    rules: tuple[type[ASTValidationRule], ...],
) -> TrustedDocument:
    def refused(problem: str) -> ManifestError:
        return ManifestError(f"{path}: {_label(identifier, text)}: {_one_line(problem)}")

    if document_id(text) != identifier:
        raise refused(f"the id is not the SHA-256 of its text (which is {document_id(text)})")
    try:
        document = parse(text, max_source_length=guards.MAX_DOCUMENT_CHARS, max_tokens=MAX_TOKENS)
        guards.refuse_empty_selections(document)
    except GraphQLError as error:
        raise refused(error.message) from None
    errors = guards.validate_cached(schema, None, document, rules, True)
    if errors:
        raise refused(errors[0].message)
    return TrustedDocument(identifier, text, document, _operations(document))


def _entries(path: Path) -> Iterator[tuple[str, str]]:
    """(id, text) of every entry of a manifest, the id as `sha256:<hex>`."""
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ManifestError(f"{path}: cannot be read: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ManifestError(f"{path}: not a JSON manifest: {_one_line(str(error))}") from None
    if isinstance(content, dict) and content.get("format") == APOLLO_FORMAT:
        yield from _apollo_entries(path, content)
        return
    if not isinstance(content, dict):
        raise ManifestError(
            f"{path}: expected a JSON object of id to document text, or {APOLLO_FORMAT}"
        )
    for key, text in content.items():
        if not isinstance(text, str):
            raise ManifestError(f"{path}: {key}: the document text is not a string")
        yield _with_prefix(key), text


def _apollo_entries(path: Path, content: dict[str, object]) -> Iterator[tuple[str, str]]:
    if content.get("version") != 1:
        raise ManifestError(
            f"{path}: {APOLLO_FORMAT} version {content.get('version')!r}: expected 1"
        )
    operations = content.get("operations")
    if not isinstance(operations, list):
        raise ManifestError(f"{path}: {APOLLO_FORMAT} without a list of operations")
    for number, entry in enumerate(operations, start=1):
        identifier = entry.get("id") if isinstance(entry, dict) else None
        body = entry.get("body") if isinstance(entry, dict) else None
        if not isinstance(identifier, str) or not isinstance(body, str):
            raise ManifestError(f"{path}: operation {number}: expected a string id and body")
        yield _with_prefix(identifier), body


def _with_prefix(identifier: str) -> str:
    """A bare hex hash (Apollo's, Relay's) as the `sha256:` id it stands for."""
    if hash_of(identifier) is None and hash_of(PREFIX + identifier) is not None:
        return PREFIX + identifier
    return identifier


def _label(identifier: str, text: str) -> str:
    """The document as an operator finds it: its operation names, and its id."""
    try:
        parsed = parse(text, no_location=True, max_source_length=guards.MAX_DOCUMENT_CHARS)
        names = [
            definition.name.value
            for definition in parsed.definitions
            if isinstance(definition, OperationDefinitionNode) and definition.name is not None
        ]
    except GraphQLError:
        names = []
    return f"{', '.join(names)} ({identifier})" if names else identifier


def _operations(document: DocumentNode) -> dict[str | None, OperationType]:
    return {
        None if definition.name is None else definition.name.value: definition.operation
        for definition in document.definitions
        if isinstance(definition, OperationDefinitionNode)
    }


def _one_line(message: str) -> str:
    return " ".join(message.split())
