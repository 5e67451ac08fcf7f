"""`extensions.code` on every error, set while the original error is still known.

MaskErrors (MaskUnexpectedErrors in server/graphql/operation.py) replaces an unexpected error
by an anonymous one, in its on_operation exit and, for streams, in on_stream_result. The
code must be on the error before that, and on every error, however it arose.

`Schema.process_errors` is the one place that sees them all, before any masking: Strawberry
calls it with each result's errors as they arise (executed operations, pre-execution errors,
each result of a subscription, before on_stream_result). A SchemaExtension could not: an
error raised while an extension hook runs (ParserCache parses in on_parse, so every syntax
error; a limiter that raises) becomes a result only after every on_operation hook has
exited. tests/api/test_error_codes.py proves both orders.

So CaseworkSchema.process_errors calls `code_errors` first; MaskUnexpectedErrors keeps the
code when it masks.
"""

from __future__ import annotations

from collections.abc import Iterable

from graphql import GraphQLError
from starlette.status import HTTP_503_SERVICE_UNAVAILABLE

from server.graphql.codes import RETRY_AFTER_SECONDS, ClientError, ErrorCode, code_of, with_code
from server.graphql.context import Context


def code_errors(errors: Iterable[GraphQLError], context: object) -> list[ErrorCode]:
    """Sets each error's code (kept if it has one); returns the codes, in order.

    An UNAVAILABLE error of an HTTP request makes its response a 503 with Retry-After, set
    on the sub-response its Context holds (`context`: the operation's context value, None
    when there is none). A socket's errors stay in-band.
    """
    codes = []
    for error in errors:
        code = code_of(error)
        if (error.extensions or {}).get("code") != code.value:
            with_code(error, code)
        if isinstance(error.original_error, ClientError) and error.original_error.details:
            error.extensions = {**error.original_error.details, **(error.extensions or {})}
        codes.append(code)
    if (
        ErrorCode.UNAVAILABLE in codes
        and isinstance(context, Context)
        and context.response is not None
    ):
        context.response.status_code = HTTP_503_SERVICE_UNAVAILABLE
        context.response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return codes
