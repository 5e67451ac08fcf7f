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

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from graphql import DocumentNode, OperationType

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
