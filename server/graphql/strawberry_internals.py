"""What Casework relies on inside Strawberry below its documented API, in one place.

- Two private steps of the graphql-transport-ws handler, which has no hook for a refused
  document: `_handle_pre_execution_error` (Strawberry closes the whole socket, 4400, for some
  refusals that are one operation's mistake) and `_send_result_stream` (the parser cache and
  the token limiter parse inside an extension hook, so Strawberry lets their syntax error
  escape instead of returning it). `RefusingTransportWSHandler` overrides both, and only
  they, and hands the refusal to `refuse_before_execution` and `refuse_escaped_syntax_error`,
  which server/graphql/websocket.py implements.
- The exceptions Strawberry raises, outside any GraphQL error, for a document with no
  operation it can run (`PRE_EXECUTION_REFUSALS`): over HTTP it answers them 400 itself;
  inside a stream (a websocket) they arrive as the original error of a pre-execution error,
  and are the client's mistake there too (server/graphql/codes.py).
- The HTTP view's private `_get_stream_transport_from_headers` (`asks_for_a_stream`), for the
  fast path of a plain JSON POST in server/app.py.
- A schema's graphql-core schema, `Schema._schema` (`graphql_schema_of`), which Strawberry
  keeps private: the lean resolvers, the cached validation and the string guards walk it.
- The module-global `convert_arguments` that Strawberry's resolver wrapper (`get_arguments`)
  calls, which server/graphql/argument_conversion.py replaces with a planned equivalent that
  mirrors `convert_argument`'s branches.

pyproject.toml names the Strawberry versions this is known to work with;
tests/unit/test_strawberry_internals.py reads Strawberry's source and fails on an upgrade that
renames, moves or stops calling any of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from graphql import GraphQLError, GraphQLSchema, GraphQLSyntaxError
from strawberry.exceptions import MissingQueryError
from strawberry.http.base import BaseView
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.schema.schema import StreamResult
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.types.execution import PreExecutionError

ContextT = TypeVar("ContextT")
RootValueT = TypeVar("RootValueT")

# No operation to run: an operationName the document does not define (or no operation at
# all), an operation type the transport does not take, no query.
PRE_EXECUTION_REFUSALS: tuple[type[Exception], ...] = (
    CannotGetOperationTypeError,
    InvalidOperationTypeError,
    MissingQueryError,
)

# The handler's private steps overridden below.
OVERRIDDEN_STEPS = frozenset({"_send_result_stream", "_handle_pre_execution_error"})


class RefusingTransportWSHandler(BaseGraphQLTransportWSHandler[ContextT, RootValueT]):
    """Strawberry's graphql-transport-ws handler, with a document refused before it runs
    handed to the two methods below: one operation's refusal, never the socket's."""

    async def refuse_before_execution(
        self, operation: Operation[ContextT, RootValueT], errors: list[GraphQLError]
    ) -> None:
        """Errors Strawberry returned before execution (parse, validation, no operation):
        already through Schema.process_errors, so coded and counted."""
        raise NotImplementedError

    async def refuse_escaped_syntax_error(
        self, operation: Operation[ContextT, RootValueT], error: GraphQLSyntaxError
    ) -> None:
        """A syntax error raised inside an extension hook: nothing has seen it yet."""
        raise NotImplementedError

    async def _send_result_stream(
        self, operation: Operation[ContextT, RootValueT], result_source: StreamResult
    ) -> None:
        try:
            await super()._send_result_stream(operation, result_source)
        except GraphQLSyntaxError as error:
            await self.refuse_escaped_syntax_error(operation, error)

    async def _handle_pre_execution_error(
        self, operation: Operation[ContextT, RootValueT], result: PreExecutionError
    ) -> None:
        assert result.errors
        await self.refuse_before_execution(operation, result.errors)


def asks_for_a_stream(view: BaseView[Any], headers: Mapping[str, str]) -> bool:
    """Whether the request's Accept header asks for a streamed answer (multipart or SSE)."""
    return view._get_stream_transport_from_headers(headers) is not None


def graphql_schema_of(schema: Any) -> GraphQLSchema:
    """The graphql-core schema a Strawberry schema built and executes against."""
    built: GraphQLSchema = schema._schema
    return built
