"""The trusted documents the differential test runs: the built-in manifests' documents.

Until the manifests ship (server/graphql/documents/manifests/*.json), the console's own
documents are read from its source, server/console/static/js/operations.js, by evaluating
its template literals' `${NAME}` interpolations; test_manifests.py fails meanwhile, so the
gate cannot pass on the console's documents alone once it matters.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from graphql import OperationDefinitionNode, OperationType, parse

from server.config import REPO_ROOT
from server.graphql.documents.manifest import BUILT_IN

OPERATIONS_JS = REPO_ROOT / "server" / "console" / "static" / "js" / "operations.js"

_CONSTANT = re.compile(r"^(export )?const ([A-Z_]+) = `([^`]*)`;", re.MULTILINE)
_INTERPOLATION = re.compile(r"\$\{([A-Z_]+)\}")


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
    """Each exported document of operations.js by its constant's name, as the console
    sends it: every `${NAME}` replaced by that constant's text."""
    source = OPERATIONS_JS.read_text()
    constants: dict[str, str] = {}
    exported: list[str] = []

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in constants, f"operations.js: ${{{name}}} before its definition"
        return constants[name]

    for match in _CONSTANT.finditer(source):
        is_exported, name, template = match.groups()
        constants[name] = _INTERPOLATION.sub(value_of, template)
        if is_exported:
            exported.append(name)
    assert "`" not in "".join(constants.values())
    return {
        name: constants[name]
        for name in exported
        if constants[name].lstrip().startswith(("query", "mutation", "subscription"))
    }


def _document(name: str, text: str) -> Document:
    operations = [d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]
    assert len(operations) == 1, f"{name}: {len(operations)} operations"
    return Document(name, text, operations[0])


def manifest_files() -> list[str]:
    return sorted(path.name for path in BUILT_IN.glob("*.json"))


@functools.cache
def trusted_documents() -> tuple[Document, ...]:
    """The built-in manifests' documents; the console's until there are manifests."""
    if manifest_files():
        from server.graphql.documents import manifest
        from server.graphql.schema import build_schema

        loaded = manifest.load_manifests((), build_schema())  # type: ignore[attr-defined]
        documents = [
            _document(next(iter(trusted.operations)) or trusted.id[:19], trusted.text)
            for trusted in loaded
        ]
    else:
        documents = [_document(name, text) for name, text in console_texts().items()]
    assert documents, "no trusted documents"
    return tuple(sorted(documents, key=lambda document: document.name))


@functools.cache
def console_document(operation_name: str) -> Document:
    """The console's document of that operation, as the manifests hold it (the clients'
    may share its name): what the arranged outcomes send, so that it is trusted."""
    found = [
        document
        for name, text in console_texts().items()
        if (document := _document(name, text)).operation_name == operation_name
    ]
    assert len(found) == 1, f"{len(found)} console documents named {operation_name}"
    trusted = [d for d in trusted_documents() if d.text.strip() == found[0].text.strip()]
    assert trusted, f"the console's {operation_name} is not a trusted document"
    return trusted[0]
