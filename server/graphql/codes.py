"""`errors[].extensions.code`: what a client can do about an error that is not a union member.

Expected domain failures are members of each mutation's result union (`StaleLease`, …).
Everything that ends up in `errors[]` instead, over HTTP or a websocket, carries one of these
codes, so a client can tell "you may not" from "try again in a second" without reading
messages. docs/security.md has the table.
"""

from __future__ import annotations

import enum
from typing import Any

from graphql import GraphQLError

from server.graphql.strawberry_internals import PRE_EXECUTION_REFUSALS
from server.store.errors import is_unavailable

# What a 503 tells a client to wait before it tries again.
RETRY_AFTER_SECONDS = 2


class ErrorCode(enum.StrEnum):
    # No valid bearer token (missing, unknown, revoked or expired): sign in again.
    UNAUTHENTICATED = "UNAUTHENTICATED"
    # The token is valid but may not do this, or the thing is outside its queues.
    FORBIDDEN = "FORBIDDEN"
    # The request is malformed: syntax, unknown fields, wrong argument types or values.
    BAD_REQUEST = "BAD_REQUEST"
    # Too large, too deep or too costly: send a smaller request.
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    # A `documentId` (or Apollo's persisted query hash) the server does not know: send the
    # document's text where the server accepts any document, or register it.
    PERSISTED_DOCUMENT_NOT_FOUND = "PERSISTED_DOCUMENT_NOT_FOUND"
    # CASEWORK_DOCUMENTS=trusted and the text sent is not a trusted document.
    DOCUMENT_NOT_TRUSTED = "DOCUMENT_NOT_TRUSTED"
    # The database cannot be reached: retry after `Retry-After` seconds.
    UNAVAILABLE = "UNAVAILABLE"
    # The server's fault. The client sees "Unexpected error."; the operator's log has it all.
    INTERNAL = "INTERNAL"


class ClientError(Exception):
    """A refusal the client caused and may read; never masked."""

    def __init__(
        self,
        message: str,
        code: ErrorCode = ErrorCode.BAD_REQUEST,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        # More for `extensions` beside the code (a too-broad search's `narrowBy`).
        self.details = details or {}


def code_of(error: GraphQLError) -> ErrorCode:
    """The code of an error as GraphQL reports it, before any masking."""
    given = (error.extensions or {}).get("code")
    if isinstance(given, str) and given in ErrorCode.__members__:
        return ErrorCode(given)
    original = error.original_error
    if original is None or isinstance(original, GraphQLError):
        # Syntax, validation, coercion of variables: the document is the client's.
        return ErrorCode.BAD_REQUEST
    if isinstance(original, ClientError):
        return original.code
    if isinstance(original, PRE_EXECUTION_REFUSALS):
        # No operation to run (an operationName the document lacks): as over HTTP.
        return ErrorCode.BAD_REQUEST
    if is_unavailable(original):
        return ErrorCode.UNAVAILABLE
    return ErrorCode.INTERNAL


def with_code(error: GraphQLError, code: ErrorCode) -> GraphQLError:
    """Sets `extensions.code` on the error (in place: GraphQLError keeps its extensions)."""
    error.extensions = {**(error.extensions or {}), "code": code.value}
    return error


def error_body(code: ErrorCode, message: str) -> dict[str, Any]:
    """A GraphQL-shaped JSON body for a refusal made before any operation ran (401, 413…).

    No `data` key: GraphQL over HTTP leaves it out when nothing was executed.
    """
    return {"errors": [{"message": message, "extensions": {"code": code.value}}]}
