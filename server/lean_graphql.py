"""The lean path: a POST of a trusted document, answered without Strawberry's HTTP view.

A trusted document was parsed and validated once, at start-up, with every rule a request
has (server/graphql/documents/manifest.py). Running it needs none of what Strawberry's view
and its per-request extension do first (read and parse the request twice over, build an
execution context, enter four hooks, parse and validate through caches). This route reads
the body, resolves the caller as the general path does (server/graphql_http.py: the same
function), calls graphql-core's `execute` on the pre-validated document with Strawberry's
schema and execution context class, and does what the general path's extension does around
an operation (server/graphql/operation.py): the access line and metrics, the replica rule,
the errors' codes and logging (`report_errors`), the masking, the sub-response's status and
headers, and the answer shaped and encoded as Strawberry's view does.

Everything else goes to the general path unchanged, with the body already read: another
document, a document's text where none is trusted, a stream or multipart request, a GET,
a subscription, a request the documents refuse, a websocket. `takes_lean_path` is the one
place that decides. CASEWORK_LEAN_PATH=0 sends everything to the general path.
"""

from __future__ import annotations

from inspect import isawaitable
from typing import TYPE_CHECKING, Any, cast

from graphql import ExecutionResult, GraphQLError, execute
from graphql import OperationType as GraphQLOperationType
from starlette._utils import get_route_path
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry import Schema
from strawberry.execution import optimized_is_awaitable
from strawberry.http import GraphQLHTTPResponse
from strawberry.types.graphql import OperationType

from server.config_documents import DocumentSettings
from server.graphql import observe, wire_json
from server.graphql.documents.requests import DocumentRefusal, ResolvedRequest, resolve_request
from server.graphql.operation import (
    MaskUnexpectedErrors,
    is_unexpected,
    keep_on_primary,
    result_extensions,
)
from server.graphql.schema import report_errors
from server.graphql.strawberry_internals import asks_for_a_stream, graphql_schema_of
from server.graphql_http import answer_observed, request_context
from server.http_limits import replay
from server.observability import tracing

if TYPE_CHECKING:
    from server.app import CaseworkGraphQL

# Where both HTTP paths of GraphQL answer.
GRAPHQL_PATH = "/graphql"

# What the lean path runs: queries and mutations (a subscription streams: general path).
_LEAN_OPERATIONS = {
    GraphQLOperationType.QUERY: OperationType.QUERY,
    GraphQLOperationType.MUTATION: OperationType.MUTATION,
}


def takes_lean_path(
    *,
    enabled: bool,
    method: str,
    json_body: bool,
    streamed: bool,
    resolved: ResolvedRequest | DocumentRefusal | None,
) -> OperationType | None:
    """The type of the operation the lean path runs for this request; None: the general
    path answers it.

    enabled: CASEWORK_LEAN_PATH and no tracing (spans wrap every resolver, which only the
    general path does). method, json_body (Content-Type application/json), streamed (an
    Accept header asking for multipart or SSE): as the request came. resolved: what
    resolve_request made of the body (None: not a JSON object).
    """
    if not enabled or method != "POST" or not json_body or streamed:
        return None
    if not isinstance(resolved, ResolvedRequest) or resolved.trusted is None:
        return None
    operations = resolved.trusted.operations
    name = resolved.operation_name
    if name is None:
        # graphql-core runs the only operation of a document when none is named.
        found = next(iter(operations.values())) if len(operations) == 1 else None
    else:
        found = operations.get(name)
    return None if found is None else _LEAN_OPERATIONS.get(found)


def _is_json(content_type: bytes) -> bool:
    """`application/json`, with or without parameters such as a charset."""
    return content_type.partition(b";")[0].strip().lower() == b"application/json"


async def _read_body(receive: Receive) -> tuple[bytes, Message | None]:
    """The whole body, and the message that ended it early (a disconnect) if one did."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


class LeanGraphQL:
    """The ASGI app for HTTP requests to /graphql, in front of the general view (`general`,
    a CaseworkGraphQL: its runtime, schema, documents and responses are the ones used)."""

    def __init__(self, general: CaseworkGraphQL, documents: DocumentSettings) -> None:
        self.general = general
        self.mode = documents.mode
        self.enabled = documents.lean_path and not tracing.enabled()
        schema = cast(Schema, general.schema)
        self.schema = graphql_schema_of(schema)
        self.executor_class = schema.execution_context_class
        self.masking = MaskUnexpectedErrors(should_mask_error=is_unexpected)
        # Requests the lean path answered (tests and benchmarks read it).
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] != "http" or scope["method"] != "POST":
            # takes_lean_path would say no (its first test): the body stays unread.
            await self.general(scope, receive, send)
            return
        content_type = accept = None
        for name, value in scope["headers"]:
            # The first of each, as Starlette and Strawberry read them.
            if name == b"content-type" and content_type is None:
                content_type = value
            elif name == b"accept" and accept is None:
                accept = value
        body, ended = await _read_body(receive)
        resolved: ResolvedRequest | DocumentRefusal | None = None
        json_body = content_type is not None and _is_json(content_type)
        if ended is None and json_body:
            try:
                data = wire_json.loads(body)
            except ValueError:
                data = None
            if isinstance(data, dict):
                resolved = resolve_request(data, self.general.documents, self.mode)
        operation_type = takes_lean_path(
            enabled=self.enabled,
            method=scope["method"],
            json_body=json_body,
            streamed=accept is not None
            and asks_for_a_stream(self.general, {"accept": accept.decode("latin-1")}),
            resolved=resolved,
        )
        if operation_type is None or not isinstance(resolved, ResolvedRequest):
            # The general path reads the body again from here, as if it were the first.
            queued: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
            if ended is not None:
                queued = [{**queued[0], "more_body": True}, ended]
            await self.general(scope, replay(queued, receive), send)
            return
        self.answered += 1
        await answer_observed(
            scope,
            receive,
            send,
            lambda: self._run(Request(scope, receive), resolved, operation_type),
        )

    async def _run(
        self, request: Request, resolved: ResolvedRequest, operation_type: OperationType
    ) -> Response:
        general = self.general
        sub_response = await general.get_sub_response(request)
        context = await request_context(general.runtime, request, sub_response, dev=general.dev)
        trusted = resolved.trusted
        # A POST never goes on without a caller (request_context answers 401 first).
        assert trusted is not None
        assert context is not None
        observe.begin_operation(trusted.text, trusted.document, resolved.operation_name)
        keep_on_primary(context, operation_type)
        try:
            result = execute(
                self.schema,
                trusted.document,
                context_value=context,
                variable_values=resolved.variables,
                operation_name=resolved.operation_name,
                executor_class=self.executor_class,
                is_awaitable=cast(Any, optimized_is_awaitable),
                operation_extensions=resolved.extensions,
            )
            if isawaitable(result):
                result = await result
        except Exception as error:
            # As Strawberry turns an exception of execution itself into an error.
            result = ExecutionResult(None, [GraphQLError(str(error), original_error=error)])
        assert isinstance(result, ExecutionResult)
        answer: GraphQLHTTPResponse = {"data": result.data}
        if result.errors:
            report_errors(result.errors, context)
            answer["errors"] = [error.formatted for error in self.masking.masked(result.errors)]
        extensions = result_extensions(context)
        if extensions:
            answer["extensions"] = extensions
        response: Response = general.create_response(answer, sub_response)
        return response


class GraphQLFirst:
    """The innermost middleware: HTTP requests to /graphql go straight to the lean route's
    app, past Starlette's exception middleware and router, which do nothing for it. The
    router would match the same route (`Route("/graphql", lean)`: every method, no path
    parameters) and call the same app with the same scope; the exception middleware's
    handlers answer Starlette's HTTPException, which neither the lean route nor
    Strawberry's view raises (they answer their refusals themselves), and pass anything
    else on to the server-error middleware, as an exception raised here reaches it. The
    middleware outside (request ids, CORS, the body limit) still wrap it."""

    def __init__(self, app: ASGIApp, *, graphql: ASGIApp) -> None:
        self.app = app
        self.graphql = graphql

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and get_route_path(scope) == GRAPHQL_PATH:
            # What the router's match puts in the scope for this route.
            scope["endpoint"] = self.graphql
            scope["path_params"] = {}
            await self.graphql(scope, receive, send)
            return
        await self.app(scope, receive, send)
