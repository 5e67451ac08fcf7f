"""Which document a GraphQL request over HTTP asks for: by id, or by its text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from server.config_documents import DocumentMode
from server.graphql.codes import ErrorCode
from server.graphql.documents.ids import PREFIX
from server.graphql.documents.manifest import TrustedDocument, TrustedDocuments


@dataclass(frozen=True)
class ResolvedRequest:
    # Set when the request named a trusted document, by id or by its exact text.
    trusted: TrustedDocument | None
    query: str
    variables: dict[str, object] | None
    operation_name: str | None
    extensions: dict[str, object] | None


@dataclass(frozen=True)
class DocumentRefusal:
    code: ErrorCode
    message: str
    status: int


def _requested_id(data: Mapping[str, object]) -> str | None:
    """`documentId`, or Apollo's `extensions.persistedQuery.sha256Hash` as an id."""
    identifier = data.get("documentId")
    if isinstance(identifier, str):
        return identifier
    extensions = data.get("extensions")
    persisted = extensions.get("persistedQuery") if isinstance(extensions, dict) else None
    digest = persisted.get("sha256Hash") if isinstance(persisted, dict) else None
    return PREFIX + digest if isinstance(digest, str) else None


def resolve_request(
    data: Mapping[str, object], documents: TrustedDocuments, mode: DocumentMode
) -> ResolvedRequest | DocumentRefusal:
    query, variables = data.get("query"), data.get("variables")
    operation_name, extensions = data.get("operationName"), data.get("extensions")
    if (
        not isinstance(query, str | None)
        or not isinstance(variables, dict | None)
        or not isinstance(operation_name, str | None)
        or not isinstance(extensions, dict | None)
    ):
        return DocumentRefusal(ErrorCode.BAD_REQUEST, "malformed GraphQL request", 400)
    identifier = _requested_id(data) if query is None else None
    if identifier is not None:
        trusted = documents.by_id(identifier)
        if trusted is None:
            return DocumentRefusal(
                ErrorCode.PERSISTED_DOCUMENT_NOT_FOUND, "PersistedQueryNotFound", 200
            )
    elif query is None:
        return DocumentRefusal(ErrorCode.BAD_REQUEST, "No GraphQL query found in the request", 400)
    else:
        trusted = documents.by_text(query)
        if trusted is None and mode is DocumentMode.TRUSTED:
            return DocumentRefusal(
                ErrorCode.DOCUMENT_NOT_TRUSTED, "this document is not a trusted document", 400
            )
    return ResolvedRequest(
        trusted,
        trusted.text if trusted is not None else query or "",
        variables,
        operation_name,
        extensions,
    )
