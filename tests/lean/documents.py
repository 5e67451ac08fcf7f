"""The trusted documents the differential test runs: the built-in manifests' documents
(server/graphql/documents/manifests/*.json), and the console's own by operation name."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from graphql import OperationDefinitionNode, OperationType, parse

from server.graphql.documents.build import console_documents
from server.graphql.documents.manifest import BUILT_IN, load_manifests
from server.graphql.schema import build_schema


@dataclass(frozen=True)
class Document:
    # The operation's name (the console's constant's name when read from operations.js).
    name: str
    text: str
    operation: OperationDefinitionNode

    @property
    def is_mutation(self) -> bool:
        return self.operation.operation is OperationType.MUTATION

    @property
    def operation_name(self) -> str | None:
        return self.operation.name.value if self.operation.name else None


def console_texts() -> dict[str, str]:
    """The console's documents by operation name, read from operations.js as the manifest
    builder reads them (every `${NAME}` filled in)."""
    texts: dict[str, str] = {}
    for text in console_documents():
        name = _document("console", text).operation_name
        assert name is not None, f"console: an unnamed document: {text[:40]}"
        assert name not in texts, f"console: {name} twice"
        texts[name] = text
    return texts


def _document(name: str, text: str) -> Document:
    operations = [d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]
    assert len(operations) == 1, f"{name}: {len(operations)} operations"
    return Document(name, text, operations[0])


def manifest_files() -> list[str]:
    return sorted(path.name for path in BUILT_IN.glob("*.json"))


@functools.cache
def trusted_documents() -> tuple[Document, ...]:
    """The built-in manifests' documents."""
    loaded = load_manifests((), build_schema())
    documents = [
        _document(next(iter(trusted.operations)) or trusted.id[:19], trusted.text)
        for trusted in loaded
    ]
    assert documents, "no trusted documents"
    return tuple(sorted(documents, key=lambda document: document.name))


@functools.cache
def console_document(operation_name: str) -> Document:
    """The console's document of that operation, as the manifests hold it (the clients'
    may share its name): what the arranged outcomes send, so that it is trusted."""
    text = console_texts()[operation_name]
    trusted = [d for d in trusted_documents() if d.text.strip() == text.strip()]
    assert trusted, f"the console's {operation_name} is not a trusted document"
    return trusted[0]
