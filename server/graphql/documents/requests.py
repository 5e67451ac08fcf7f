"""Which document a request names, and whether this server runs it.

A request names its document in one of three ways:
- `documentId: "sha256:<hex>"`, GraphQL over HTTP's persisted documents (a JSON body, or the
  `documentId` parameter of a GET);
- Apollo's `extensions.persistedQuery` (`{"version": 1, "sha256Hash": "<hex>"}`);
- its text, `query`, as any GraphQL request does. Sent with Apollo's hash as well, the text
  must be the hash's (Apollo's clients send both after a PersistedQueryNotFound); nothing
  is registered from a request.

An id this server does not know is PERSISTED_DOCUMENT_NOT_FOUND. With CASEWORK_DOCUMENTS=
trusted, a text that is not a trusted document's is DOCUMENT_NOT_TRUSTED. Both answer 200:
the request is well formed, and GraphQL over HTTP answers a well-formed request sent as
`application/json` with 200 whatever its errors, as Casework answers a document that does
not validate. Malformed parameters are 400 (Strawberry's own wording, so that both request
paths answer alike), and a mutation asked for by GET is 405 (`refused_over_get`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from graphql import OperationType

from server.config_documents import DocumentMode
from server.graphql.codes import ErrorCode
from server.graphql.documents.ids import PREFIX, document_id
from server.graphql.documents.manifest import TrustedDocument, TrustedDocuments

OK = 200
BAD_REQUEST = 400
METHOD_NOT_ALLOWED = 405

# Apollo's clients send the text again on this exact message (or on their own code).
APOLLO_NOT_FOUND_MESSAGE = "PersistedQueryNotFound"
NOT_FOUND_MESSAGE = (
    "No trusted document has this id: send the document's text where the server accepts any "
    "document, or add the document to a manifest (CASEWORK_TRUSTED_DOCUMENTS)."
)
NOT_TRUSTED_MESSAGE = (
    "This server runs trusted documents only, and this text is not one: send the id or "
    "the exact text of a document in its manifests."
)
NO_QUERY_MESSAGE = "No GraphQL query found in the request"
MUTATION_OVER_GET_MESSAGE = "mutations are not allowed when using GET"


@dataclass(frozen=True)
class ResolvedRequest:
    # Set when the request named a trusted document, by id or by its exact text.
    trusted: TrustedDocument | None
    query: str  # the document's text
    variables: dict[str, object] | None
    operation_name: str | None
    extensions: dict[str, object] | None


@dataclass(frozen=True)
class DocumentRefusal:
    code: ErrorCode  # PERSISTED_DOCUMENT_NOT_FOUND, DOCUMENT_NOT_TRUSTED, BAD_REQUEST
    message: str
    status: int  # the HTTP status to answer with


def _bad(message: str) -> DocumentRefusal:
    return DocumentRefusal(ErrorCode.BAD_REQUEST, message, BAD_REQUEST)


def resolve_request(
    data: Mapping[str, object], documents: TrustedDocuments, mode: DocumentMode
) -> ResolvedRequest | DocumentRefusal:
    """`data`: a request's parameters, `variables` and `extensions` already decoded from
    JSON (a POST's body; a GET's query string)."""
    query, variables = data.get("query"), data.get("variables")
    extensions, operation_name = data.get("extensions"), data.get("operationName")
    if not isinstance(query, str | None):
        return _bad("The GraphQL operation's `query` must be a string or null, if provided.")
    if not isinstance(variables, dict | None):
        return _bad("The GraphQL operation's `variables` must be an object or null, if provided.")
    if not isinstance(extensions, dict | None):
        return _bad("The GraphQL operation's `extensions` must be an object or null, if provided.")
    if not isinstance(operation_name, str | None):
        return _bad("The GraphQL operation's `operationName` must be a string or null.")
    named = _named_id(data.get("documentId"), extensions)
    if isinstance(named, DocumentRefusal):
        return named
    identifier, by_apollo = named
    if identifier is not None and query is None:
        trusted = documents.by_id(identifier)
        if trusted is None:
            message = APOLLO_NOT_FOUND_MESSAGE if by_apollo else NOT_FOUND_MESSAGE
            return DocumentRefusal(ErrorCode.PERSISTED_DOCUMENT_NOT_FOUND, message, OK)
        return ResolvedRequest(trusted, trusted.text, variables, operation_name or None, extensions)
    if query is None:
        return _bad(NO_QUERY_MESSAGE)
    if identifier is not None and document_id(query) != identifier:
        return _bad("The document's text is not the one its id names.")
    trusted = documents.by_text(query)
    if trusted is None and mode is DocumentMode.TRUSTED:
        return DocumentRefusal(ErrorCode.DOCUMENT_NOT_TRUSTED, NOT_TRUSTED_MESSAGE, OK)
    return ResolvedRequest(trusted, query, variables, operation_name or None, extensions)


def _named_id(
    named: object, extensions: dict[str, object] | None
) -> tuple[str | None, bool] | DocumentRefusal:
    """The id the request names (None: it names none), and whether Apollo's way named it."""
    if not isinstance(named, str | None):
        return _bad("`documentId` must be a string.")
    persisted = None if extensions is None else extensions.get("persistedQuery")
    if persisted is None:
        return (named or None), False
    if not isinstance(persisted, dict):
        return _bad("`extensions.persistedQuery` must be an object.")
    if persisted.get("version") != 1:
        return _bad("`extensions.persistedQuery.version` must be 1.")
    digest = persisted.get("sha256Hash")
    if not isinstance(digest, str):
        return _bad("`extensions.persistedQuery.sha256Hash` must be a string.")
    apollo_id = PREFIX + digest
    if named and named != apollo_id:
        return _bad("`documentId` and `extensions.persistedQuery` name different documents.")
    return apollo_id, True


def operation_type(trusted: TrustedDocument, operation_name: str | None) -> OperationType | None:
    """The type of the operation a request runs: the named one, or the document's only
    one; None when the name is unknown or a document of several needs one (execution
    then says so, as it would for a text)."""
    if operation_name:
        return trusted.operations.get(operation_name)
    if len(trusted.operations) == 1:
        return next(iter(trusted.operations.values()))
    return None


def refused_over_get(resolved: ResolvedRequest) -> DocumentRefusal | None:
    """GET is safe: a trusted document's mutation by GET is 405 (GraphQL over HTTP)."""
    if resolved.trusted is None:
        return None
    if operation_type(resolved.trusted, resolved.operation_name) is OperationType.MUTATION:
        return DocumentRefusal(ErrorCode.BAD_REQUEST, MUTATION_OVER_GET_MESSAGE, METHOD_NOT_ALLOWED)
    return None
